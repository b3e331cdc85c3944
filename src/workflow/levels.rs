//! Tool levels: which of Pi's tools a workflow step may use while it runs. The levels are the
//! original's (`read-only`, `brainstorm`, `write-unipi`, `review`, `full`), with two changes:
//! `full` keeps every tool that was active (the original's list left out grep, find, ls and
//! every extension tool), and every restricted level keeps the tools that only ask or read —
//! the user's `ask_user`, the web readers and `web_search` — since a step that may read may also
//! ask. Where a level says "write only under `.unipi/`" it is enforced, not only asked for: the
//! bridge's tool policy refuses a `write`/`edit` outside it (the original only told the model).

/// How much a workflow step may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ToolLevel {
    ReadOnly,
    Brainstorm,
    WriteUnipi,
    Review,
    Full,
}

/// The folder (in the workspace) that `write` and `edit` are kept inside by the levels that
/// promise it.
pub(crate) const WRITE_ROOT: &str = ".unipi";

/// Tools every restricted level keeps: they ask the user or read, and change nothing.
const ASK_AND_READ: &[&str] = &[
    "ask_user",
    "web_fetch",
    "web_fetch_batch",
    "web_read",
    "web_search",
    "multi_web_content_read",
];

impl ToolLevel {
    pub(crate) fn name(self) -> &'static str {
        match self {
            ToolLevel::ReadOnly => "read-only",
            ToolLevel::Brainstorm => "brainstorm",
            ToolLevel::WriteUnipi => "write-unipi",
            ToolLevel::Review => "review",
            ToolLevel::Full => "full",
        }
    }

    /// Pi's tools this level allows; `None` for `full` (every tool that was active).
    fn builtin(self) -> Option<&'static [&'static str]> {
        match self {
            ToolLevel::ReadOnly => Some(&["read", "grep", "find", "ls"]),
            ToolLevel::Brainstorm => Some(&["read", "grep", "find", "ls", "write", "bash"]),
            ToolLevel::WriteUnipi => Some(&["read", "write", "edit", "grep", "find", "ls"]),
            ToolLevel::Review => Some(&["read", "write", "edit", "grep", "find", "ls", "bash"]),
            ToolLevel::Full => None,
        }
    }

    /// The tools to make active, given the ones active before: `None` leaves them as they are.
    /// Pi ignores names it does not know, so a tool missing here (no web capability) is simply
    /// not offered.
    pub(crate) fn allowed(self, active_before: &[String]) -> Option<Vec<String>> {
        let builtin = self.builtin()?;
        let mut allowed: Vec<String> = builtin.iter().map(|name| (*name).to_owned()).collect();
        allowed.extend(
            ASK_AND_READ
                .iter()
                .filter(|name| active_before.iter().any(|active| active == *name))
                .map(|name| (*name).to_owned()),
        );
        Some(allowed)
    }

    /// The level in words, for the model and the user: what it allows and where it may write.
    pub(crate) fn summary(self) -> &'static str {
        match self {
            ToolLevel::ReadOnly => "read and search only; nothing may change",
            ToolLevel::Brainstorm => {
                "read, search and bash to look around; write only under .unipi/"
            }
            ToolLevel::WriteUnipi => "read and search anything; write and edit only under .unipi/",
            ToolLevel::Review => {
                "read, search and bash to run tests; write and edit only under .unipi/"
            }
            ToolLevel::Full => "every tool",
        }
    }

    /// Whether `write` and `edit` may only touch files under [`WRITE_ROOT`] (enforced by the
    /// bridge's tool policy). Bash, where a level allows it, is not path-checked.
    pub(crate) fn writes_under_unipi_only(self) -> bool {
        matches!(
            self,
            ToolLevel::Brainstorm | ToolLevel::WriteUnipi | ToolLevel::Review
        )
    }

    /// What the model reads when it calls a tool this level does not allow (`{tool}` is filled
    /// in by the bridge).
    pub(crate) fn block_reason(self, command: &str, allowed: &[String]) -> String {
        format!(
            "`{{tool}}` is not available during /{command} (tool level {}: {}). Available \
             tools: {}. Finish this step with them, or ask the user to run a command that allows \
             `{{tool}}`.",
            self.name(),
            self.summary(),
            allowed.join(", ")
        )
    }

    /// What the model reads when it writes outside [`WRITE_ROOT`] (`{tool}` and `{path}` are
    /// filled in by the bridge).
    pub(crate) fn path_reason(self, command: &str) -> String {
        format!(
            "`{{tool}}` of {{path}} is refused during /{command} (tool level {}: {}). Write under \
             {WRITE_ROOT}/ instead, or ask the user to run a command that allows changing that \
             file.",
            self.name(),
            self.summary()
        )
    }

    /// Extra rules for the model about where it may write.
    pub(crate) fn rules(self) -> Option<&'static str> {
        match self {
            ToolLevel::Brainstorm => Some(
                "Write only the design document under `.unipi/docs/specs/` (writes outside \
                 `.unipi/` are refused); use bash only to look around, never to change files.",
            ),
            ToolLevel::WriteUnipi => Some(
                "Write and edit files only under `.unipi/docs/` (writes outside `.unipi/` are \
                 refused); change no code.",
            ),
            ToolLevel::ReadOnly => Some("Change nothing: read, search and answer."),
            ToolLevel::Review => Some(
                "Run tests and read freely; write only the plan's status words and review notes \
                 (writes outside `.unipi/` are refused).",
            ),
            ToolLevel::Full => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_allow_their_tools_and_keep_asking_and_reading() {
        let before: Vec<String> = ["read", "bash", "edit", "write", "ask_user", "bg_run"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            ToolLevel::WriteUnipi.allowed(&before),
            Some(
                ["read", "write", "edit", "grep", "find", "ls", "ask_user"]
                    .map(String::from)
                    .to_vec()
            )
        );
        assert_eq!(
            ToolLevel::ReadOnly.allowed(&[]),
            Some(["read", "grep", "find", "ls"].map(String::from).to_vec())
        );
        assert_eq!(ToolLevel::Full.allowed(&before), None);
        let reason = ToolLevel::ReadOnly.block_reason("unipi:debug", &["read".to_owned()]);
        assert!(
            reason.starts_with(
                "`{tool}` is not available during /unipi:debug (tool level read-only: read and \
                 search only; nothing may change). Available tools: read."
            ),
            "{reason}"
        );
        let reason = ToolLevel::WriteUnipi.path_reason("unipi:plan");
        assert!(
            reason.starts_with(
                "`{tool}` of {path} is refused during /unipi:plan (tool level write-unipi: read \
                 and search anything; write and edit only under .unipi/)."
            ),
            "{reason}"
        );
        assert!(ToolLevel::WriteUnipi.writes_under_unipi_only());
        assert!(
            !ToolLevel::ReadOnly.writes_under_unipi_only()
                && !ToolLevel::Full.writes_under_unipi_only()
        );
    }
}
