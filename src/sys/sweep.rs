//! The watchdog process (`unipi-tui __watchdog <token> <log>`, started by
//! [`super::watchdog::start`]): it follows the workbench's registry of process groups on its
//! stdin, and when the pipe closes — the workbench is gone, by a clean exit or by `kill -9` —
//! it kills whatever of the workbench's is left, then exits.
//!
//! The sweep repeats until a look at `/proc` finds nothing left (a process forking while it is
//! killed shows up in the next round), at most [`SWEEP_LIMIT`]. Each round's targets:
//! - the members of every registered group whose leader is still the process that was registered
//!   (same pid, same start time: a reused group id is never touched);
//! - every process whose environment carries this workbench's token;
//! - every descendant of those.
//!
//! It never touches itself, and never signals a whole group it did not see registered: the
//! workbench's own group may hold the user's other processes (`unipi-tui | tee log`).

use std::collections::{HashMap, HashSet};
use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use nix::sys::signal::{SigSet, SigmaskHow, Signal, kill, killpg, sigprocmask};
use nix::unistd::Pid;

use super::procfs::{self, ProcStat};
use super::tree::descendants_in;
use super::watchdog::{Message, TOKEN_ENV};

/// How long a sweep may go on: the promise is "gone within 2 s of the workbench's death".
pub(crate) const SWEEP_LIMIT: Duration = Duration::from_millis(1500);
/// The pause between two rounds of a sweep.
const ROUND_PAUSE: Duration = Duration::from_millis(20);
/// Registered groups are checked for leaders that are gone every this many registrations, so a
/// long session whose owners never unregister does not grow the set without end.
const PRUNE_EVERY: usize = 256;

/// The watchdog's `main`: `args` are what follows the subcommand (token, log file).
pub fn main(args: &[String]) -> ExitCode {
    let (Some(token), log) = (args.first(), args.get(1)) else {
        eprintln!("unipi-tui: the watchdog needs a token");
        return ExitCode::from(2);
    };
    detach();
    let owner = nix::unistd::getppid();
    let groups = follow(std::io::stdin().lock());
    let started = Instant::now();
    let tag = format!("{TOKEN_ENV}={token}");
    let killed = sweep(tag.as_bytes(), &groups, SWEEP_LIMIT);
    if !killed.is_empty()
        && let Some(log) = log
    {
        report(Path::new(log), owner, &killed, started.elapsed());
    }
    ExitCode::SUCCESS
}

/// Out of the way of whatever stops the workbench: a session of its own (no terminal, so no
/// SIGHUP or SIGINT from it), and the signals a supervisor sends a whole session or group
/// (SIGTERM, SIGHUP, SIGINT, SIGQUIT) blocked — only the pipe's end ends it. Blocking is
/// enough and needs no signal handler; SIGKILL still works, as it must.
fn detach() {
    // Fails only for a group leader, which a freshly spawned child is not.
    let _ = nix::unistd::setsid();
    let mut blocked = SigSet::empty();
    for signal in [
        Signal::SIGHUP,
        Signal::SIGINT,
        Signal::SIGQUIT,
        Signal::SIGTERM,
        Signal::SIGPIPE,
        Signal::SIGTSTP,
        Signal::SIGTTIN,
        Signal::SIGTTOU,
    ] {
        blocked.add(signal);
    }
    let _ = sigprocmask(SigmaskHow::SIG_BLOCK, Some(&blocked), None);
}

/// Reads the registry from the pipe until it closes; returns the groups registered last.
fn follow(input: impl std::io::BufRead) -> HashMap<i32, u64> {
    let mut groups = HashMap::new();
    let mut added = 0usize;
    for line in input.split(b'\n') {
        // A read error is as final as EOF: nothing more will come.
        let Ok(line) = line else { break };
        match Message::parse(&String::from_utf8_lossy(&line)) {
            Some(Message::Watch(leader)) => {
                let Ok(pgid) = i32::try_from(leader.pid) else {
                    continue;
                };
                groups.insert(pgid, leader.start);
                added += 1;
                if added % PRUNE_EVERY == 0 {
                    groups.retain(|pgid, start| {
                        procfs::stat(*pgid).is_some_and(|stat| stat.start == *start)
                    });
                }
            }
            Some(Message::Unwatch(pgid)) => {
                groups.remove(&pgid);
            }
            None => {}
        }
    }
    groups
}

/// Kills what is left (see the module doc) in rounds until nothing is, at most `limit`;
/// returns every pid it signalled.
pub(crate) fn sweep(tag: &[u8], groups: &HashMap<i32, u64>, limit: Duration) -> Vec<i32> {
    let me = i32::try_from(std::process::id()).unwrap_or(0);
    let started = Instant::now();
    let mut killed: Vec<i32> = Vec::new();
    loop {
        let table = procfs::table();
        let verified = verified_groups(&table, groups);
        let targets = targets(&table, &verified, me, |pid| procfs::environ_has(pid, tag));
        if targets.is_empty() {
            break;
        }
        for pgid in &verified {
            let _ = killpg(Pid::from_raw(*pgid), Signal::SIGKILL);
        }
        for pid in &targets {
            let _ = kill(Pid::from_raw(*pid), Signal::SIGKILL);
            if !killed.contains(pid) {
                killed.push(*pid);
            }
        }
        if started.elapsed() >= limit {
            break;
        }
        std::thread::sleep(ROUND_PAUSE);
    }
    killed
}

