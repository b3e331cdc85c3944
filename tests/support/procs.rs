//! Looking at processes from /proc, to prove what the workbench leaves running and where its
//! children run.

use std::path::PathBuf;
use std::time::Duration;

use super::wait::eventually;

/// Direct children of `pid`, apart from a workbench's watchdog (which outlives the workbench
/// by design, for as long as it takes to kill what the workbench left): see [`watchdog_of`].
pub fn children(pid: u32) -> Vec<u32> {
    all_children(pid)
        .into_iter()
        .filter(|child| !is_watchdog(*child))
        .collect()
}

/// The watchdog the workbench `pid` started (`unipi-tui __watchdog …`), if it runs.
pub fn watchdog_of(pid: u32) -> Option<u32> {
    all_children(pid)
        .into_iter()
        .find(|child| is_watchdog(*child))
}

fn is_watchdog(pid: u32) -> bool {
    cmdline(pid).contains(unipi_tui::sys::watchdog::SUBCOMMAND)
}

fn all_children(pid: u32) -> Vec<u32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .flat_map(|task| {
            std::fs::read_to_string(task.path().join("children"))
                .unwrap_or_default()
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// Running (not gone, not a zombie waiting for a reaper).
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| !stat.contains(") Z"))
        .unwrap_or(false)
}

/// The command line of `pid`, arguments separated by spaces (empty once it is gone).
pub fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|raw| String::from_utf8_lossy(&raw).replace('\0', " "))
        .unwrap_or_default()
}

/// The working directory of `pid`, as the kernel knows it.
pub fn cwd(pid: u32) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/cwd")).ok()
}

/// Whether `pid`'s environment holds every one of `entries` (`NAME=value`).
pub fn has_env(pid: u32, entries: &[&str]) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .map(|raw| {
            let vars: Vec<&[u8]> = raw.split(|b| *b == 0).collect();
            entries.iter().all(|entry| vars.contains(&entry.as_bytes()))
        })
        .unwrap_or(false)
}

fn all_pids() -> impl Iterator<Item = u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
}

/// Live processes whose environment holds every one of `entries` (`NAME=value`).
pub fn processes_with_env(entries: &[&str]) -> Vec<u32> {
    all_pids()
        .filter(|pid| has_env(*pid, entries) && alive(*pid))
        .collect()
}

/// Live processes whose command line contains `needle`.
pub fn processes_running(needle: &str) -> Vec<u32> {
    all_pids()
        .filter(|pid| cmdline(*pid).contains(needle) && alive(*pid))
        .collect()
}

/// Waits until a process whose command line contains `needle` runs; returns their pids.
pub fn wait_for_process(needle: &str, timeout: Duration) -> Vec<u32> {
    eventually(format!("a process `{needle}` runs"), timeout, || {
        let found = processes_running(needle);
        (!found.is_empty()).then_some(found)
    })
}
