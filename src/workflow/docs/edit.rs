//! Moving a card: the item's marker line is rewritten in its file (the checkbox ticked or
//! cleared, the task's status keyword replaced) and the file is written crash-safe. The line the
//! board read must still be there, unchanged: an edit made on disk since then (by the model, an
//! editor, another workbench) is a [`MoveError::Conflict`], never overwritten.

use std::path::{Path, PathBuf};

use super::{Item, ItemStatus, Marker, TaskStatus};

/// Why a card did not move.
#[derive(Debug, thiserror::Error)]
pub enum MoveError {
    #[error("{0}")]
    NotMovable(String),
    #[error(
        "{path}:{line} changed on disk since the board read it (now {found:?}); not overwritten"
    )]
    Conflict {
        path: PathBuf,
        line: usize,
        found: String,
    },
    #[error("cannot update {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The marker line of `item` with its status set for column `to`.
pub fn rewrite_line(item: &Item, to: ItemStatus) -> Result<String, MoveError> {
    let line = &item.marker_source;
    match item.marker {
        Marker::Checkbox { .. } => {
            let mark = match to {
                ItemStatus::Todo => ' ',
                ItemStatus::Done => 'x',
                ItemStatus::InProgress | ItemStatus::Reviewed => {
                    return Err(MoveError::NotMovable(format!(
                        "a checkbox is to do or done; it cannot be {}",
                        to.name()
                    )));
                }
            };
            let at = ["[ ]", "[x]", "[X]"]
                .iter()
                .filter_map(|box_| line.find(box_))
                .min()
                .ok_or_else(|| MoveError::NotMovable("no checkbox on the line".to_owned()))?;
            let mut out = String::with_capacity(line.len());
            out.push_str(&line[..at + 1]);
            out.push(mark);
            out.push_str(&line[at + 2..]);
            Ok(out)
        }
        Marker::Keyword(status) => {
            let old = status.keyword();
            let at = line
                .find(old)
                .ok_or_else(|| MoveError::NotMovable("no status keyword on the line".to_owned()))?;
            let new = TaskStatus::for_column(to).keyword();
            Ok(format!("{}{new}{}", &line[..at], &line[at + old.len()..]))
        }
        Marker::Header => Err(MoveError::NotMovable(
            "this card is a section heading; its status follows the document, not a marker"
                .to_owned(),
        )),
    }
}

/// Moves `item` of the document at `file` to column `to`: rewrites its marker line if that line
/// is still what the board read, and writes the file crash-safe. Moving to the column it is in
/// changes nothing.
pub fn move_item(file: &Path, item: &Item, to: ItemStatus) -> Result<(), MoveError> {
    if item.status == to {
        return Ok(());
    }
    let new_line = rewrite_line(item, to)?;
    let io = |source| MoveError::Io {
        path: file.to_path_buf(),
        source,
    };
    let bytes = std::fs::read(file).map_err(io)?;
    let mut out = Vec::with_capacity(bytes.len() + 8);
    let mut seen = false;
    for (index, raw) in bytes.split_inclusive(|b| *b == b'\n').enumerate() {
        if index + 1 != item.marker_line {
            out.extend_from_slice(raw);
            continue;
        }
        let ending_len = if raw.ends_with(b"\r\n") {
            2
        } else {
            usize::from(raw.ends_with(b"\n"))
        };
        let (content, ending) = raw.split_at(raw.len() - ending_len);
        if content != item.marker_source.as_bytes() {
            return Err(MoveError::Conflict {
                path: file.to_path_buf(),
                line: item.marker_line,
                found: String::from_utf8_lossy(content).into_owned(),
            });
        }
        out.extend_from_slice(new_line.as_bytes());
        out.extend_from_slice(ending);
        seen = true;
    }
    if !seen {
        return Err(MoveError::Conflict {
            path: file.to_path_buf(),
            line: item.marker_line,
            found: "(the file is shorter now)".to_owned(),
        });
    }
    crate::sys::write_atomic(file, &out).map_err(io)
}
