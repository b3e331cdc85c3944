//! Tool levels: which of Pi's tools a workflow step may use while it runs. The levels are the
//! original's (`read-only`, `brainstorm`, `write-unipi`, `review`, `full`), with two changes:
//! `full` keeps every tool that was active (the original's list left out grep, find, ls and
//! every extension tool), and every restricted level keeps the tools that only ask or read —
//! the user's `ask_user`, the web readers — since a step that may read may also ask.

/// How much a workflow step may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolLevel {
    ReadOnly,
    Brainstorm,
    WriteUnipi,
    Review,
    Full,
}

/// Tools every restricted level keeps: they ask the user or read, and change nothing.
const ASK_AND_READ: &[&str] = &["ask_user", "web_fetch", "web_fetch_batch", "web_read"];

impl ToolLevel {
    pub fn name(self) -> &'static str {
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
    pub fn allowed(self, active_before: &[String]) -> Option<Vec<String>> {
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

    /// What the model reads when it calls a tool this level does not allow.
    pub fn block_reason(self, command: &str, allowed: &[String]) -> String {
        format!(
            "Tool {{tool}} is not allowed while /{command} runs (tool level {}). Allowed: {}. \
             Finish this step, or ask the user to run a command that allows it.",
            self.name(),
            allowed.join(", ")
        )
    }

    /// Extra rules for the model about where it may write.
    pub fn rules(self) -> Option<&'static str> {
        match self {
            ToolLevel::Brainstorm => Some(
                "Write only the design document under `.unipi/docs/specs/`; use bash only to look \
                 around, never to change files.",
            ),
            ToolLevel::WriteUnipi => {
                Some("Write and edit files only under `.unipi/docs/`; change no code.")
            }
            ToolLevel::ReadOnly => Some("Change nothing: read, search and answer."),
            ToolLevel::Review => Some(
                "Run tests and read freely; write only the plan's status words and review notes.",
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
        assert!(reason.starts_with("Tool {tool} is not allowed while /unipi:debug runs"));
    }
}
