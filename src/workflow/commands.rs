//! The workflow commands: each `/unipi:<step>` with its skill, its tool level, what its argument
//! looks like and what it completes; and the message a command hands the model (the skill text,
//! the arguments, and the documents its `plan:`/`specs:`/`debug:`/`chore:` references name).

use std::path::{Path, PathBuf};

use super::levels::ToolLevel;

/// What a command's argument refers to, for completions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refs {
    Specs,
    Plans,
    Debug,
    Chores,
    Worktrees,
    /// The phases of `MILESTONES.md` (and `all`).
    Phases,
}

impl Refs {
    /// The `<prefix>:` written before a file name, and the folder under `.unipi/docs/`.
    pub(crate) fn prefix_and_folder(self) -> Option<(&'static str, &'static str)> {
        match self {
            Refs::Specs => Some(("specs", "specs")),
            Refs::Plans => Some(("plan", "plans")),
            Refs::Debug => Some(("debug", "debug")),
            Refs::Chores => Some(("chore", "chore")),
            Refs::Worktrees | Refs::Phases => None,
        }
    }
}

/// One workflow command.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WorkflowCommand {
    /// The step's name: the command is `/unipi:<name>` and the skill is `<name>`.
    pub name: &'static str,
    pub level: ToolLevel,
    pub arg_hint: &'static str,
    pub description: &'static str,
    pub completes: Option<Refs>,
}

macro_rules! commands {
    ($($name:literal, $level:ident, $hint:literal, $refs:expr, $what:literal;)*) => {
        /// Every workflow command, in the order `/unipi:` lists them.
        pub(crate) const COMMANDS: &[WorkflowCommand] = &[$(WorkflowCommand {
            name: $name,
            level: ToolLevel::$level,
            arg_hint: $hint,
            description: $what,
            completes: $refs,
        }),*];
    };
}

commands! {
    "brainstorm", Brainstorm, "<topic>", None, "Explore a topic and write a design spec";
    "plan", WriteUnipi, "specs:<file> <description>", Some(Refs::Specs), "Turn a spec into a plan of tasks";
    "work", Full, "plan:<file> <description>", Some(Refs::Plans), "Carry out a plan task by task";
    "review-work", Review, "plan:<file> <scope>", Some(Refs::Plans), "Review the work done for a plan";
    "consolidate", WriteUnipi, "<what to consolidate>", None, "Gather what was learnt into notes";
    "quick-work", Full, "<task>", None, "A small change without a plan";
    "debug", WriteUnipi, "<bug description or error>", None, "Find a bug's root cause and write a report";
    "fix", Full, "debug:<file> <scope>", Some(Refs::Debug), "Fix a bug from a debug report";
    "quick-fix", Full, "<bug description>", None, "Fix a small bug with an obvious cause";
    "research", ReadOnly, "<topic or question>", None, "Answer a question by reading";
    "gather-context", ReadOnly, "<topic>", None, "Collect the context for a piece of work";
    "consultant", ReadOnly, "<question>", None, "A second opinion";
    "document", WriteUnipi, "<target>", None, "Write documentation into .unipi/docs/generated";
    "scan-issues", ReadOnly, "<scope>", None, "Look for bugs and risks";
    "chore-create", WriteUnipi, "<chore description>", None, "Write a repeatable chore checklist";
    "chore-execute", Full, "chore:<file> <overrides>", Some(Refs::Chores), "Run a chore checklist";
    "worktree-create", Full, "<branch-name>", None, "Create a git worktree";
    "worktree-list", ReadOnly, "", None, "List the git worktrees";
    "worktree-merge", Full, "<worktree>", Some(Refs::Worktrees), "Merge a worktree back";
    "auto", Full, "<description> plan:<file> specs:<file>", Some(Refs::Plans), "Brainstorm, plan, work and review in one go";
    "milestone-onboard", WriteUnipi, "<focus or notes>", None, "Build MILESTONES.md from the specs and plans";
    "milestone-update", WriteUnipi, "[all|<phase>]", Some(Refs::Phases), "Record progress in MILESTONES.md";
}

/// The folder under `.unipi/docs/` a `<prefix>:<file>` argument names a file of (`plan:` and
/// `plans:` → `plans`), or `None` when the word is no document reference.
pub(crate) fn ref_folder(prefix: &str) -> Option<&'static str> {
    match prefix {
        "specs" | "spec" => Some("specs"),
        "plan" | "plans" => Some("plans"),
        "debug" => Some("debug"),
        "chore" => Some("chore"),
        _ => None,
    }
}

