//! What `/proc` says about processes: parent, process group and start time of each, whether it
//! is a zombie, what its environment holds. A pid alone names a process only while it runs — the
//! kernel hands it out again once the process is reaped — so a process recorded for later (the
//! owner of a directory, the leader of a group to kill after a crash) is named by its pid **and**
//! its start time ([`ProcessId`]), and nothing is signalled on a pid whose start time differs.

use serde::{Deserialize, Serialize};

/// One process's line in `/proc/<pid>/stat`, the fields we use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ProcStat {
    pub pid: i32,
    pub ppid: i32,
    pub pgid: i32,
    /// When it started, in clock ticks after boot (field 22).
    pub start: u64,
    /// It has ended and waits for its parent to reap it.
    pub zombie: bool,
}

/// The stat line of `pid`, while the process (or its zombie) exists.
pub(crate) fn stat(pid: i32) -> Option<ProcStat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(pid, &text)
}

/// Parses a stat line. The command name (field 2) is in parentheses and may itself hold spaces
/// and parentheses, so the fields are counted from the last `)`.
fn parse_stat(pid: i32, text: &str) -> Option<ProcStat> {
    let rest = text.get(text.rfind(')')? + 1..)?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `fields[0]` is field 3 (the state), so field N is `fields[N - 3]`.
    Some(ProcStat {
        pid,
        zombie: *fields.first()? == "Z",
        ppid: fields.get(1)?.parse().ok()?,
        pgid: fields.get(2)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

/// Every process's stat line, one snapshot (processes that end while it is read are skipped).
pub(crate) fn table() -> Vec<ProcStat> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(stat)
        .collect()
}

/// Whether the environment of `pid` holds exactly `entry` (`NAME=value`). False when it cannot
/// be read (gone, another user's).
pub(crate) fn environ_has(pid: i32, entry: &[u8]) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .is_ok_and(|raw| raw.split(|byte| *byte == 0).any(|var| var == entry))
}

/// A process named so it cannot be mistaken for a later one with the same pid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessId {
    pub pid: u32,
    /// Start time in clock ticks after boot (`/proc/<pid>/stat` field 22).
    pub start: u64,
}

impl ProcessId {
    /// This process.
    pub fn current() -> Option<Self> {
        Self::of(std::process::id())
    }

    /// The process that has `pid` now, if any.
    pub fn of(pid: u32) -> Option<Self> {
        let stat = stat(i32::try_from(pid).ok()?)?;
        Some(Self {
            pid,
            start: stat.start,
        })
    }

    /// Whether this very process still runs: its pid exists, with the same start time, and is
    /// not a zombie. A reused pid (another start time) is not it.
    pub fn is_running(&self) -> bool {
        i32::try_from(self.pid)
            .ok()
            .and_then(stat)
            .is_some_and(|now| now.start == self.start && !now.zombie)
    }

    /// Whether this very process still exists, running or as a zombie not yet reaped (its
    /// group id is still its own then).
    pub fn exists(&self) -> bool {
        i32::try_from(self.pid)
            .ok()
            .and_then(stat)
            .is_some_and(|now| now.start == self.start)
    }

    /// `<pid>:<start>`, the form owner files and the watchdog's pipe carry.
    pub fn to_text(self) -> String {
        format!("{}:{}", self.pid, self.start)
    }

    /// Reads [`ProcessId::to_text`]'s form.
    pub fn from_text(text: &str) -> Option<Self> {
        let (pid, start) = text.trim().split_once(':')?;
        Some(Self {
            pid: pid.parse().ok()?,
            start: start.parse().ok()?,
        })
    }

    /// A process that has certainly ended: a child that ran `true` and was reaped.
    #[cfg(test)]
    #[allow(clippy::unwrap_used)] // test code: a failed step should panic
    pub fn ended() -> Self {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let id = Self::of(child.id()).unwrap();
        child.wait().unwrap();
        id
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_is_read_past_a_command_name_with_spaces_and_parentheses() {
        let line = "4242 (a (b) c) S 17 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 \
                    987654 1000 10 18446744073709551615";
        assert_eq!(
            parse_stat(4242, line),
            Some(ProcStat {
                pid: 4242,
                ppid: 17,
                pgid: 4242,
                start: 987_654,
                zombie: false,
            })
        );
        let zombie = "7 (x) Z 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 55";
        assert!(parse_stat(7, zombie).unwrap().zombie);
        assert_eq!(parse_stat(7, "7 (x) S 1"), None);
    }

    #[test]
    fn this_process_runs_and_a_changed_start_time_is_someone_else() {
        let me = ProcessId::current().unwrap();
        assert!(me.is_running());
        assert!(table().iter().any(|entry| entry.pid as u32 == me.pid));
        let reused = ProcessId {
            start: me.start + 1,
            ..me
        };
        assert!(!reused.is_running(), "same pid, other start time");
        assert_eq!(ProcessId::from_text(&me.to_text()), Some(me));
        assert_eq!(ProcessId::from_text("12"), None);
    }

    #[test]
    fn a_reaped_child_is_not_running() {
        assert!(!ProcessId::ended().is_running());
    }
}
