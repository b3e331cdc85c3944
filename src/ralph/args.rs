//! `/unipi:ralph <sub> [args]`: its subcommands parsed (words split as a shell would, quotes
//! kept together), its help, and the completions of its argument (the subcommand, then a loop's
//! name where one is asked for).

use super::state::Options;
use crate::bridge::{Completion, Refusal};

/// What `/unipi:ralph` with no (or an unknown) subcommand says.
pub(crate) const HELP: &str = "/unipi:ralph start <name|path> [--max-iterations N] \
     [--items-per-iteration N] [--reflect-every N] · stop · resume <name> · status · list \
     [--archived] · cancel <name> · archive <name> · clean [--all] · nuke [--yes]";

/// The subcommands, with what their completion says.
const SUBCOMMANDS: [(&str, &str); 9] = [
    (
        "start",
        "Start a loop over a task file: <name|path> [--max-iterations N] …",
    ),
    ("stop", "Stop the running loop"),
    ("resume", "Resume a paused loop: <name>"),
    ("status", "The running loop and the others"),
    ("list", "Every loop [--archived]"),
    (
        "cancel",
        "Delete a loop's state (its task file stays): <name>",
    ),
    (
        "archive",
        "Move a loop's files to .unipi/ralph/archive: <name>",
    ),
    (
        "clean",
        "Delete the state of finished loops [--all: their task files too]",
    ),
    ("nuke", "Delete .unipi/ralph and every loop in it [--yes]"),
];

/// One `/unipi:ralph` invocation.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Sub {
    Start { target: String, options: Options },
    Stop,
    Resume(String),
    Status,
    List { archived: bool },
    Cancel(String),
    Archive(String),
    Clean { all: bool },
    Nuke { yes: bool },
}

/// Splits `args` into words; `"…"` and `'…'` keep spaces inside one.
fn words(args: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quote = None;
    for c in args.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.get_or_insert_default().push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                word.get_or_insert_default();
            }
            (None, c) if c.is_whitespace() => words.extend(word.take()),
            (None, c) => word.get_or_insert_default().push(c),
        }
    }
    words.extend(word);
    words
}

/// Parses the arguments of `/unipi:ralph`.
pub(crate) fn parse(args: &str) -> Result<Sub, Refusal> {
    let words = words(args);
    let Some((sub, rest)) = words.split_first() else {
        return Err(Refusal::new(HELP));
    };
    let name = |what: &str| -> Result<String, Refusal> {
        match rest {
            [name] => Ok(name.clone()),
            [] => Err(Refusal::new(format!(
                "/unipi:ralph {what} needs a loop's name"
            ))),
            _ => Err(Refusal::new(format!(
                "/unipi:ralph {what} takes one loop's name, not {rest:?}"
            ))),
        }
    };
    let flag = |flag: &str| -> Result<bool, Refusal> {
        match rest {
            [] => Ok(false),
            [word] if word == flag => Ok(true),
            _ => Err(Refusal::new(format!(
                "/unipi:ralph {sub} takes only {flag}, not {rest:?}"
            ))),
        }
    };
    Ok(match sub.as_str() {
        "start" => parse_start(rest)?,
        "stop" | "status" if !rest.is_empty() => {
            return Err(Refusal::new(format!(
                "/unipi:ralph {sub} takes no arguments"
            )));
        }
        "stop" => Sub::Stop,
        "status" => Sub::Status,
        "resume" => Sub::Resume(name("resume")?),
        "cancel" => Sub::Cancel(name("cancel")?),
        "archive" => Sub::Archive(name("archive")?),
        "list" => Sub::List {
            archived: flag("--archived")?,
        },
        "clean" => Sub::Clean {
            all: flag("--all")?,
        },
        "nuke" => Sub::Nuke {
            yes: flag("--yes")?,
        },
        other => {
            return Err(Refusal::new(format!(
                "unknown subcommand {other:?}: {HELP}"
            )));
        }
    })
}

/// `start <name|path> [--max-iterations N] [--items-per-iteration N] [--reflect-every N]`.
fn parse_start(rest: &[String]) -> Result<Sub, Refusal> {
    let mut target = None;
    let mut options = Options::default();
    let mut words = rest.iter();
    while let Some(word) = words.next() {
        let slot = match word.as_str() {
            "--max-iterations" => &mut options.max_iterations,
            "--items-per-iteration" => &mut options.items_per_iteration,
            "--reflect-every" => &mut options.reflect_every,
            flag if flag.starts_with("--") => {
                return Err(Refusal::new(format!("unknown option {flag:?}: {HELP}")));
            }
            _ if target.is_some() => {
                return Err(Refusal::new(format!(
                    "/unipi:ralph start takes one name or path, then options; {word:?} is extra"
                )));
            }
            _ => {
                target = Some(word.clone());
                continue;
            }
        };
        let value = words.next().map(String::as_str).unwrap_or_default();
        *slot = value.parse().map_err(|_| {
            Refusal::new(format!(
                "{word} needs a whole number (0 or more), not {value:?}"
            ))
        })?;
    }
    let target = target.ok_or_else(|| {
        Refusal::new("/unipi:ralph start needs a loop's name or a task file's path")
    })?;
    Ok(Sub::Start { target, options })
}

