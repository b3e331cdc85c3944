//! The bridge's private runtime directory and its secrets. The socket lives in a directory that
//! is created fresh (never reused) with mode 0700 inside the user's private runtime root
//! ([`crate::sys::private_dir`]), so only the user can reach it, and removed when the host goes
//! away. It names its owner (pid and start time), so the next start removes the directories of
//! workbenches that died without removing theirs. Tokens come from `/dev/urandom` (32 bytes,
//! hex) and are compared in constant time.

use std::io::Read as _;
use std::path::Path;

use crate::sys::private_dir::OwnedDir;

use anyhow::{Context as _, bail};

/// The socket's file name inside the runtime directory.
pub(crate) const SOCKET_NAME: &str = "bridge.sock";

/// `sun_path` holds 108 bytes including the terminating NUL on Linux (104 on the BSDs).
const MAX_SOCKET_PATH: usize = 103;

/// A created runtime directory; removed (with its contents) on [`RuntimeDir::remove`] or drop.
#[derive(Debug)]
pub(crate) struct RuntimeDir(OwnedDir);

impl RuntimeDir {
    /// Creates `<base>/bridge-<pid>-<nonce>/` (fresh, mode 0700, with its owner file) after
    /// removing the ones in `base` whose workbench died. `base` defaults to the user's private
    /// runtime root.
    pub(crate) fn create(base: Option<&Path>) -> anyhow::Result<Self> {
        let base = match base {
            Some(base) => base.to_path_buf(),
            None => crate::sys::private_dir::runtime_root()
                .map_err(anyhow::Error::msg)?
                .path
                .clone(),
        };
        // `bridge-<pid>-<12 hex digits>/bridge.sock`, checked before anything is created.
        let longest = base.join(format!("{PREFIX}-{}-{:012x}", u32::MAX, 0));
        let socket_len = longest.join(SOCKET_NAME).as_os_str().len();
        if socket_len > MAX_SOCKET_PATH {
            bail!(
                "the bridge socket path under {} would be {socket_len} bytes, over the {MAX_SOCKET_PATH} \
                 a Unix socket allows; set XDG_RUNTIME_DIR or TMPDIR to a shorter directory",
                base.display()
            );
        }
        let dir = OwnedDir::create(&base, PREFIX).with_context(|| {
            format!(
                "cannot create the bridge runtime directory in {}",
                base.display()
            )
        })?;
        Ok(Self(dir))
    }

    pub(crate) fn path(&self) -> &Path {
        self.0.path()
    }

    /// Removes the directory and everything in it; later calls do nothing.
    pub(crate) fn remove(&self) {
        self.0.remove();
    }
}

/// The runtime directories' name prefix.
const PREFIX: &str = "bridge";

/// `bytes` random bytes from `/dev/urandom`, as lowercase hex.
pub(crate) fn random_hex(bytes: usize) -> anyhow::Result<String> {
    let mut buf = vec![0u8; bytes];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut urandom| urandom.read_exact(&mut buf))
        .context("cannot read /dev/urandom for the bridge's secrets")?;
    Ok(buf.iter().map(|byte| format!("{byte:02x}")).collect())
}

/// A fresh bridge token: 32 random bytes as 64 hex characters.
pub(crate) fn new_token() -> anyhow::Result<String> {
    random_hex(32)
}

/// Compares two secrets without an early exit, so timing does not tell how much matched.
pub(crate) fn secrets_match(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt as _;

    #[test]
    fn creates_a_fresh_private_dir_and_removes_it() -> anyhow::Result<()> {
        let base = tempfile::tempdir()?;
        let dir = RuntimeDir::create(Some(base.path()))?;
        let meta = std::fs::metadata(dir.path())?;
        assert!(meta.is_dir());
        assert_eq!(meta.mode() & 0o777, 0o700);
        let name = dir
            .path()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
        let name = name.unwrap_or_default();
        assert!(
            name.starts_with(&format!("bridge-{}-", std::process::id())),
            "{name}"
        );
        std::fs::write(dir.path().join("inside"), "x")?;
        let path = dir.path().to_path_buf();
        drop(dir);
        assert!(!path.exists(), "{} survived the drop", path.display());

        let other = RuntimeDir::create(Some(base.path()))?;
        assert_ne!(other.path(), path, "every workbench gets a new directory");
        other.remove();
        other.remove();
        assert!(!other.path().exists());
        Ok(())
    }

    #[test]
    fn refuses_a_socket_path_too_long_for_sun_path() -> anyhow::Result<()> {
        let base = tempfile::tempdir()?;
        let deep = base.path().join("d".repeat(100));
        std::fs::create_dir_all(&deep)?;
        let err = RuntimeDir::create(Some(&deep)).err().map(|e| e.to_string());
        assert!(
            err.as_deref()
                .is_some_and(|e| e.contains("shorter directory")),
            "{err:?}"
        );
        Ok(())
    }

    #[test]
    fn tokens_are_64_hex_chars_and_differ() -> anyhow::Result<()> {
        let (a, b) = (new_token()?, new_token()?);
        assert_eq!(a.len(), 64);
        assert!(a.bytes().all(|byte| byte.is_ascii_hexdigit()));
        assert_ne!(a, b);
        Ok(())
    }

    #[test]
    fn secrets_match_only_when_equal() {
        let cases: [(&[u8], &[u8], bool); 4] = [
            (b"abc", b"abc", true),
            (b"abc", b"abd", false),
            (b"abc", b"ab", false),
            (b"", b"", true),
        ];
        for (a, b, expected) in cases {
            assert_eq!(secrets_match(a, b), expected);
        }
    }
}
