//! Listing a directory's files of one kind (`*.md` agent definitions, `*.sqlite` project
//! databases): the regular files with that extension, in name order so that what is read from
//! them comes in the same order on every run.

use std::io;
use std::path::{Path, PathBuf};

/// The regular files `dir/*.<extension>`, sorted by path. Entries that cannot be read are
/// skipped; the error is `read_dir`'s (its kind intact: a missing directory is `NotFound`).
pub fn files_with_extension(dir: &Path, extension: &str) -> io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == extension) && path.is_file())
        .collect();
    files.sort();
    Ok(files)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_of_the_extension_in_name_order() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["b.md", "a.md", "c.txt", "md", "d.md.bak"] {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        std::fs::create_dir(dir.path().join("e.md")).unwrap();
        let names: Vec<PathBuf> = files_with_extension(dir.path(), "md")
            .unwrap()
            .into_iter()
            .map(|path| path.strip_prefix(dir.path()).unwrap().to_path_buf())
            .collect();
        assert_eq!(names, [PathBuf::from("a.md"), PathBuf::from("b.md")]);
        let missing = files_with_extension(&dir.path().join("none"), "md").unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
    }
}
