//! The arguments of `/unipi:compact` and the marker that tags this workbench's own compaction
//! requests. `/unipi:compact [keep:N] [prompt]` becomes a [`Marker`], which travels through Pi in
//! the compaction's custom instructions and comes back in `session_before_compact`, so the hook
//! knows the compaction is ours and what to do once it is done.

use crate::bridge::Refusal;

/// Starts the instructions of every compaction this module asks Pi for.
pub const MARKER: &str = "__unipi_compact__";

/// What this module asked for when it started a compaction, carried through Pi in the
/// compaction's custom instructions: `__unipi_compact__ [auto] [keep:N] [-- follow-up]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Marker {
    /// Keep exactly this many user turns (`keep:N`).
    pub keep: Option<usize>,
    /// Started by auto-compaction (treated like Pi's threshold compaction afterwards).
    pub auto: bool,
    /// Sent as a user message once the compaction is done.
    pub follow_up: Option<String>,
}

/// The most user turns `keep:N` may ask for.
pub(crate) const MAX_KEEP: usize = 50;

impl Marker {
    /// The custom instructions that carry this marker.
    pub(crate) fn to_instructions(&self) -> String {
        let mut text = MARKER.to_owned();
        if self.auto {
            text.push_str(" auto");
        }
        if let Some(keep) = self.keep {
            text.push_str(&format!(" keep:{keep}"));
        }
        if let Some(follow_up) = &self.follow_up {
            text.push_str(" -- ");
            text.push_str(follow_up);
        }
        text
    }

    /// The marker in Pi's custom instructions; `None` when they are not ours.
    pub fn parse(instructions: &str) -> Option<Marker> {
        let rest = instructions.trim_start().strip_prefix(MARKER)?;
        if !(rest.is_empty() || rest.starts_with(char::is_whitespace)) {
            return None;
        }
        let (options, follow_up) = match rest.split_once(" -- ") {
            Some((options, follow_up)) => (options, Some(follow_up)),
            None => (rest.strip_suffix(" --").unwrap_or(rest), None),
        };
        let mut marker = Marker {
            follow_up: follow_up
                .map(str::trim)
                .filter(|text| !text.is_empty())
                .map(str::to_owned),
            ..Marker::default()
        };
        for token in options.split_whitespace() {
            if token == "auto" {
                marker.auto = true;
            } else if let Some(keep) = token.strip_prefix("keep:").and_then(|n| n.parse().ok()) {
                marker.keep = Some(keep);
            }
        }
        Some(marker)
    }
}

/// `/unipi:compact [keep:N] [instructions]`: the marker for the request, or why not.
pub(crate) fn parse_command_args(args: &str) -> Result<Marker, Refusal> {
    let args = args.trim();
    let (first, rest) = args
        .split_once(char::is_whitespace)
        .map_or((args, ""), |(first, rest)| (first, rest.trim()));
    let (keep, follow_up) = match first.strip_prefix("keep:") {
        Some(number) => match number.parse::<usize>() {
            Ok(keep) if (1..=MAX_KEEP).contains(&keep) => (Some(keep), rest),
            _ => {
                return Err(format!(
                    "keep:N takes a number of user turns from 1 to {MAX_KEEP}, got `{first}`"
                )
                .into());
            }
        },
        None => (None, args),
    };
    Ok(Marker {
        keep,
        auto: false,
        follow_up: (!follow_up.is_empty()).then(|| follow_up.to_owned()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_table::check_table;

    #[test]
    fn markers_round_trip_and_foreign_instructions_are_not_ours() {
        let cases = [
            (Marker::default(), "__unipi_compact__"),
            (
                Marker {
                    keep: Some(3),
                    auto: false,
                    follow_up: Some("now run the tests -- all of them".into()),
                },
                "__unipi_compact__ keep:3 -- now run the tests -- all of them",
            ),
            (
                Marker {
                    auto: true,
                    ..Marker::default()
                },
                "__unipi_compact__ auto",
            ),
        ];
        for (marker, text) in cases {
            assert_eq!(marker.to_instructions(), text);
            assert_eq!(Marker::parse(text), Some(marker), "{text}");
        }
        for foreign in ["focus on the parser", "__unipi_compact__x", ""] {
            assert_eq!(Marker::parse(foreign), None, "{foreign:?}");
        }
        assert_eq!(
            Marker::parse("  __unipi_compact__ keep:x bogus --"),
            Some(Marker::default())
        );
    }

    #[test]
    fn command_arguments() {
        let ok = |keep: Option<usize>, follow_up: Option<&str>| {
            Ok(Marker {
                keep,
                auto: false,
                follow_up: follow_up.map(str::to_owned),
            })
        };
        let cases = [
            ("", ok(None, None)),
            ("keep:2", ok(Some(2), None)),
            (
                "keep:1   then fix the bug",
                ok(Some(1), Some("then fix the bug")),
            ),
            ("fix the bug", ok(None, Some("fix the bug"))),
            ("  keep:50 ", ok(Some(50), None)),
        ];
        check_table(cases, |args| parse_command_args(args));
        for bad in ["keep:0", "keep:51", "keep:two go"] {
            let err = parse_command_args(bad).err().unwrap_or_default();
            assert!(err.contains("keep:N"), "{bad}: {err}");
        }
    }
}
