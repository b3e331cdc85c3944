//! Test helpers shared by the database's and the compactor's tests.

use std::fs;
use std::path::{Path, PathBuf};

/// Makes `path` unwritable as a user meets it (no write permission), undone on drop. Root
/// ignores permission bits, so when the file stays writable it is made immutable instead.
pub(crate) struct Unwritable(PathBuf);

impl Unwritable {
    pub(crate) fn new(path: &Path) -> Self {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = if path.is_dir() { 0o555 } else { 0o444 };
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
        let probe = if path.is_dir() {
            fs::write(path.join(".probe"), b"").is_ok()
        } else {
            fs::OpenOptions::new().append(true).open(path).is_ok()
        };
        if probe {
            let _ = fs::remove_file(path.join(".probe"));
            let status = std::process::Command::new("chattr")
                .arg("+i")
                .arg(path)
                .status()
                .expect("chattr (e2fsprogs) makes a file unwritable for root");
            assert!(status.success(), "chattr +i {}", path.display());
        }
        Unwritable(path.to_path_buf())
    }
}

impl Drop for Unwritable {
    fn drop(&mut self) {
        use std::os::unix::fs::PermissionsExt as _;
        let _ = std::process::Command::new("chattr")
            .arg("-i")
            .arg(&self.0)
            .status();
        let _ = fs::set_permissions(&self.0, fs::Permissions::from_mode(0o755));
    }
}