/// Completions for what is typed after `/unipi:ralph ` (each replaces the whole argument):
/// the subcommands, then the loops' `names` after one that takes a name. Nothing once what is
/// typed is complete, so Enter sends it.
pub(crate) fn complete(typed: &str, names: impl FnOnce() -> Vec<String>) -> Vec<Completion> {
    let words: Vec<&str> = typed.split_whitespace().collect();
    let ends_in_space = typed.ends_with(char::is_whitespace);
    match (words.as_slice(), ends_in_space) {
        ([], _) | ([_], false) => {
            let typed = words.first().copied().unwrap_or_default();
            if SUBCOMMANDS.iter().any(|(sub, _)| *sub == typed) {
                return Vec::new();
            }
            SUBCOMMANDS
                .iter()
                .filter(|(sub, _)| sub.starts_with(typed))
                .map(|(sub, about)| Completion {
                    value: (*sub).to_owned(),
                    label: (*sub).to_owned(),
                    description: Some((*about).to_owned()),
                })
                .collect()
        }
        ([sub], true) | ([sub, _], false) if takes_name(sub) => {
            let typed = words.get(1).copied().unwrap_or_default();
            let names = names();
            if names.iter().any(|name| name == typed) {
                return Vec::new();
            }
            names
                .into_iter()
                .filter(|name| name.starts_with(typed))
                .map(|name| Completion {
                    value: format!("{sub} {name}"),
                    label: name.clone(),
                    description: Some(format!("Ralph loop {name}")),
                })
                .collect()
        }
        _ => Vec::new(),
    }
}

fn takes_name(sub: &str) -> bool {
    matches!(sub, "resume" | "cancel" | "archive" | "start")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subcommands_parse_with_their_options_and_bad_ones_say_why() {
        assert_eq!(
            parse("start 'my task' --max-iterations 7 --reflect-every 2"),
            Ok(Sub::Start {
                target: "my task".to_owned(),
                options: Options {
                    max_iterations: 7,
                    items_per_iteration: 0,
                    reflect_every: 2
                }
            })
        );
        assert_eq!(
            parse("start docs/t.md --items-per-iteration 3"),
            Ok(Sub::Start {
                target: "docs/t.md".to_owned(),
                options: Options {
                    items_per_iteration: 3,
                    ..Options::default()
                }
            })
        );
        assert_eq!(parse("resume demo"), Ok(Sub::Resume("demo".to_owned())));
        assert_eq!(parse("list --archived"), Ok(Sub::List { archived: true }));
        assert_eq!(parse("clean"), Ok(Sub::Clean { all: false }));
        assert_eq!(parse("nuke --yes"), Ok(Sub::Nuke { yes: true }));
        assert_eq!(parse(" stop "), Ok(Sub::Stop));
        let refused = |args: &str| {
            parse(args)
                .err()
                .map(Refusal::into_text)
                .unwrap_or_default()
        };
        assert_eq!(refused(""), HELP);
        assert!(refused("jump").starts_with("unknown subcommand \"jump\""));
        assert_eq!(refused("resume"), "/unipi:ralph resume needs a loop's name");
        assert_eq!(
            refused("start x --max-iterations many"),
            "--max-iterations needs a whole number (0 or more), not \"many\""
        );
        assert!(refused("start x y").contains("\"y\" is extra"));
        assert!(refused("start --reflect-every 2").contains("needs a loop's name"));
        assert!(refused("nuke now").contains("takes only --yes"));
    }

    #[test]
    fn completions_offer_subcommands_then_loop_names_and_stop_when_complete() {
        let values = |typed: &str| -> Vec<String> {
            complete(typed, || vec!["demo".to_owned(), "docs".to_owned()])
                .into_iter()
                .map(|c| c.value)
                .collect()
        };
        assert_eq!(values("").len(), 9);
        assert_eq!(values("st"), ["start", "stop", "status"]);
        assert!(values("stop").is_empty());
        assert_eq!(values("resume "), ["resume demo", "resume docs"]);
        assert_eq!(values("cancel dem"), ["cancel demo"]);
        assert!(values("cancel demo").is_empty());
        assert!(values("status x").is_empty());
        assert!(values("start demo --max").is_empty());
    }
}
