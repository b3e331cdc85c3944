//! Moving a card: the item's marker line is rewritten in its file (the checkbox ticked or
//! cleared, the task's status keyword replaced) and the file is written crash-safe. The line the
//! board read must still be there, unchanged: an edit made on disk since then (by the model, an
//! editor, another workbench) is a [`MoveError::Conflict`], never overwritten. The file is read
//! again right before the new one takes its name; if it changed while the move was being
//! written, the move starts over from the new text (a few times, then [`MoveError::Busy`]), so
//! another writer's change is lost only if it lands within the final `rename` call.
//!
//! The write lands only on a regular file inside the project, links followed
//! ([`crate::sys::confine`]): a document reached through a link out of the project, or a link
//! that names something else than a file, is [`MoveError::Refused`] and nothing is written; a
//! link inside the project stays a link (the file it names is updated).

use std::path::{Path, PathBuf};

use super::{Item, ItemStatus, Marker, TaskStatus};

/// How often a move starts again when the file changed while it was being written.
const ATTEMPTS: usize = 3;

/// Why a card did not move.
#[derive(Debug, thiserror::Error)]
pub(crate) enum MoveError {
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
    #[error(
        "{path} kept changing on disk while the card moved ({attempts} tries); not overwritten"
    )]
    Busy { path: PathBuf, attempts: usize },
    #[error("{path} is not written: {source}")]
    Refused {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot update {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The marker line of `item` with its status set for column `to`.
pub(crate) fn rewrite_line(item: &Item, to: ItemStatus) -> Result<String, MoveError> {
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

/// Moves `item` of the document at `file` (relative to the project `root`, or absolute) to
/// column `to`: rewrites its marker line if that line is still what the board read, and writes
/// the file crash-safe, if it is a regular file inside `root`. Moving to the column it is in
/// changes nothing. Errors name `file` as given.
pub(crate) fn move_item(
    root: &Path,
    file: &Path,
    item: &Item,
    to: ItemStatus,
) -> Result<(), MoveError> {
    move_item_with(root, file, item, to, |_| {})
}

/// [`move_item`], with `meanwhile` run between reading the file and replacing it (where another
/// writer's change would land; tests put one there).
pub(super) fn move_item_with(
    root: &Path,
    file: &Path,
    item: &Item,
    to: ItemStatus,
    mut meanwhile: impl FnMut(&Path),
) -> Result<(), MoveError> {
    if item.status == to {
        return Ok(());
    }
    let new_line = rewrite_line(item, to)?;
    let io = |source| MoveError::Io {
        path: file.to_path_buf(),
        source,
    };
    for _ in 0..ATTEMPTS {
        // Resolved on every attempt: what is read is what is replaced.
        let real = crate::sys::confine::existing_file(root, file).map_err(|source| match source
            .kind()
        {
            std::io::ErrorKind::PermissionDenied => MoveError::Refused {
                path: file.to_path_buf(),
                source,
            },
            _ => io(source),
        })?;
        let bytes = std::fs::read(&real).map_err(io)?;
        let out = with_line_replaced(file, &bytes, item, &new_line)?;
        meanwhile(&real);
        // The file as read is what the new text was made from: replace it only if it still is
        // (the same bytes — then nothing of anyone else's is lost, whatever the timestamps say).
        let unchanged = || std::fs::read(&real).map(|now| now == bytes);
        if crate::sys::replace_if_unchanged(&real, &out, unchanged).map_err(io)? {
            return Ok(());
        }
    }
    Err(MoveError::Busy {
        path: file.to_path_buf(),
        attempts: ATTEMPTS,
    })
}

/// `bytes` with the marker line of `item` replaced by `new_line` (its line ending kept), or a
/// conflict when that line is no longer what the board read.
fn with_line_replaced(
    file: &Path,
    bytes: &[u8],
    item: &Item,
    new_line: &str,
) -> Result<Vec<u8>, MoveError> {
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
    Ok(out)
}