/// The registered groups whose leader is still the registered process (alive or a zombie not
/// yet reaped): only these may be signalled as a whole.
fn verified_groups(table: &[ProcStat], groups: &HashMap<i32, u64>) -> Vec<i32> {
    groups
        .iter()
        .filter(|(pgid, start)| {
            table
                .iter()
                .any(|entry| entry.pid == **pgid && entry.start == **start)
        })
        .map(|(pgid, _)| *pgid)
        .collect()
}

/// The live processes to kill: members of `verified` groups, processes `tagged` says carry the
/// token, and every descendant of those — never `me`, never a zombie (it is dead already).
fn targets(
    table: &[ProcStat],
    verified: &[i32],
    me: i32,
    tagged: impl Fn(i32) -> bool,
) -> Vec<i32> {
    let mut found: Vec<i32> = table
        .iter()
        .filter(|entry| entry.pid != me && (verified.contains(&entry.pgid) || tagged(entry.pid)))
        .map(|entry| entry.pid)
        .collect();
    let below = descendants_in(table, &found);
    found.extend(below);
    let live: HashSet<i32> = table
        .iter()
        .filter(|entry| !entry.zombie && entry.pid != me)
        .map(|entry| entry.pid)
        .collect();
    found.retain(|pid| live.contains(pid));
    found.sort_unstable();
    found.dedup();
    found
}

/// One line in the workbench's log: what the workbench left behind and the watchdog killed.
fn report(log: &Path, owner: Pid, killed: &[i32], took: Duration) {
    let line = format!(
        "{} WARN unipi_tui::sys::sweep: watchdog: the workbench (pid {owner}) is gone; killed {} \
         process(es) it left running in {took:?}: {killed:?}\n",
        super::time::now_ms(),
        killed.len(),
    );
    let appended = std::fs::OpenOptions::new()
        .append(true)
        .open(log)
        .and_then(|mut file| file.write_all(line.as_bytes()));
    // Nowhere else to say it: stderr is closed.
    drop(appended);
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use std::io::BufRead as _;

    use super::*;

    fn entry(pid: i32, ppid: i32, pgid: i32, start: u64) -> ProcStat {
        ProcStat {
            pid,
            ppid,
            pgid,
            start,
            zombie: false,
        }
    }

    #[test]
    fn only_groups_whose_leader_is_the_registered_process_are_verified() {
        let table = [entry(10, 1, 10, 500), entry(20, 1, 20, 999)];
        let groups = HashMap::from([(10, 500), (20, 600), (30, 700)]);
        let mut verified = verified_groups(&table, &groups);
        verified.sort_unstable();
        // 20 is a reused id (another start time); 30 has no leader any more.
        assert_eq!(verified, vec![10]);
    }

    #[test]
    fn targets_are_group_members_tagged_processes_and_their_descendants() {
        let table = [
            entry(1, 0, 1, 1),
            entry(5, 1, 5, 2),    // me
            entry(10, 1, 10, 3),  // a verified group's leader
            entry(11, 1, 10, 4),  // its orphaned member (parent gone)
            entry(12, 11, 12, 5), // the member's child in a group of its own
            entry(20, 1, 20, 6),  // tagged (a tool call that left Pi's session)
            entry(21, 20, 21, 7), // its child
            entry(30, 1, 30, 8),  // someone else's
            ProcStat {
                zombie: true,
                ..entry(13, 10, 10, 9)
            },
        ];
        let found = targets(&table, &[10], 5, |pid| pid == 20 || pid == 5);
        assert_eq!(found, vec![10, 11, 12, 20, 21]);
    }

    #[test]
    fn the_registry_follows_watch_and_unwatch_lines_until_eof() {
        let input: &[u8] = b"+10:500\n+20:600\n-10\ngarbage\n+30:7";
        let groups = follow(input);
        assert_eq!(groups, HashMap::from([(20, 600), (30, 7)]));
    }

    #[test]
    fn a_sweep_kills_a_tagged_process_and_what_it_started() {
        let tag = format!("{TOKEN_ENV}=test-{}", std::process::id());
        let (name, value) = tag.split_once('=').unwrap();
        // A tagged shell in a session of its own with a grandchild: what Pi's tool calls are.
        let mut child = std::process::Command::new("setsid")
            .args(["sh", "-c", "sleep 317 & echo $!; wait"])
            .env(name, value)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let grandchild: i32 = line.trim().parse().unwrap();
        let killed = sweep(tag.as_bytes(), &HashMap::new(), SWEEP_LIMIT);
        assert!(killed.contains(&grandchild), "{killed:?}");
        child.wait().unwrap();
        assert!(super::super::tree::has_ended(grandchild));
        // Nothing is left: a second sweep finds nothing.
        assert!(sweep(tag.as_bytes(), &HashMap::new(), SWEEP_LIMIT).is_empty());
    }
}
