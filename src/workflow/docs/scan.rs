//! Reading the whole docs tree, re-parsing only what changed: each file's stamp (size,
//! modification time, inode, change time) is kept with its parsed document, and a scan stats
//! every file but reads and parses only the ones whose stamp moved. The board rescans after the
//! watcher reports a change, so a burst of writes to one plan re-parses that plan alone.
//!
//! Only regular files are read (a fifo or a device named `x.md` would block or never end), and
//! a link is followed only while it stays inside the project: a file linked from outside becomes
//! a document with a warning and nothing read, a linked-out folder is not walked (logged once).
//! What the board shows is then what a card move may write ([`super::edit`]).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::{Doc, DocType, Warning, parse};
use crate::sys::fs::FileStamp as Stamp;

/// Folders deeper than this are not read (a symlink loop, a vendored tree).
const MAX_DEPTH: usize = 6;

/// The parsed documents of one docs directory, kept between scans.
#[derive(Default)]
pub(crate) struct DocCache {
    entries: HashMap<PathBuf, (Stamp, Doc)>,
    /// Files parsed since the cache was made (tests read it to prove unchanged files are not).
    parsed: usize,
    /// Links out of the project already logged (each is logged once, not on every scan).
    reported: HashSet<PathBuf>,
}

/// What the walk found: a document to read, or a link out of the project not to follow.
enum Found {
    Doc(PathBuf, DocType, std::fs::Metadata),
    Outside { relative: PathBuf, target: PathBuf },
}

impl DocCache {
    /// Scans `docs_dir` (inside the project `project`) and returns every document, sorted by
    /// type then path. A missing folder is an empty board.
    pub(crate) fn scan(&mut self, docs_dir: &Path, project: &Path) -> Vec<Doc> {
        let project = std::fs::canonicalize(project).unwrap_or_else(|_| project.to_path_buf());
        let mut found = Vec::new();
        match std::fs::canonicalize(docs_dir) {
            Ok(real) if real.starts_with(&project) => {
                walk(docs_dir, Path::new(""), 0, &project, &mut found);
            }
            Ok(real) => found.push(Found::Outside {
                relative: PathBuf::new(),
                target: real,
            }),
            Err(_) => {}
        }
        let mut seen = HashMap::with_capacity(found.len());
        for found in found {
            let (relative, kind, meta) = match found {
                Found::Doc(relative, kind, meta) => (relative, kind, meta),
                Found::Outside { relative, target } => {
                    match DocType::of(&relative) {
                        Some(kind) => {
                            let doc = outside(kind, &relative, &target);
                            seen.insert(relative, (Stamp::NONE, doc));
                        }
                        None if self.reported.insert(relative.clone()) => tracing::warn!(
                            "board: {} leads to {}, outside the project; not read",
                            docs_dir.join(&relative).display(),
                            target.display()
                        ),
                        None => {}
                    }
                    continue;
                }
            };
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
    #[cfg(test)]
    pub(crate) fn parsed(&self) -> usize {
        self.parsed
    }
}

/// The document a link out of the project stands for: nothing read, a warning saying why.
fn outside(kind: DocType, relative: &Path, target: &Path) -> Doc {
    let mut doc = parse(kind, relative, b"");
    doc.warnings = vec![Warning {
        line: None,
        message: format!(
            "links to {}, outside the project: not read",
            target.display()
        ),
    }];
    doc
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

fn walk(root: &Path, relative: &Path, depth: usize, project: &Path, out: &mut Vec<Found>) {
    let Ok(entries) = std::fs::read_dir(root.join(relative)) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        let path = relative.join(&name);
        let Ok(file_type) = entry.file_type() else {
            continue;
        };
        let meta = if file_type.is_symlink() {
            // A dangling link is no document.
            let Ok(target) = std::fs::canonicalize(entry.path()) else {
                continue;
            };
            if !target.starts_with(project) {
                out.push(Found::Outside {
                    relative: path,
                    target,
                });
                continue;
            }
            std::fs::metadata(&target)
        } else {
            entry.metadata()
        };
        let Ok(meta) = meta else {
            continue;
        };
        if meta.is_dir() {
            if depth < MAX_DEPTH {
                walk(root, &path, depth + 1, project, out);
            }
        } else if meta.is_file()
            && let Some(kind) = DocType::of(&path)
        {
            out.push(Found::Doc(path, kind, meta));
        }
    }
}
