//! Argument completions of the workflow commands: the documents a `plan:`/`specs:`/`debug:`/
//! `chore:` argument may name (newest first, filtered by what is typed), and the worktrees under
//! `.unipi/worktrees/`.
//!
//! Pi replaces the whole argument with the chosen completion, and Enter with the menu open picks
//! the completion instead of sending the command (Pi 1.6 and 0.73 alike, `pi-tui`'s editor). So
//! a completion is offered only for the word being typed as a reference — `plan:tou` — or for an
//! empty argument, never for any last word that happens to be part of a file name (`finish the
//! tour` became `finish the plan:…-tour-plan.md`, `--max-iterations 2` lost its `2`), and none
//! once the word names an existing file exactly: a command typed in full goes out on the first
//! Enter.

use std::path::Path;

use super::commands::{Refs, ref_folder};
use super::docs::DOCS_DIR;
use crate::bridge::Completion;

/// Worktree folders deeper than this are not searched.
const WORKTREE_DEPTH: usize = 4;

/// Completions for an argument of kind `refs`, given what is typed so far.
pub(crate) fn complete(refs: Refs, typed: &str, workspace: &Path) -> Vec<Completion> {
    if refs == Refs::Phases {
        return super::milestone::complete_phases(typed, workspace);
    }
    // The completion replaces the whole argument: keep what comes before the last word.
    let (before, last) = match typed.rfind(char::is_whitespace) {
        Some(at) => (&typed[..=at], &typed[at + 1..]),
        None => ("", typed),
    };
    match refs.prefix_and_folder() {
        Some((own_prefix, own_folder)) => {
            let (prefix, folder, needle) = match last.split_once(':') {
                Some((prefix, needle)) => match ref_folder(prefix) {
                    Some(folder) => (prefix, folder, needle),
                    None => return Vec::new(),
                },
                // Nothing typed yet: what this command's reference may name.
                None if typed.trim().is_empty() => (own_prefix, own_folder, ""),
                None => return Vec::new(),
            };
            let files = doc_files(&workspace.join(DOCS_DIR).join(folder));
            if files.iter().any(|file| file == needle) {
                return Vec::new();
            }
            let label = match folder {
                "specs" => "Spec",
                "plans" => "Plan",
                "debug" => "Debug report",
                _ => "Chore",
            };
            files
                .into_iter()
                .filter(|file| file.contains(needle))
                .map(|file| {
                    let stem = file.trim_end_matches(".md").to_owned();
                    Completion {
                        value: format!("{before}{prefix}:{file}"),
                        label: stem,
                        description: Some(format!("{label}: {file}")),
                    }
                })
                .collect()
        }
        // One argument, the worktree's branch: only while it is the first word.
        None if !before.trim().is_empty() => Vec::new(),
        None => {
            let trees = worktrees(workspace);
            if trees.iter().any(|(branch, _)| branch == last) {
                return Vec::new();
            }
            trees
                .into_iter()
                .filter(|(branch, _)| branch.contains(last))
                .map(|(branch, path)| Completion {
                    value: format!("{before}{branch}"),
                    label: branch,
                    description: Some(format!("Worktree: {path}")),
                })
                .collect()
        }
    }
}

/// The `.md` files in `dir`, newest first.
fn doc_files(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<(std::time::SystemTime, String)> = entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_str()?.to_owned();
            let meta = entry.metadata().ok()?;
            (meta.is_file() && name.ends_with(".md"))
                .then(|| (meta.modified().unwrap_or(std::time::UNIX_EPOCH), name))
        })
        .collect();
    files.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    files.into_iter().map(|(_, name)| name).collect()
}

/// `(branch, path relative to the workspace)` of each worktree under `.unipi/worktrees/`: a
/// folder with a `.git` *file* (`gitdir: …/worktrees/<branch>`).
pub fn worktrees(workspace: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    find_worktrees(workspace, &workspace.join(".unipi/worktrees"), 0, &mut out);
    out.sort();
    out
}

