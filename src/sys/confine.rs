//! Writes that stay inside one directory (the project): where a write to a path would land once
//! every symbolic link on the way is followed, refused when that is outside the directory or not
//! a regular file.
//!
//! The project's files come from anywhere — a cloned repository can bring
//! `.unipi/docs/plans/notes -> /home/me` or `MILESTONES.md -> ~/.bashrc` — and a crash-safe write
//! renames a new file over the path: through a directory link it lands outside the project, and
//! over a file link it silently turns the link into a regular file. So a writer asks here first
//! and writes to the path this returns: the real path (no link left in it) of a regular file
//! inside the directory. A link that stays inside is followed, so the file it names is updated
//! and the link is kept. What remains: a link swapped in between this check and the write (by a
//! program that can write into the project while we do) is followed; closing that would need
//! every step done relative to an opened directory, and whoever can write there can write the
//! file itself.
//!
//! Errors say what the path leads to, without the path itself (the caller names it), with kind
//! `PermissionDenied` for a refusal and the system's kind otherwise.

use std::io;
use std::path::{Path, PathBuf};

/// The real path of the regular file `path` (relative to `root`, or absolute) names, if it is
/// inside `root`; links are followed. A missing file is `NotFound`.
pub fn existing_file(root: &Path, path: &Path) -> io::Result<PathBuf> {
    let root = real_root(root)?;
    let full = root.join(path);
    let real = std::fs::canonicalize(&full).map_err(|err| match err.kind() {
        io::ErrorKind::NotFound if is_link(&full) => io::Error::new(
            io::ErrorKind::NotFound,
            format!("it is a link to {} that does not exist", link_target(&full)),
        ),
        _ => err,
    })?;
    check_inside(&root, &real)?;
    check_regular(&real)?;
    Ok(real)
}

/// Where a write of `path` (relative to `root`, or absolute) may land: the file's real path if
/// it exists ([`existing_file`]), else its directory's real path (inside `root`, existing) with
/// the file's name. A dangling link in its place is refused: writing would create its target.
pub fn file_to_write(root: &Path, path: &Path) -> io::Result<PathBuf> {
    let real_root = real_root(root)?;
    let full = real_root.join(path);
    if std::fs::symlink_metadata(&full).is_ok() {
        return existing_file(root, path);
    }
    let (Some(dir), Some(name)) = (full.parent(), full.file_name()) else {
        return Err(refused(format!("{} names no file", full.display())));
    };
    let dir = std::fs::canonicalize(dir)?;
    check_inside(&real_root, &dir)?;
    Ok(dir.join(name))
}

/// Creates the directory `dir` (relative to `root`, or absolute) and its missing parents, if the
/// deepest one that exists is inside `root` once links are followed; returns its real path.
/// Nothing is created outside.
pub fn create_dir_all(root: &Path, dir: &Path) -> io::Result<PathBuf> {
    let real_root = real_root(root)?;
    let full = real_root.join(dir);
    let mut existing = full.as_path();
    let mut missing = Vec::new();
    while std::fs::symlink_metadata(existing).is_err() {
        let (Some(parent), Some(name)) = (existing.parent(), existing.file_name()) else {
            break;
        };
        missing.push(name.to_owned());
        existing = parent;
    }
    let mut real = std::fs::canonicalize(existing).map_err(|err| match err.kind() {
        io::ErrorKind::NotFound if is_link(existing) => refused(format!(
            "{} is a link to {} that does not exist",
            existing.display(),
            link_target(existing)
        )),
        _ => err,
    })?;
    check_inside(&real_root, &real)?;
    for name in missing.iter().rev() {
        real.push(name);
    }
    std::fs::create_dir_all(&real)?;
    Ok(real)
}

fn real_root(root: &Path) -> io::Result<PathBuf> {
    std::fs::canonicalize(root).map_err(|err| {
        io::Error::new(
            err.kind(),
            format!("cannot resolve the project {}: {err}", root.display()),
        )
    })
}

fn check_inside(root: &Path, real: &Path) -> io::Result<()> {
    if real.starts_with(root) {
        Ok(())
    } else {
        Err(refused(format!(
            "it leads to {}, outside the project {}",
            real.display(),
            root.display()
        )))
    }
}

fn check_regular(real: &Path) -> io::Result<()> {
    let kind = std::fs::metadata(real)?.file_type();
    if kind.is_file() {
        return Ok(());
    }
    let what = if kind.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    };
    Err(refused(format!("it leads to {}, {what}", real.display())))
}