/// The documents the arguments name (`plan:x.md`, `specs:y.md`, …) as paths relative to the
/// workspace, with a problem for each one that does not exist.
pub(crate) fn referenced_docs(
    args: &str,
    workspace: &Path,
) -> (Vec<(String, PathBuf)>, Vec<String>) {
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for word in args.split_whitespace() {
        let Some((prefix, file)) = word.split_once(':') else {
            continue;
        };
        let Some(folder) = ref_folder(prefix) else {
            continue;
        };
        if file.is_empty() || file.contains("..") {
            continue;
        }
        let relative = Path::new(super::docs::DOCS_DIR).join(folder).join(file);
        if workspace.join(&relative).is_file() {
            found.push((prefix.to_owned(), relative));
        } else {
            missing.push(format!("{} does not exist", relative.display()));
        }
    }
    (found, missing)
}

/// What `/unipi:work` adds: a loop can take the work over (Unipi's "Ralph detected" hint).
const RALPH_HINT: &str = "💡 Long work? A Ralph loop can take it over: call ralph_start with the \
     tasks and work through them iteration by iteration (the user can also run /unipi:ralph \
     start <name> or /unipi:ralph-start plan:<file>).";

/// The user message that runs `command` with `args` under `skill`.
pub(crate) fn message(
    command: &WorkflowCommand,
    args: &str,
    skill: &str,
    docs: &[(String, PathBuf)],
) -> String {
    let mut text = format!("Execute the {} workflow.", command.name);
    let args = args.trim();
    if !args.is_empty() {
        text.push_str(&format!("\n\nArguments: {args}"));
    }
    for (prefix, path) in docs {
        text.push_str(&format!("\n{prefix}: {}", path.display()));
    }
    if let Some(rules) = command.level.rules() {
        text.push_str(&format!("\n\nTool level {}: {rules}", command.level.name()));
    }
    if command.name == "work" {
        text.push_str(&format!("\n\n{RALPH_HINT}"));
    }
    text.push_str(&format!(
        "\n\n<skill_content>\n{}\n</skill_content>",
        skill.trim_end()
    ));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The workflow command `/unipi:<name>` answers to, if any (the bridge finds a command by
    /// name; the tests, a step).
    fn find(full_name: &str) -> Option<&'static WorkflowCommand> {
        let name = full_name.strip_prefix("unipi:")?;
        COMMANDS.iter().find(|command| command.name == name)
    }

    #[test]
    fn there_are_twenty_two_commands_each_with_a_skill() {
        assert_eq!(COMMANDS.len(), 22);
        for command in COMMANDS {
            assert!(
                super::super::skills::embedded(command.name).is_some(),
                "{} has no skill",
                command.name
            );
        }
        assert_eq!(
            find("unipi:plan").map(|c| c.level),
            Some(ToolLevel::WriteUnipi)
        );
        assert!(find("plan").is_none() && find("unipi:nope").is_none());
    }

    #[test]
    fn references_resolve_to_files_and_missing_ones_are_named() {
        let dir = tempfile::tempdir().unwrap_or_else(|err| panic!("{err}"));
        let plans = dir.path().join(".unipi/docs/plans");
        std::fs::create_dir_all(&plans).unwrap_or_default();
        std::fs::write(plans.join("p.md"), "- unstarted: Task 1 — x\n").unwrap_or_default();
        let (found, missing) =
            referenced_docs("plan:p.md specs:gone.md plan:../x note:y", dir.path());
        assert_eq!(
            found,
            vec![("plan".to_owned(), PathBuf::from(".unipi/docs/plans/p.md"))]
        );
        assert_eq!(missing, vec![".unipi/docs/specs/gone.md does not exist"]);
        let work = find("unipi:work").unwrap_or(&COMMANDS[0]);
        let text = message(work, "plan:p.md now", "# Work\n", &found);
        assert_eq!(
            text,
            format!(
                "Execute the work workflow.\n\nArguments: plan:p.md now\nplan: \
                 .unipi/docs/plans/p.md\n\n{RALPH_HINT}\n\n<skill_content>\n# Work\n\
                 </skill_content>"
            )
        );
    }
}
