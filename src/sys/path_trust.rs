//! Whether another local user can change what a path names.
//!
//! A directory of ours is only as private as the path that leads to it: whoever may rename
//! entries in a directory on the way (its owner, anyone who can write to it unless it is sticky)
//! can move ours aside and put theirs in its place. So a path is trusted when every directory
//! and link on it, as written and as resolved, belongs to us or to root, and none that others may
//! write to lacks the sticky bit (`/tmp` and `/var/tmp` have it: there, an entry can be renamed
//! only by its owner).

use std::os::unix::fs::MetadataExt as _;
use std::path::Path;

/// Why someone other than us (or root) could replace what `path` names, or `None` when nobody
/// can. A path that cannot be inspected is not trusted either.
pub fn others_can_replace(path: &Path) -> Option<String> {
    let uid = nix::unistd::geteuid().as_raw();
    let resolved = match std::fs::canonicalize(path) {
        Ok(resolved) => resolved,
        Err(err) => return Some(format!("cannot resolve {}: {err}", path.display())),
    };
    // As written (its links) and as resolved (where the links lead).
    for chain in [path, resolved.as_path()] {
        for step in chain
            .ancestors()
            .filter(|step| !step.as_os_str().is_empty())
        {
            if let Some(why) = step_problem(step, uid) {
                return Some(why);
            }
        }
    }
    None
}

fn step_problem(step: &Path, uid: u32) -> Option<String> {
    let meta = match std::fs::symlink_metadata(step) {
        Ok(meta) => meta,
        Err(err) => return Some(format!("cannot inspect {}: {err}", step.display())),
    };
    if meta.uid() != uid && meta.uid() != 0 {
        return Some(format!(
            "{} belongs to another user (uid {})",
            step.display(),
            meta.uid()
        ));
    }
    let others_write = meta.mode() & 0o022 != 0;
    let sticky = meta.mode() & 0o1000 != 0;
    if meta.is_dir() && others_write && !sticky {
        return Some(format!(
            "others can write to {} (mode {:o}) and it is not sticky",
            step.display(),
            meta.mode() & 0o7777
        ));
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    fn chmod(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn a_path_through_our_own_and_sticky_directories_is_trusted() {
        let root = tempfile::tempdir().unwrap();
        let shared = root.path().join("shared");
        std::fs::create_dir(&shared).unwrap();
        chmod(&shared, 0o1777);
        let ours = shared.join("ours");
        std::fs::create_dir(&ours).unwrap();
        assert_eq!(others_can_replace(&ours), None);
        // A link of ours to it is as good.
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&ours, &link).unwrap();
        assert_eq!(others_can_replace(&link), None);
    }

    #[test]
    fn a_directory_others_may_write_to_without_the_sticky_bit_is_named() {
        let root = tempfile::tempdir().unwrap();
        let open = root.path().join("open");
        std::fs::create_dir(&open).unwrap();
        chmod(&open, 0o777);
        let inner = open.join("inner");
        std::fs::create_dir(&inner).unwrap();
        let why = others_can_replace(&inner).unwrap();
        assert!(why.contains("open") && why.contains("not sticky"), "{why}");
        // Through a link, the place the link leads to counts too.
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&inner, &link).unwrap();
        assert!(others_can_replace(&link).is_some());
    }

    #[test]
    fn a_directory_of_another_user_on_the_way_is_named() {
        let root = tempfile::tempdir().unwrap();
        let theirs = root.path().join("theirs");
        std::fs::create_dir(&theirs).unwrap();
        let inner = theirs.join("inner");
        std::fs::create_dir(&inner).unwrap();
        nix::unistd::chown(&theirs, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
        let why = others_can_replace(&inner).unwrap();
        assert!(why.contains("theirs") && why.contains("uid 65534"), "{why}");
    }

    #[test]
    fn a_missing_path_is_not_trusted() {
        let root = tempfile::tempdir().unwrap();
        let why = others_can_replace(&root.path().join("gone")).unwrap();
        assert!(why.contains("cannot resolve"), "{why}");
    }
}