fn find_worktrees(workspace: &Path, dir: &Path, depth: usize, out: &mut Vec<(String, String)>) {
    let git = dir.join(".git");
    if git.is_file() {
        let branch = std::fs::read_to_string(&git)
            .ok()
            .and_then(|text| {
                let gitdir = text.trim().strip_prefix("gitdir:")?.trim().to_owned();
                Path::new(&gitdir)
                    .file_name()
                    .map(|name| name.to_string_lossy().into_owned())
            })
            .unwrap_or_else(|| {
                dir.file_name()
                    .map(|name| name.to_string_lossy().into_owned())
                    .unwrap_or_default()
            });
        let path = dir.strip_prefix(workspace).unwrap_or(dir);
        out.push((branch, path.display().to_string()));
        return;
    }
    if depth >= WORKTREE_DEPTH {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if name == "node_modules" || name == ".git" {
            continue;
        }
        if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            find_worktrees(workspace, &entry.path(), depth + 1, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The completion values for `typed`, sorted.
    fn values(refs: Refs, typed: &str, root: &Path) -> Vec<String> {
        let mut values: Vec<String> = complete(refs, typed, root)
            .into_iter()
            .map(|c| c.value)
            .collect();
        values.sort();
        values
    }

    fn write(path: &Path) {
        std::fs::create_dir_all(path.parent().unwrap_or(path)).unwrap_or_default();
        std::fs::write(path, "").unwrap_or_else(|err| panic!("{err}"));
    }

    #[test]
    fn only_a_reference_being_typed_completes() {
        let dir = tempfile::tempdir().unwrap_or_else(|err| panic!("{err}"));
        let root = dir.path();
        for name in [
            "plans/2026-12-01-tour-plan.md",
            "plans/2026-12-02-search-plan.md",
            "plans/notes.txt",
            "specs/2026-11-30-tour-design.md",
        ] {
            write(&root.join(DOCS_DIR).join(name));
        }
        let both = [
            "plan:2026-12-01-tour-plan.md",
            "plan:2026-12-02-search-plan.md",
        ];
        let table: &[(Refs, &str, &[&str])] = &[
            // Nothing typed yet: the command's own kind.
            (Refs::Plans, "", &both),
            (Refs::Plans, "plan:", &both),
            (Refs::Plans, "plan:sea", &["plan:2026-12-02-search-plan.md"]),
            (
                Refs::Plans,
                "plans:sea",
                &["plans:2026-12-02-search-plan.md"],
            ),
            (
                Refs::Plans,
                "fast plan:sea",
                &["fast plan:2026-12-02-search-plan.md"],
            ),
            // Another kind of reference, as /unipi:auto takes.
            (
                Refs::Plans,
                "do it specs:tour",
                &["do it specs:2026-11-30-tour-design.md"],
            ),
            // Words that are no reference complete nothing, even when a file name has them.
            (
                Refs::Plans,
                "plan:2026-12-01-tour-plan.md finish the tour",
                &[],
            ),
            (
                Refs::Plans,
                "plan:2026-12-01-tour-plan.md --max-iterations 2",
                &[],
            ),
            (Refs::Plans, "plan:2026-12-01-tour-plan.md ", &[]),
            (Refs::Plans, "tour", &[]),
            (Refs::Plans, "note:x", &[]),
            // A reference typed in full is complete: Enter sends the command.
            (Refs::Plans, "plan:2026-12-01-tour-plan.md", &[]),
            (Refs::Specs, "", &["specs:2026-11-30-tour-design.md"]),
            (Refs::Debug, "", &[]),
        ];
        for (refs, typed, expected) in table {
            assert_eq!(values(*refs, typed, root), *expected, "{refs:?} {typed:?}");
        }
        let items = complete(Refs::Plans, "plan:search", root);
        assert_eq!(items[0].label, "2026-12-02-search-plan");
        assert_eq!(
            items[0].description.as_deref(),
            Some("Plan: 2026-12-02-search-plan.md")
        );
    }

    #[test]
    fn worktrees_complete_as_the_only_argument() {
        let dir = tempfile::tempdir().unwrap_or_else(|err| panic!("{err}"));
        let root = dir.path();
        let tree = root.join(".unipi/worktrees/feature-x");
        std::fs::create_dir_all(&tree).unwrap_or_default();
        std::fs::write(
            tree.join(".git"),
            "gitdir: /repo/.git/worktrees/feature-x\n",
        )
        .unwrap_or_default();
        let items = complete(Refs::Worktrees, "feat", root);
        assert_eq!(items.len(), 1);
        assert_eq!(items[0].value, "feature-x");
        assert_eq!(
            items[0].description.as_deref(),
            Some("Worktree: .unipi/worktrees/feature-x")
        );
        assert!(complete(Refs::Worktrees, "feature-x", root).is_empty());
        assert!(complete(Refs::Worktrees, "feature-x now feat", root).is_empty());
    }
}
