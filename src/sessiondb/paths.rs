//! Where a project's database lives: `<home>/.unipi/db/<hash16>.sqlite`, the hash taken over the
//! canonical workspace path so every checkout gets its own file without a registry. A linked git
//! worktree is recognised from its `.git` file (`gitdir: <main>/.git/worktrees/<name>`), read
//! directly rather than through a git subprocess, so start-up never waits on git: its file is
//! `<hash16>__<wt8>.sqlite`, where the first part hashes the main checkout (so a project's files
//! sort together) and the suffix hashes the worktree (so its sessions stay apart).

use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};

/// The directory of every project database: `<home>/.unipi/db`.
pub fn default_db_dir(home: &Path) -> PathBuf {
    home.join(".unipi").join("db")
}

/// The database file of `workspace` inside `db_dir`.
pub fn project_db_path(db_dir: &Path, workspace: &Path) -> PathBuf {
    let canonical = fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    let name = match linked_worktree(&canonical) {
        Some(worktree) => {
            // The same sub-directory of the main checkout: a worktree of a monorepo opened in
            // `crates/x` groups with the main checkout's `crates/x`.
            let inside = canonical
                .strip_prefix(&worktree.root)
                .unwrap_or(Path::new(""));
            let project = if inside.as_os_str().is_empty() {
                worktree.main.clone()
            } else {
                worktree.main.join(inside)
            };
            format!(
                "{}__{}.sqlite",
                path_hash(&project, 16),
                path_hash(&worktree.root, 8)
            )
        }
        None => format!("{}.sqlite", path_hash(&canonical, 16)),
    };
    db_dir.join(name)
}

/// A linked worktree found above the workspace.
#[derive(Debug, Clone, PartialEq)]
struct Worktree {
    /// The directory holding the worktree's `.git` file.
    root: PathBuf,
    /// The main checkout (or the bare repository) the worktree belongs to.
    main: PathBuf,
}

/// The nearest `.git` above `workspace` decides: a directory is a main checkout, a file naming
/// `<git dir>/worktrees/<name>` is a linked worktree, any other file (a submodule) is neither.
fn linked_worktree(workspace: &Path) -> Option<Worktree> {
    for dir in workspace.ancestors() {
        let dot_git = dir.join(".git");
        let Ok(meta) = fs::metadata(&dot_git) else {
            continue;
        };
        if !meta.is_file() {
            return None;
        }
        let text = fs::read_to_string(&dot_git).ok()?;
        let gitdir = text
            .lines()
            .find_map(|line| line.strip_prefix("gitdir:"))?
            .trim();
        let gitdir = dir.join(gitdir);
        let gitdir = fs::canonicalize(&gitdir).unwrap_or(gitdir);
        let main = main_checkout(&gitdir)?;
        return Some(Worktree {
            root: dir.to_path_buf(),
            main,
        });
    }
    None
}

/// `<main>/.git/worktrees/<name>` → `<main>`; `<bare>/worktrees/<name>` → `<bare>`.
fn main_checkout(gitdir: &Path) -> Option<PathBuf> {
    let components: Vec<Component> = gitdir.components().collect();
    let at = components
        .iter()
        .rposition(|c| c.as_os_str() == "worktrees")?;
    if at == 0 || at + 1 >= components.len() {
        return None;
    }
    let common: PathBuf = components[..at].iter().collect();
    if common.file_name().is_some_and(|name| name == ".git") {
        common.parent().map(Path::to_path_buf)
    } else {
        Some(common)
    }
}

