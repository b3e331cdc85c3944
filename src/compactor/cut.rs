//! Where the branch is cut: which conversation entries are "live" (what Pi would send the model
//! now: after the last compaction, from its `firstKeptEntryId` on), and which of them are
//! summarized and which kept. The kept tail starts at a user turn (the last N turns); a tail that
//! is too big for its budget is rescued by moving the cut forward to any entry that is not a tool
//! result (a result must never lose its call), and when even that does not fit, everything is
//! summarized. Pure index arithmetic over the branch; sizes come from [`entry_chars`].

use super::entries::{Block, EntryKind, Role, SessionEntry};
use super::refusal::Refusal;

/// What an image counts as, in characters (Pi estimates about 1,200 tokens per image).
pub(crate) const IMAGE_CHARS: usize = 4_800;

/// The live part of a branch.
#[derive(Debug, Clone)]
pub struct LiveBranch<'a> {
    /// Conversation entries (messages other than system ones, custom messages), in order.
    pub entries: Vec<&'a SessionEntry>,
    /// The last compaction's summary, when there is one.
    pub previous_summary: Option<&'a str>,
    /// The last compaction's `firstKeptEntryId` is not on the branch (or kept nothing), so only
    /// what follows the compaction is live.
    pub orphan: bool,
    /// `suffix_chars[i]`: characters of `entries[i..]` ([`entry_chars`]), one extra 0 at the end.
    /// Computed once: every size question of the cut is then a subtraction.
    pub suffix_chars: Vec<usize>,
}

/// A chosen cut: `live[..index]` is summarized, `live[index..]` kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    pub index: usize,
    /// The first kept entry's id; empty when nothing is kept (Pi then keeps nothing either).
    pub first_kept_entry_id: String,
    pub compact_all: bool,
    /// The tail budget moved the cut forward past the kept turns' start.
    pub tail_rescued: bool,
}

/// How many user turns the kept tail starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeepTurns {
    /// `keep:N` from the user: respected as given, no tail rescue.
    Explicit(usize),
    /// Chosen by [`smart_keep_turns`]; the tail budget applies.
    Smart(usize),
}

pub fn live_entries(branch: &[SessionEntry]) -> LiveBranch<'_> {
    let compaction = branch
        .iter()
        .enumerate()
        .rev()
        .find_map(|(index, entry)| match &entry.kind {
            EntryKind::Compaction(compaction) => Some((index, compaction)),
            _ => None,
        });
    let (start, previous_summary, orphan) = match compaction {
        None => (0, None, false),
        Some((at, compaction)) => {
            let kept_from = branch[..at]
                .iter()
                .position(|entry| entry.id == compaction.first_kept_entry_id);
            (
                kept_from.unwrap_or(at),
                Some(compaction.summary.as_str()),
                kept_from.is_none(),
            )
        }
    };
    let entries: Vec<&SessionEntry> = branch[start..]
        .iter()
        .filter(|entry| is_conversation(entry))
        .collect();
    LiveBranch {
        suffix_chars: suffix_chars(&entries),
        entries,
        previous_summary,
        orphan,
    }
}

/// The largest number of recent user turns, up to `max_turns`, whose tail fits `tail_budget_chars`
/// while leaving something to summarize; at least one.
pub(crate) fn smart_keep_turns(
    live: &LiveBranch,
    max_turns: usize,
    tail_budget_chars: usize,
) -> usize {
    let users = user_positions(&live.entries);
    (1..=max_turns.max(1))
        .rev()
        .find(|&turns| {
            turns <= users.len()
                && users[users.len() - turns] > 0
                && live.suffix_chars[users[users.len() - turns]] <= tail_budget_chars
        })
        .unwrap_or(1)
}

/// Chooses the cut. `tail_budget_chars` is `None` for an explicit `keep:N`.
pub(crate) fn choose_cut(
    live_part: &LiveBranch,
    keep: KeepTurns,
    tail_budget_chars: Option<usize>,
) -> Result<Cut, Refusal> {
    let live = live_part.entries.as_slice();
    if live.is_empty() {
        return Err(Refusal::NoLiveMessages);
    }
    if live.len() < 2 {
        return Err(Refusal::TooFewMessages);
    }
    let users = user_positions(live);
    if users.is_empty() {
        return Err(Refusal::NoUserMessage);
    }
    let (turns, explicit) = match keep {
        KeepTurns::Explicit(turns) => (turns, true),
        KeepTurns::Smart(turns) => (turns.max(1), false),
    };
    let mut index = if turns == 0 {
        live.len()
    } else {
        users[users.len() - turns.min(users.len())]
    };
    if index == 0 {
        if explicit {
            // The turns asked for are the whole session: nothing is left to summarize.
            return Err(Refusal::NoValidCut);
        }
        index = live.len();
    }
    let mut tail_rescued = false;
    if let (Some(budget), false) = (tail_budget_chars, explicit)
        && index < live.len()
    {
        let suffix = &live_part.suffix_chars;
        if suffix[index] > budget {
            tail_rescued = true;
            index = (index + 1..live.len())
                .find(|&at| suffix[at] <= budget && is_cut_point(live[at]))
                .unwrap_or(live.len());
        }
    }
    let compact_all = index >= live.len();
    Ok(Cut {
        index: index.min(live.len()),
        first_kept_entry_id: if compact_all {
            String::new()
        } else {
            live[index].id.clone()
        },
        compact_all,
        tail_rescued,
    })
}

