//! The notifications' footer segments (Unipi's `notify` group): the platforms the last
//! notification went to and how long ago. None before the first notification.

use unipi_widgets::footer::{Align, Form, Icon, Preset, Role, Segment, priority};

use super::dispatch::LastSent;

const NOTIFY: &str = "notify";

/// The segments for the `last` notification sent, at `now_ms`.
pub(super) fn segments(last: Option<&LastSent>, now_ms: u64) -> Vec<Segment> {
    let Some(last) = last else {
        return Vec::new();
    };
    let platforms = if last.platforms.is_empty() {
        "none".to_owned()
    } else {
        last.platforms.join(",")
    };
    vec![
        Segment::new(
            "platforms_enabled",
            priority::MODULE_LOW,
            Align::Right,
            Form::new(format!("ntf {platforms}"), Role::Text),
        )
        .in_group(NOTIFY)
        .from_preset(Preset::Minimal)
        .with_icon(Icon::Notify)
        .described("The platforms the last notification went to"),
        Segment::new(
            "last_sent",
            priority::MODULE_LOW,
            Align::Right,
            Form::new(
                format!("sent {}", ago(now_ms.saturating_sub(last.at_ms))),
                Role::Muted,
            ),
        )
        .in_group(NOTIFY)
        .from_preset(Preset::Minimal)
        .with_icon(Icon::LastSent)
        .described("When the last notification went"),
    ]
}

/// `just now` under a minute, then `4m ago`, `2h ago` (Unipi's words).
pub(super) fn ago(ms: u64) -> String {
    let minutes = ms / 60_000;
    match minutes {
        0 => "just now".to_owned(),
        1..60 => format!("{minutes}m ago"),
        _ => format!("{}h ago", minutes / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_notification_in_words() {
        assert!(segments(None, 0).is_empty());
        let last = LastSent {
            at_ms: 1_000_000,
            platforms: vec!["native".into(), "ntfy".into()],
        };
        let texts = |now| -> Vec<String> {
            segments(Some(&last), now)
                .iter()
                .map(|s| s.forms[0].text())
                .collect()
        };
        assert_eq!(texts(1_000_500), ["ntf native,ntfy", "sent just now"]);
        assert_eq!(
            texts(1_000_000 + 5 * 60_000),
            ["ntf native,ntfy", "sent 5m ago"]
        );
        assert_eq!(texts(1_000_000 + 125 * 60_000)[1], "sent 2h ago");
        let ids: Vec<String> = segments(Some(&last), 0)
            .into_iter()
            .map(|s| s.group)
            .collect();
        assert_eq!(ids, ["notify", "notify"]);
    }
}
