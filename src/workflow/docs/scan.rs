//! Reading the whole docs tree, re-parsing only what changed: each file's stamp (size,
//! modification time, inode, change time) is kept with its parsed document, and a scan stats
//! every file but reads and parses only the ones whose stamp moved. The board rescans after the
//! watcher reports a change, so a burst of writes to one plan re-parses that plan alone.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::{Doc, DocType, Warning, parse};
use crate::sys::fs::FileStamp as Stamp;

/// Folders deeper than this are not read (a symlink loop, a vendored tree).
const MAX_DEPTH: usize = 6;

/// The parsed documents of one docs directory, kept between scans.
#[derive(Default)]
pub struct DocCache {
    entries: HashMap<PathBuf, (Stamp, Doc)>,
    /// Files parsed since the cache was made (tests read it to prove unchanged files are not).
    parsed: usize,
}

impl DocCache {
    /// Scans `docs_dir` and returns every document, sorted by type then path. A missing folder
    /// is an empty board.
    pub fn scan(&mut self, docs_dir: &Path) -> Vec<Doc> {
        let mut found = Vec::new();
        walk(docs_dir, Path::new(""), 0, &mut found);
        let mut seen = HashMap::with_capacity(found.len());
        for (relative, kind, meta) in found {
            let stamp = Stamp::of(&meta);
            let doc = match self.entries.remove(&relative) {
                Some((old, doc)) if old == stamp => doc,
                _ => {
                    self.parsed += 1;
                    read(docs_dir, &relative, kind)
                }
            };
            seen.insert(relative, (stamp, doc));
        }
        self.entries = seen;
        let mut docs: Vec<Doc> = self.entries.values().map(|(_, doc)| doc.clone()).collect();
        docs.sort_by(|a, b| (a.kind, &a.path).cmp(&(b.kind, &b.path)));
        docs
    }

    /// How many files were read and parsed so far.
    pub fn parsed(&self) -> usize {
        self.parsed
    }
}

fn read(docs_dir: &Path, relative: &Path, kind: DocType) -> Doc {
    match std::fs::read(docs_dir.join(relative)) {
        Ok(bytes) => parse(kind, relative, &bytes),
        Err(err) => {
            let mut doc = parse(kind, relative, b"");
            doc.warnings = vec![Warning {
                line: None,
                message: format!("cannot read the file: {err}"),
            }];
            doc
        }
    }
}

fn walk(
    root: &Path,
    relative: &Path,
    depth: usize,
    out: &mut Vec<(PathBuf, DocType, std::fs::Metadata)>,
) {
    let Ok(entries) = std::fs::read_dir(root.join(relative)) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        let path = relative.join(&name);
        let Ok(meta) = std::fs::metadata(entry.path()) else {
            continue;
        };
        if meta.is_dir() {
            if depth < MAX_DEPTH {
                walk(root, &path, depth + 1, out);
            }
        } else if let Some(kind) = DocType::of(&path) {
            out.push((path, kind, meta));
        }
    }
}