/// An entry's size in characters as the model sees it (text, thinking, tool call name and
/// arguments, images at a flat [`IMAGE_CHARS`]).
pub fn entry_chars(entry: &SessionEntry) -> usize {
    match &entry.kind {
        EntryKind::Message(message) => message
            .content
            .iter()
            .map(|block| match block {
                Block::Text(text) | Block::Thinking(text) => text.len(),
                Block::ToolCall {
                    name, arguments, ..
                } => name.len() + json_len(arguments),
                Block::Image { .. } => IMAGE_CHARS,
                Block::Other(_) => 0,
            })
            .sum(),
        EntryKind::CustomMessage { text, .. } => text.len(),
        EntryKind::Compaction(compaction) => compaction.summary.len(),
        EntryKind::Other { .. } => 0,
    }
}

pub fn is_user(entry: &SessionEntry) -> bool {
    matches!(&entry.kind, EntryKind::Message(message) if message.role == Role::User)
}

// --- helpers -------------------------------------------------------------------------------

fn is_conversation(entry: &SessionEntry) -> bool {
    match &entry.kind {
        EntryKind::Message(message) => !matches!(message.role, Role::Other(_)),
        EntryKind::CustomMessage { .. } => true,
        _ => false,
    }
}

/// A kept tail may start anywhere but at a tool result, whose call would be summarized away.
fn is_cut_point(entry: &SessionEntry) -> bool {
    !matches!(&entry.kind, EntryKind::Message(message) if message.role == Role::ToolResult)
}

fn user_positions(live: &[&SessionEntry]) -> Vec<usize> {
    live.iter()
        .enumerate()
        .filter(|(_, entry)| is_user(entry))
        .map(|(index, _)| index)
        .collect()
}

/// `suffix[i]` = characters of `live[i..]`; one extra slot (0) for the end.
fn suffix_chars(live: &[&SessionEntry]) -> Vec<usize> {
    let mut suffix = vec![0; live.len() + 1];
    for index in (0..live.len()).rev() {
        suffix[index] = suffix[index + 1] + entry_chars(live[index]);
    }
    suffix
}

