//! The notifications' tab in `/unipi:info`: the platforms on (and what the others still need),
//! what was delivered since start, and the last notification.

use unipi_widgets::dashboard::{InfoGroup, InfoRow};

use super::config::{NotifyConfig, Platform};
use super::dispatch::{LastSent, Tally};

/// The tab, from the config in force, the deliveries since start and the last one, at `now_ms`.
pub(super) fn info_group(
    config: &NotifyConfig,
    tally: Tally,
    last: Option<&LastSent>,
    now_ms: u64,
) -> InfoGroup {
    let on: Vec<&str> = Platform::ALL
        .iter()
        .filter(|platform| config.enabled(**platform))
        .map(|platform| platform.label())
        .collect();
    let mut platforms = InfoRow::new(
        "Platforms",
        if on.is_empty() {
            "none on".to_owned()
        } else {
            format!("{} on", on.join(", "))
        },
    );
    for platform in Platform::ALL {
        if let Some(missing) = config
            .missing(*platform)
            .filter(|_| config.enabled(*platform))
        {
            platforms = platforms.detail(format!("{}: {missing}", platform.label()));
        }
    }
    let last = match last {
        Some(last) if last.platforms.is_empty() => {
            format!(
                "{} · to no platform",
                super::footer::ago(now_ms.saturating_sub(last.at_ms))
            )
        }
        Some(last) => format!(
            "{} · {}",
            super::footer::ago(now_ms.saturating_sub(last.at_ms)),
            last.platforms.join(", ")
        ),
        None => "none yet".to_owned(),
    };
    InfoGroup {
        id: "notify".to_owned(),
        title: "Notifications".to_owned(),
        rows: vec![
            platforms,
            InfoRow::new(
                "Sent",
                format!("{} delivered · {} failed", tally.delivered, tally.failed),
            ),
            InfoRow::new("Last", last),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(group: &InfoGroup) -> Vec<(String, String, Vec<String>)> {
        group
            .rows
            .iter()
            .map(|row| (row.label.clone(), row.value.clone(), row.detail.clone()))
            .collect()
    }

    #[test]
    fn the_tab_names_the_platforms_on_what_they_lack_and_what_was_sent() {
        let mut config = NotifyConfig {
            native: false,
            terminal: true,
            ..NotifyConfig::default()
        };
        config.ntfy.enabled = true;
        config.ntfy.topic = None;
        let tally = Tally {
            delivered: 3,
            failed: 1,
        };
        let last = LastSent {
            at_ms: 1_000_000,
            platforms: vec!["terminal".to_owned(), "ntfy".to_owned()],
        };
        let group = info_group(&config, tally, Some(&last), 1_000_000 + 5 * 60_000);
        assert_eq!(group.id, "notify");
        assert_eq!(
            values(&group),
            [
                (
                    "Platforms".to_owned(),
                    "Terminal, ntfy on".to_owned(),
                    vec!["ntfy: ntfy serverUrl and topic are required".to_owned()]
                ),
                (
                    "Sent".to_owned(),
                    "3 delivered · 1 failed".to_owned(),
                    vec![]
                ),
                (
                    "Last".to_owned(),
                    "5m ago · terminal, ntfy".to_owned(),
                    vec![]
                ),
            ]
        );
        let none = info_group(
            &NotifyConfig {
                native: false,
                terminal: false,
                ..NotifyConfig::default()
            },
            Tally::default(),
            None,
            0,
        );
        assert_eq!(none.rows[0].value, "none on");
        assert_eq!(none.rows[2].value, "none yet");
    }
}