fn is_link(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_symlink())
}

fn link_target(path: &Path) -> String {
    std::fs::read_link(path)
        .map(|target| target.display().to_string())
        .unwrap_or_else(|_| "?".to_owned())
}

fn refused(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, message)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A project and an outside directory side by side, with `outside/p.md`.
    fn project_and_outside() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("project");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(project.join("docs")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("p.md"), "theirs").unwrap();
        (dir, project, outside)
    }

    fn message(result: io::Result<PathBuf>) -> (io::ErrorKind, String) {
        let err = result.unwrap_err();
        (err.kind(), err.to_string())
    }

    #[test]
    fn links_out_of_the_project_are_refused_and_links_inside_are_followed() {
        let (_dir, project, outside) = project_and_outside();
        let docs = project.join("docs");
        std::fs::write(docs.join("own.md"), "ours").unwrap();
        symlink(&outside, docs.join("ldir")).unwrap();
        symlink(outside.join("p.md"), docs.join("lfile.md")).unwrap();
        symlink("own.md", docs.join("alias.md")).unwrap();
        symlink("gone.md", docs.join("dangling.md")).unwrap();
        let real_project = std::fs::canonicalize(&project).unwrap();
        let real_outside = std::fs::canonicalize(&outside).unwrap();

        assert_eq!(
            existing_file(&project, Path::new("docs/own.md")).unwrap(),
            real_project.join("docs/own.md")
        );
        // A link inside the project: the file it names, so the link itself stays.
        assert_eq!(
            existing_file(&project, Path::new("docs/alias.md")).unwrap(),
            real_project.join("docs/own.md")
        );
        for through in ["docs/ldir/p.md", "docs/lfile.md"] {
            let (kind, text) = message(existing_file(&project, Path::new(through)));
            assert_eq!(kind, io::ErrorKind::PermissionDenied, "{through}");
            assert_eq!(
                text,
                format!(
                    "it leads to {}, outside the project {}",
                    real_outside.join("p.md").display(),
                    real_project.display()
                ),
                "{through}"
            );
            let (kind, _) = message(file_to_write(&project, Path::new(through)));
            assert_eq!(kind, io::ErrorKind::PermissionDenied, "{through}");
        }
        // Absolute paths are judged the same way.
        let (kind, _) = message(existing_file(&project, &docs.join("ldir/p.md")));
        assert_eq!(kind, io::ErrorKind::PermissionDenied);
        // A new file in a linked-out directory, a dangling link, a directory.
        let (kind, _) = message(file_to_write(&project, Path::new("docs/ldir/new.md")));
        assert_eq!(kind, io::ErrorKind::PermissionDenied);
        let (kind, text) = message(file_to_write(&project, Path::new("docs/dangling.md")));
        assert_eq!(
            (kind, text.as_str()),
            (
                io::ErrorKind::NotFound,
                "it is a link to gone.md that does not exist"
            )
        );
        let (kind, text) = message(existing_file(&project, Path::new("docs")));
        assert_eq!(kind, io::ErrorKind::PermissionDenied);
        assert!(text.ends_with(", a directory"), "{text}");
        // A new file in a real directory of the project.
        assert_eq!(
            file_to_write(&project, Path::new("docs/new.md")).unwrap(),
            real_project.join("docs/new.md")
        );
        assert_eq!(
            message(existing_file(&project, Path::new("docs/none.md"))).0,
            io::ErrorKind::NotFound
        );
        assert_eq!(
            std::fs::read_to_string(outside.join("p.md")).unwrap(),
            "theirs"
        );
    }

    #[test]
    fn directories_are_made_only_inside() {
        let (_dir, project, outside) = project_and_outside();
        symlink(&outside, project.join("docs/ldir")).unwrap();
        let real_project = std::fs::canonicalize(&project).unwrap();
        assert_eq!(
            create_dir_all(&project, Path::new("docs/plans/deep")).unwrap(),
            real_project.join("docs/plans/deep")
        );
        assert!(project.join("docs/plans/deep").is_dir());
        let (kind, _) = message(create_dir_all(&project, Path::new("docs/ldir/plans")));
        assert_eq!(kind, io::ErrorKind::PermissionDenied);
        assert!(!outside.join("plans").exists(), "made outside the project");
        // An existing directory is fine, also when reached through a link inside.
        symlink("plans", project.join("docs/alias")).unwrap();
        assert_eq!(
            create_dir_all(&project, Path::new("docs/alias/deep")).unwrap(),
            real_project.join("docs/plans/deep")
        );
    }
}