/// The length of `value` as JSON, without building the string.
fn json_len(value: &serde_json::Value) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    if value.is_null() {
        return 0;
    }
    let mut counter = Counter(0);
    // Writing to a counter cannot fail; a failure would only undercount.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compactor::entries::{CompactionEntry, Message};

    fn message(id: &str, role: Role, text: &str) -> SessionEntry {
        SessionEntry {
            id: id.into(),
            parent_id: None,
            timestamp: None,
            kind: EntryKind::Message(Message {
                role,
                content: vec![Block::Text(text.into())],
                tool_name: None,
                tool_call_id: None,
                is_error: false,
            }),
        }
    }

    fn u(id: &str) -> SessionEntry {
        message(id, Role::User, "u")
    }
    fn a(id: &str) -> SessionEntry {
        message(id, Role::Assistant, "a")
    }
    fn t(id: &str, chars: usize) -> SessionEntry {
        message(id, Role::ToolResult, &"t".repeat(chars))
    }
    fn compaction(id: &str, first_kept: &str) -> SessionEntry {
        SessionEntry {
            id: id.into(),
            parent_id: None,
            timestamp: None,
            kind: EntryKind::Compaction(CompactionEntry {
                summary: "previous".into(),
                first_kept_entry_id: first_kept.into(),
                tokens_before: 100,
                details: serde_json::Value::Null,
            }),
        }
    }

    fn ids(entries: &[&SessionEntry]) -> Vec<String> {
        entries.iter().map(|entry| entry.id.clone()).collect()
    }

    #[test]
    fn live_entries_honour_the_last_compaction() {
        let system = message("s", Role::Other("system".into()), "prompt");
        let cases: [(Vec<SessionEntry>, &[&str], bool, bool); 4] = [
            (
                vec![system.clone(), u("1"), a("2")],
                &["1", "2"],
                false,
                false,
            ),
            (
                vec![u("1"), a("2"), u("3"), compaction("c", "3"), a("4")],
                &["3", "4"],
                false,
                true,
            ),
            // Orphan: the kept id is gone; only what follows the compaction is live.
            (
                vec![u("1"), compaction("c", "gone"), u("2"), u("3")],
                &["2", "3"],
                true,
                true,
            ),
            (
                vec![
                    u("1"),
                    compaction("c1", "1"),
                    u("2"),
                    compaction("c2", ""),
                    a("3"),
                ],
                &["3"],
                true,
                true,
            ),
        ];
        for (branch, expected, orphan, has_previous) in cases {
            let live = live_entries(&branch);
            assert_eq!(ids(&live.entries), expected);
            assert_eq!(live.orphan, orphan, "{expected:?}");
            assert_eq!(live.previous_summary.is_some(), has_previous);
        }
    }

    fn cut(
        branch: &[SessionEntry],
        keep: KeepTurns,
        budget: Option<usize>,
    ) -> Result<Cut, Refusal> {
        choose_cut(&live_entries(branch), keep, budget)
    }

    fn kept(id: &str, index: usize) -> Cut {
        Cut {
            index,
            first_kept_entry_id: id.into(),
            compact_all: false,
            tail_rescued: false,
        }
    }

    #[test]
    fn cut_cases() {
        let all = |index| Cut {
            index,
            first_kept_entry_id: String::new(),
            compact_all: true,
            tail_rescued: false,
        };
        type Case = (
            Vec<SessionEntry>,
            KeepTurns,
            Option<usize>,
            Result<Cut, Refusal>,
        );
        let cases: [Case; 10] = [
            (
                vec![],
                KeepTurns::Smart(1),
                None,
                Err(Refusal::NoLiveMessages),
            ),
            (
                vec![u("1")],
                KeepTurns::Smart(1),
                None,
                Err(Refusal::TooFewMessages),
            ),
            (
                vec![a("1"), a("2")],
                KeepTurns::Smart(1),
                None,
                Err(Refusal::NoUserMessage),
            ),
            (
                vec![u("1"), a("2"), u("3")],
                KeepTurns::Smart(1),
                None,
                Ok(kept("3", 2)),
            ),
            (
                vec![u("1"), compaction("c", "gone"), u("2"), u("3")],
                KeepTurns::Smart(1),
                None,
                Ok(kept("3", 1)),
            ),
            // The only user message is first: everything is summarized.
            (
                vec![u("1"), a("2"), a("3")],
                KeepTurns::Smart(1),
                None,
                Ok(all(3)),
            ),
            (
                vec![u("1"), a("2"), a("3")],
                KeepTurns::Explicit(1),
                None,
                Err(Refusal::NoValidCut),
            ),
            (
                vec![u("1"), a("2"), u("3"), a("4"), u("5")],
                KeepTurns::Explicit(2),
                None,
                Ok(kept("3", 2)),
            ),
            (
                vec![u("1"), a("2"), u("3")],
                KeepTurns::Explicit(0),
                None,
                Ok(all(3)),
            ),
            (
                vec![u("1"), a("2"), u("3")],
                KeepTurns::Explicit(9),
                None,
                Err(Refusal::NoValidCut),
            ),
        ];
        for (branch, keep, budget, expected) in cases {
            assert_eq!(
                cut(&branch, keep, budget),
                expected,
                "{:?} {keep:?}",
                ids(&branch.iter().collect::<Vec<_>>())
            );
        }
    }

    #[test]
    fn tail_budget_rescues_an_oversized_tail() {
        // u1 a2 u3 a4 t5(100) a6 t7(100) a8
        let branch = vec![
            u("1"),
            a("2"),
            u("3"),
            a("4"),
            t("5", 100),
            a("6"),
            t("7", 100),
            a("8"),
        ];
        let rescued = |budget| cut(&branch, KeepTurns::Smart(1), Some(budget));
        // Fits: the cut stays at the last user turn.
        assert_eq!(rescued(500), Ok(kept("3", 2)));
        // Too big: the cut moves to the first entry whose tail fits and is no tool result.
        let moved = rescued(150).unwrap();
        assert_eq!(
            (moved.first_kept_entry_id.as_str(), moved.tail_rescued),
            ("6", true)
        );
        // Nothing fits (the last entry alone is over budget would need compact-all).
        let none = rescued(0).unwrap();
        assert!(none.compact_all && none.tail_rescued && none.first_kept_entry_id.is_empty());
        // An explicit keep:N ignores the budget.
        assert_eq!(
            cut(&branch, KeepTurns::Explicit(1), Some(0)),
            Ok(kept("3", 2))
        );
    }

    #[test]
    fn smart_keep_takes_the_turns_that_fit() {
        let branch = vec![u("1"), a("2"), u("3"), t("4", 100), u("5"), a("6")];
        let live = live_entries(&branch);
        assert_eq!(smart_keep_turns(&live, 2, 1_000), 2);
        assert_eq!(smart_keep_turns(&live, 2, 10), 1);
        assert_eq!(
            smart_keep_turns(&live, 5, 1_000),
            2,
            "never the turn at index 0"
        );
    }
}