fn path_hash(path: &Path, hex_chars: usize) -> String {
    let digest = Sha256::digest(path.as_os_str().as_bytes());
    let mut hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
    hex.truncate(hex_chars);
    hex
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stem(path: &Path) -> String {
        path.file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_string()
    }

    /// `<tmp>/main` with a `.git` dir and a linked worktree `<tmp>/wt` named `wt1`.
    fn make_repo_with_worktree(tmp: &Path, relative_gitdir: bool) -> (PathBuf, PathBuf) {
        let main = tmp.join("main");
        let wt = tmp.join("wt");
        fs::create_dir_all(main.join(".git/worktrees/wt1")).unwrap();
        fs::create_dir_all(wt.join("sub")).unwrap();
        fs::create_dir_all(main.join("sub")).unwrap();
        let gitdir = if relative_gitdir {
            "../main/.git/worktrees/wt1".to_string()
        } else {
            main.join(".git/worktrees/wt1").display().to_string()
        };
        fs::write(wt.join(".git"), format!("gitdir: {gitdir}\n")).unwrap();
        (
            fs::canonicalize(main).unwrap(),
            fs::canonicalize(wt).unwrap(),
        )
    }

    #[test]
    fn plain_directory_hashes_its_canonical_path() {
        let tmp = tempfile::tempdir().unwrap();
        let db_dir = default_db_dir(tmp.path());
        assert!(db_dir.ends_with(".unipi/db"));
        let ws = tmp.path().join("proj");
        fs::create_dir_all(&ws).unwrap();
        let path = project_db_path(&db_dir, &ws);
        assert_eq!(path.parent(), Some(db_dir.as_path()));
        let name = stem(&path);
        assert_eq!(name.len(), 16);
        assert!(name.chars().all(|c| c.is_ascii_hexdigit()));
        // Another spelling of the same directory is the same project.
        let dotted = tmp.path().join("proj/../proj/.");
        assert_eq!(project_db_path(&db_dir, &dotted), path);
        let other = tmp.path().join("other");
        fs::create_dir_all(&other).unwrap();
        assert_ne!(project_db_path(&db_dir, &other), path);
    }

    #[test]
    fn linked_worktree_gets_the_main_hash_and_its_own_suffix() {
        for relative in [false, true] {
            let tmp = tempfile::tempdir().unwrap();
            let (main, wt) = make_repo_with_worktree(tmp.path(), relative);
            let db_dir = tmp.path().join("db");
            let main_name = stem(&project_db_path(&db_dir, &main));
            let wt_name = stem(&project_db_path(&db_dir, &wt));
            assert_eq!(main_name.len(), 16);
            let (prefix, suffix) = wt_name.split_once("__").unwrap();
            assert_eq!(prefix, main_name, "relative gitdir: {relative}");
            assert_eq!(suffix, path_hash(&wt, 8));

            // A sub-directory of the worktree pairs with the same sub-directory of main.
            let sub_name = stem(&project_db_path(&db_dir, &wt.join("sub")));
            let main_sub = stem(&project_db_path(&db_dir, &main.join("sub")));
            assert_eq!(sub_name, format!("{main_sub}__{suffix}"));
        }
    }

    #[test]
    fn submodule_git_file_is_not_a_worktree() {
        let tmp = tempfile::tempdir().unwrap();
        let sub = tmp.path().join("super/lib");
        fs::create_dir_all(tmp.path().join("super/.git/modules/lib")).unwrap();
        fs::create_dir_all(&sub).unwrap();
        fs::write(sub.join(".git"), "gitdir: ../.git/modules/lib\n").unwrap();
        let name = stem(&project_db_path(tmp.path(), &sub));
        assert_eq!(name.len(), 16, "{name}");
    }

    #[test]
    fn main_checkout_of_gitdirs() {
        let table = [
            ("/r/main/.git/worktrees/a", Some("/r/main")),
            ("/r/bare.git/worktrees/a", Some("/r/bare.git")),
            ("/r/main/.git/modules/a", None),
            ("/r/main/.git/worktrees", None),
        ];
        for (gitdir, want) in table {
            assert_eq!(
                main_checkout(Path::new(gitdir)),
                want.map(PathBuf::from),
                "{gitdir}"
            );
        }
    }
}
