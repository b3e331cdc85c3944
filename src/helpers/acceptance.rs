//! The acceptance gate: after a helper says it is done, its work is accepted only when the
//! verify commands the caller named (`gate: "cargo test"` or `acceptance: {commands: […]}`)
//! all exit 0 in the workspace. A rejection carries the failing command, its exit and the tail
//! of its output, so the model can act on it without rerunning anything.
//!
//! Each command runs as `sh -c` in its own process group with null stdin; a timeout or a
//! cancelled call kills the whole group (a test runner's children included), and the group is
//! killed on drop too, so an abandoned gate leaves nothing behind.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt as _;
use tokio::process::Command;

use super::args::Acceptance;
use crate::bridge::CancelToken;
use crate::sys::{GroupGuard, Reach, SpawnGrouped as _};

/// The most output kept from a failing command.
pub(crate) const OUTPUT_TAIL_BYTES: usize = 4_000;

/// Why the gate rejected a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rejection {
    pub command: String,
    /// `exit 1`, `killed after the 300 s timeout`, `could not start: …`.
    pub outcome: String,
    /// The end of its combined output.
    pub output_tail: String,
}

impl std::fmt::Display for Rejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "acceptance gate rejected the run: `{}` {}",
            self.command, self.outcome
        )?;
        if !self.output_tail.trim().is_empty() {
            write!(
                f,
                "\n--- output (tail) ---\n{}",
                self.output_tail.trim_end()
            )?;
        }
        Ok(())
    }
}

/// Runs the gate's commands in order in `cwd`; the first that does not exit 0 rejects.
pub(crate) async fn evaluate(
    acceptance: &Acceptance,
    cwd: &Path,
    cancel: &CancelToken,
) -> Result<(), Rejection> {
    for command in &acceptance.commands {
        run_one(command, cwd, acceptance.timeout, cancel).await?;
    }
    Ok(())
}

async fn run_one(
    command: &str,
    cwd: &Path,
    timeout: Duration,
    cancel: &CancelToken,
) -> Result<(), Rejection> {
    let reject = |outcome: String, output_tail: String| Rejection {
        command: command.to_string(),
        outcome,
        output_tail,
    };
    let (mut child, group) = Command::new("/bin/sh")
        .arg("-c")
        // stderr joins stdout so the tail shows both in the order they were written.
        .arg(format!("exec 2>&1; {command}"))
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn_grouped()
        .map_err(|err| reject(format!("could not start: {err}"), String::new()))?;
    // Kills the command's group when dropped: on a timeout, a cancel, the gate abandoned, and
    // after a normal exit whatever the command left running.
    let group = GroupGuard::new(group, Reach::Group);
    let mut stdout = child.stdout.take();
    let mut output = Vec::new();
    let read = async {
        if let Some(stdout) = stdout.as_mut() {
            let mut buf = [0u8; 8192];
            loop {
                match stdout.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        output.extend_from_slice(&buf[..n]);
                        // Keep a bounded tail: a chatty test run must not grow memory.
                        if output.len() > OUTPUT_TAIL_BYTES * 4 {
                            output.drain(..output.len() - OUTPUT_TAIL_BYTES * 2);
                        }
                    }
                }
            }
        }
        child.wait().await
    };
    let status = tokio::select! {
        status = read => status,
        () = tokio::time::sleep(timeout) => {
            drop(group);
            return Err(reject(
                format!("was killed after the {} s timeout", timeout.as_secs()),
                String::new(),
            ));
        }
        () = cancel.cancelled() => {
            drop(group);
            return Err(reject("was cancelled".to_string(), String::new()));
        }
    };
    let tail = tail(&output);
    match status {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(reject(
            match status.code() {
                Some(code) => format!("exited with {code}"),
                None => "was killed by a signal".to_string(),
            },
            tail,
        )),
        Err(err) => Err(reject(format!("could not be waited for: {err}"), tail)),
    }
}

fn tail(output: &[u8]) -> String {
    let text = String::from_utf8_lossy(output);
    let mut start = text.len().saturating_sub(OUTPUT_TAIL_BYTES);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    text[start..].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bridge::CancelHandle;

    fn gate(commands: &[&str], timeout: Duration) -> Acceptance {
        Acceptance {
            commands: commands.iter().map(|c| c.to_string()).collect(),
            timeout,
        }
    }

    #[tokio::test]
    async fn all_commands_must_pass() {
        let dir = tempfile::tempdir().unwrap();
        let ok = gate(&["true", "test -d ."], Duration::from_secs(10));
        evaluate(&ok, dir.path(), &CancelToken::never())
            .await
            .unwrap();

        let marker = dir.path().join("ran");
        let failing = gate(
            &[
                "echo checking; echo broken >&2; exit 3",
                &format!("touch '{}'", marker.display()),
            ],
            Duration::from_secs(10),
        );
        let rejection = evaluate(&failing, dir.path(), &CancelToken::never())
            .await
            .unwrap_err();
        assert_eq!(rejection.outcome, "exited with 3");
        assert!(
            rejection.output_tail.contains("checking\nbroken"),
            "{rejection:?}"
        );
        assert!(!marker.exists(), "a command after the failing one ran");
        assert!(rejection.to_string().contains("`echo checking"));
    }

    #[tokio::test]
    async fn a_timeout_kills_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let slow = gate(
            &[&format!(
                "sleep 30 & echo $! > '{}'; wait",
                pid_file.display()
            )],
            Duration::from_millis(500),
        );
        let rejection = evaluate(&slow, dir.path(), &CancelToken::never())
            .await
            .unwrap_err();
        assert!(rejection.outcome.contains("timeout"), "{rejection:?}");
        let pid: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // The grandchild `sleep` was in the killed group.
        // A killed orphan may linger as a zombie where PID 1 does not reap: that is gone too.
        crate::test_wait::eventually(
            format!("sleep {pid} to end after the gate's timeout"),
            Duration::from_secs(1),
            || crate::sys::tree::has_ended(pid),
        )
        .await;
    }

    #[tokio::test]
    async fn cancel_ends_the_gate() {
        let dir = tempfile::tempdir().unwrap();
        let (handle, token) = CancelHandle::pair();
        let slow = gate(&["sleep 30"], Duration::from_secs(60));
        let run = tokio::spawn(async move { evaluate(&slow, dir.path(), &token).await });
        tokio::time::sleep(Duration::from_millis(200)).await;
        handle.cancel();
        let rejection = run.await.unwrap().unwrap_err();
        assert_eq!(rejection.outcome, "was cancelled");
    }
}
