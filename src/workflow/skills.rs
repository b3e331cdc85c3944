//! The skill text each workflow command hands the model: our own, embedded in the binary, and
//! overridable per user (`~/.unipi/skills/<name>.md` or `~/.unipi/skills/<name>/SKILL.md`) and
//! per project (`<workspace>/.unipi/skills/…`, which wins).

use std::path::Path;

/// The embedded skill of step `name`.
pub fn embedded(name: &str) -> Option<&'static str> {
    Some(match name {
        "brainstorm" => include_str!("skills/brainstorm.md"),
        "plan" => include_str!("skills/plan.md"),
        "work" => include_str!("skills/work.md"),
        "review-work" => include_str!("skills/review-work.md"),
        "consolidate" => include_str!("skills/consolidate.md"),
        "quick-work" => include_str!("skills/quick-work.md"),
        "debug" => include_str!("skills/debug.md"),
        "fix" => include_str!("skills/fix.md"),
        "quick-fix" => include_str!("skills/quick-fix.md"),
        "research" => include_str!("skills/research.md"),
        "gather-context" => include_str!("skills/gather-context.md"),
        "consultant" => include_str!("skills/consultant.md"),
        "document" => include_str!("skills/document.md"),
        "scan-issues" => include_str!("skills/scan-issues.md"),
        "chore-create" => include_str!("skills/chore-create.md"),
        "chore-execute" => include_str!("skills/chore-execute.md"),
        "worktree-create" => include_str!("skills/worktree-create.md"),
        "worktree-list" => include_str!("skills/worktree-list.md"),
        "worktree-merge" => include_str!("skills/worktree-merge.md"),
        "auto" => include_str!("skills/auto.md"),
        "milestone-onboard" => include_str!("skills/milestone-onboard.md"),
        "milestone-update" => include_str!("skills/milestone-update.md"),
        _ => return None,
    })
}

/// A skill as it will be sent, and where it came from (`embedded` or the override's path).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Skill {
    pub text: String,
    pub source: String,
}

/// The skill of step `name`: the project's override, else the user's, else the embedded one.
/// An override that cannot be read is skipped with a warning in the log.
pub(crate) fn load(name: &str, home: Option<&Path>, workspace: &Path) -> Option<Skill> {
    let roots = [Some(workspace), home].into_iter().flatten();
    for root in roots {
        let dir = root.join(".unipi/skills");
        for candidate in [
            dir.join(format!("{name}.md")),
            dir.join(name).join("SKILL.md"),
        ] {
            match std::fs::read_to_string(&candidate) {
                Ok(text) => {
                    return Some(Skill {
                        text,
                        source: candidate.display().to_string(),
                    });
                }
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(err) => tracing::warn!("skill override {}: {err}", candidate.display()),
            }
        }
    }
    embedded(name).map(|text| Skill {
        text: text.to_owned(),
        source: "embedded".to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_project_overrides_the_user_who_overrides_the_embedded_skill() {
        let home = tempfile::tempdir().unwrap_or_else(|err| panic!("{err}"));
        let project = tempfile::tempdir().unwrap_or_else(|err| panic!("{err}"));
        let source = |skill: Option<Skill>| skill.map(|s| s.source).unwrap_or_default();
        assert_eq!(
            source(load("plan", Some(home.path()), project.path())),
            "embedded"
        );
        let user = home.path().join(".unipi/skills/plan/SKILL.md");
        std::fs::create_dir_all(user.parent().unwrap_or(home.path())).unwrap_or_default();
        std::fs::write(&user, "user plan").unwrap_or_default();
        let loaded = load("plan", Some(home.path()), project.path());
        assert_eq!(loaded.as_ref().map(|s| s.text.as_str()), Some("user plan"));
        let ours = project.path().join(".unipi/skills/plan.md");
        std::fs::create_dir_all(ours.parent().unwrap_or(project.path())).unwrap_or_default();
        std::fs::write(&ours, "project plan").unwrap_or_default();
        assert_eq!(
            source(load("plan", Some(home.path()), project.path())),
            ours.display().to_string()
        );
        assert!(load("nope", None, project.path()).is_none());
    }
}
