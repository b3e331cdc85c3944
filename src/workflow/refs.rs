//! Argument completions of the workflow commands: the documents a `plan:`/`specs:`/`debug:`/
//! `chore:` argument may name (newest first, filtered by what is typed), and the worktrees under
//! `.unipi/worktrees/`.

use std::path::Path;

use super::commands::Refs;
use super::docs::DOCS_DIR;
use crate::bridge::Completion;

/// Worktree folders deeper than this are not searched.
const WORKTREE_DEPTH: usize = 4;

/// Completions for an argument of kind `refs`, given what is typed so far.
pub fn complete(refs: Refs, typed: &str, workspace: &Path) -> Vec<Completion> {
    // The completion replaces the whole argument: keep what comes before the last word.
    let (before, last) = match typed.rfind(char::is_whitespace) {
        Some(at) => (&typed[..=at], &typed[at + 1..]),
        None => ("", typed),
    };
    match refs.prefix_and_folder() {
        Some((prefix, folder, label)) => {
            let needle = last.strip_prefix(&format!("{prefix}:")).unwrap_or(last);
            doc_files(&workspace.join(DOCS_DIR).join(folder))
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
        None => worktrees(workspace)
            .into_iter()
            .filter(|(branch, _)| branch.contains(last))
            .map(|(branch, path)| Completion {
                value: format!("{before}{branch}"),
                label: branch,
                description: Some(format!("Worktree: {path}")),
            })
            .collect(),
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

    #[test]
    fn plans_and_worktrees_complete() {
        let dir = tempfile::tempdir().unwrap_or_else(|err| panic!("{err}"));
        let root = dir.path();
        let plans = root.join(".unipi/docs/plans");
        std::fs::create_dir_all(&plans).unwrap_or_default();
        for name in [
            "2026-01-01-auth-plan.md",
            "2026-01-02-search-plan.md",
            "notes.txt",
        ] {
            std::fs::write(plans.join(name), "").unwrap_or_default();
        }
        let values = |items: Vec<Completion>| -> Vec<String> {
            let mut values: Vec<String> = items.into_iter().map(|c| c.value).collect();
            values.sort();
            values
        };
        assert_eq!(
            values(complete(Refs::Plans, "", root)),
            [
                "plan:2026-01-01-auth-plan.md",
                "plan:2026-01-02-search-plan.md"
            ]
        );
        assert_eq!(
            values(complete(Refs::Plans, "fast plan:sea", root)),
            ["fast plan:2026-01-02-search-plan.md"]
        );
        assert!(complete(Refs::Specs, "", root).is_empty());

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
    }
}
