//! The bridge extension's source, embedded in the binary, and its copy on disk for `pi -e`.
//! The file name carries a hash of the content, so a workbench never loads a stale copy left by
//! another build, and builds running side by side never overwrite each other's file.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

/// `bridge/extension.ts`, as compiled in.
pub(crate) const EXTENSION_SOURCE: &str = include_str!("../../bridge/extension.ts");

/// The extension's file name: `unipi-bridge-<16 hex digits of FNV-1a 64 of the content>.ts`.
/// A content-addressed name, not a security boundary: the cache directory is the user's own.
pub(crate) fn extension_file_name() -> String {
    format!(
        "unipi-bridge-{:016x}.ts",
        fnv1a64(EXTENSION_SOURCE.as_bytes())
    )
}

/// Writes the extension to `<cache_dir>/bridge/<extension_file_name()>` unless an identical
/// copy is there, and returns its path. The write is crash-safe ([`crate::sys::write_atomic`]),
/// so a concurrent workbench or a crash never leaves a half-written extension for Pi to load.
pub fn extension_file(cache_dir: &Path) -> anyhow::Result<PathBuf> {
    let dir = cache_dir.join("bridge");
    let path = dir.join(extension_file_name());
    if std::fs::read(&path).is_ok_and(|existing| existing == EXTENSION_SOURCE.as_bytes()) {
        return Ok(path);
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    crate::sys::write_atomic(&path, EXTENSION_SOURCE.as_bytes())
        .with_context(|| format!("cannot write the bridge extension to {}", path.display()))?;
    Ok(path)
}

fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a64_matches_reference_vectors() {
        // From the FNV reference test suite.
        let cases: [(&[u8], u64); 3] = [
            (b"", 0xcbf2_9ce4_8422_2325),
            (b"a", 0xaf63_dc4c_8601_ec8c),
            (b"foobar", 0x8594_4171_f739_67e8),
        ];
        for (input, expected) in cases {
            assert_eq!(fnv1a64(input), expected);
        }
    }

    #[test]
    fn writes_once_and_repairs_a_damaged_copy() -> anyhow::Result<()> {
        let cache = tempfile::tempdir()?;
        let path = extension_file(cache.path())?;
        assert_eq!(
            path,
            cache.path().join("bridge").join(extension_file_name())
        );
        assert_eq!(std::fs::read_to_string(&path)?, EXTENSION_SOURCE);

        std::fs::write(&path, "damaged")?;
        assert_eq!(extension_file(cache.path())?, path);
        assert_eq!(std::fs::read_to_string(&path)?, EXTENSION_SOURCE);

        let names: Vec<String> = std::fs::read_dir(cache.path().join("bridge"))?
            .map(|entry| entry.map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect::<Result<_, _>>()?;
        assert_eq!(names, [extension_file_name()], "no temp files are left");
        Ok(())
    }

    #[test]
    fn the_embedded_extension_speaks_this_protocol() {
        let constants = [
            (
                "PROTOCOL_VERSION",
                crate::bridge::protocol::PROTOCOL_VERSION.to_string(),
            ),
            (
                "MAX_LINE_BYTES",
                crate::bridge::protocol::MAX_LINE_BYTES.to_string(),
            ),
        ];
        for (name, value) in constants {
            let stated = format!("const {name} = {value};");
            assert!(
                EXTENSION_SOURCE.contains(&stated),
                "bridge/extension.ts must declare `{stated}`"
            );
        }
    }
}
