//! The sidekick runtime: one long-lived `pi --mode rpc --no-session --no-tools --model <sidekick>`
//! the workbench owns, started when a pair is applied (so it is warm when the first side
//! question comes) and stopped when the pair changes or the workbench ends. It answers side
//! questions and names sessions: each [`SidekickRuntime::ask`] starts a fresh in-memory session
//! (`new_session`), sends the prompt, follows Pi's events to the end of the run — `agent_settled`
//! on Pi 1.x, a `get_state` probe after `agent_end` on 0.7x, the same [`SettleWatch`] the helpers
//! use — and returns the last answer with the call's usage. Questions are served one at a time.
//!
//! The process is launched like the main Pi (program, launcher arguments, environment; the
//! demo's offline settings) without the bridge extension: a side question needs no workbench
//! tools. It runs in a process group of its own, registered in a [`GroupGuard`] so a dropped
//! runtime kills it; a process that died is started again at the next question.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::config::ModelRef;
use crate::bridge::Refusal;
use crate::capability::ChildPi;
use crate::helpers::events::{
    EventParser, PROMPT_ID, PiEvent, RunSummary, SettleStep, SettleWatch, Usage,
};
use crate::sys::{
    CurrentGroup, GroupGuard, ProcessGroup, Reach, SpawnGrouped as _, lock, sleep_until_some,
    stop_group,
};

/// How long a stopped runtime has between SIGTERM and SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(3);
/// How long Pi may take to answer the `new_session` that starts each question.
const RESET_WAIT: Duration = Duration::from_secs(30);
/// The pause before a `get_state` probe is repeated while Pi 0.7x still reports work.
const PROBE_PAUSE: Duration = Duration::from_millis(300);
/// The most stderr kept, for the error of a process that died.
const STDERR_KEEP: usize = 4 * 1024;

/// The answer to one question.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub text: String,
    pub usage: Usage,
    /// `provider/id` as Pi named the model that answered.
    pub model: Option<String>,
}

/// The running process.
struct Process {
    child: Child,
    group: ProcessGroup,
    stdin: ChildStdin,
    events: mpsc::UnboundedReceiver<PiEvent>,
    stderr: Arc<Mutex<String>>,
    /// Its output ended (it exited, or is exiting and not reaped yet).
    ended: bool,
}

impl Process {
    fn exited(&mut self) -> bool {
        self.ended || !matches!(self.child.try_wait(), Ok(None))
    }

    /// The next event; `None` once the output ended (remembered).
    async fn next_event(&mut self) -> Option<PiEvent> {
        let event = self.events.recv().await;
        self.ended |= event.is_none();
        event
    }

    /// Writes one command (a JSON object's text) and a line feed.
    async fn send(&mut self, command: &str) -> Result<(), Refusal> {
        let mut line = command.to_owned();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await.map_err(|err| {
            format!(
                "the sidekick's input is closed ({err}){}",
                self.stderr_tail()
            )
        })?;
        self.stdin
            .flush()
            .await
            .map_err(|err| format!("the sidekick's input is closed ({err})").into())
    }

    fn stderr_tail(&self) -> String {
        let tail = lock(&self.stderr).trim().to_owned();
        if tail.is_empty() {
            String::new()
        } else {
            format!(": {tail}")
        }
    }

    async fn stop(mut self) {
        drop(self.stdin);
        let (_, outcome) = tokio::join!(self.child.wait(), stop_group(self.group, STOP_GRACE));
        tracing::debug!("sidekick runtime stopped: {outcome:?}");
    }
}

/// The sidekick's Pi, started on demand and kept until stopped.
pub struct SidekickRuntime {
    launch: ChildPi,
    cwd: PathBuf,
    model: Mutex<Option<ModelRef>>,
    process: tokio::sync::Mutex<Option<Process>>,
    /// The live process's group (what [`SidekickRuntime::kill_now`] and the guard kill).
    group: Arc<CurrentGroup>,
    _guard: GroupGuard,
}

impl SidekickRuntime {
    pub fn new(launch: ChildPi, cwd: PathBuf) -> Self {
        let group = Arc::new(CurrentGroup::new(None, Reach::Tree));
        SidekickRuntime {
            launch,
            cwd,
            model: Mutex::new(None),
            process: tokio::sync::Mutex::new(None),
            _guard: GroupGuard::over(group.clone()),
            group,
        }
    }

    /// The model it runs, if any.
    pub fn model(&self) -> Option<ModelRef> {
        lock(&self.model).clone()
    }

    /// Stops the running process (if any) and starts one on `model`; it is ready for questions
    /// once Pi has started (a question sent earlier waits in its input).
    pub async fn restart(&self, model: ModelRef) -> anyhow::Result<()> {
        let mut process = self.process.lock().await;
        if let Some(old) = process.take() {
            self.group.clear();
            old.stop().await;
        }
        *lock(&self.model) = Some(model.clone());
        *process = Some(self.spawn(&model)?);
        Ok(())
    }

    /// Stops the process; questions are refused until the next [`SidekickRuntime::restart`].
    pub async fn stop(&self) {
        *lock(&self.model) = None;
        let old = self.process.lock().await.take();
        if let Some(old) = old {
            self.group.clear();
            old.stop().await;
        }
    }

    /// SIGKILL now (the panic path).
    pub fn kill_now(&self) {
        self.group.kill_now();
    }

    /// The process group of the running process (tests, logs).
    pub fn group(&self) -> Option<ProcessGroup> {
        self.group.get()
    }

    /// Asks `prompt` in a fresh session and waits for the answer, at most `limit`.
    pub async fn ask(&self, prompt: &str, limit: Duration) -> Result<Answer, Refusal> {
        let deadline = Instant::now() + limit;
        let mut slot = self.process.lock().await;
        let model = self
            .model()
            .ok_or("model fusion is off: no sidekick runs")?;
        if slot.as_mut().is_none_or(Process::exited) {
            if let Some(dead) = slot.take() {
                tracing::info!(
                    "sidekick runtime had ended{}; starting it again",
                    dead.stderr_tail()
                );
                self.group.clear();
                dead.stop().await;
            }
            *slot = Some(self.spawn(&model)?);
        }
        let Some(process) = slot.as_mut() else {
            return Err("the sidekick could not be started".into());
        };
        while process.events.try_recv().is_ok() {}
        let outcome = tokio::time::timeout_at(deadline, converse(process, prompt)).await;
        match outcome {
            Ok(answer) => answer,
            Err(_) => {
                // Whatever it was doing is abandoned; the next question starts afresh.
                let _ = process.send(&json!({"type": "abort"}).to_string()).await;
                Err(format!("the sidekick did not answer within {limit:?}").into())
            }
        }
    }

    fn spawn(&self, model: &ModelRef) -> anyhow::Result<Process> {
        let mut command = Command::new(&self.launch.program);
        command
            .args(&self.launch.leading_args)
            .args(["--mode", "rpc", "--no-session", "--no-tools", "--model"])
            .arg(model.to_string())
            .current_dir(&self.cwd)
            .envs(self.launch.env.iter().map(|(key, value)| (key, value)))
            .envs(crate::pi::compile_cache::env_for(
                &self.cwd,
                &self.launch.env,
            ))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(false);
        let (mut child, group) = command
            .spawn_grouped()
            .with_context(|| format!("start the sidekick {}", self.launch.program.display()))?;
        self.group.set(group);
        let (Some(stdin), Some(mut stdout), Some(mut stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            group.kill_now();
            anyhow::bail!("the sidekick's pipes were not created");
        };
        let (events_tx, events) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut parser = EventParser::new();
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match stdout.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        for event in parser.feed(&buf[..n]) {
                            let _ = events_tx.send(event);
                        }
                    }
                }
            }
            for event in parser.finish() {
                let _ = events_tx.send(event);
            }
        });
        let tail = Arc::new(Mutex::new(String::new()));
        let tail_writer = tail.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 8 * 1024];
            while let Ok(n) = stderr.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                let mut tail = lock(&tail_writer);
                tail.push_str(&String::from_utf8_lossy(&buf[..n]));
                if tail.len() > STDERR_KEEP {
                    let cut = tail.len() - STDERR_KEEP;
                    let cut = (cut..tail.len())
                        .find(|at| tail.is_char_boundary(*at))
                        .unwrap_or(0);
                    tail.drain(..cut);
                }
            }
        });
        tracing::info!(
            "sidekick runtime started on {model} (group {})",
            group.raw()
        );
        Ok(Process {
            child,
            group,
            stdin,
            events,
            stderr: tail,
            ended: false,
        })
    }
}

/// One question: a fresh session, the prompt, the run followed to its end.
async fn converse(process: &mut Process, prompt: &str) -> Result<Answer, Refusal> {
    process
        .send(&json!({"id": "fresh", "type": "new_session"}).to_string())
        .await?;
    let reset_by = Instant::now() + RESET_WAIT;
    loop {
        let event = tokio::time::timeout_at(reset_by, process.next_event())
            .await
            .map_err(|_| "the sidekick did not start a fresh session".to_owned())?;
        match event {
            None => return Err(format!("the sidekick exited{}", process.stderr_tail()).into()),
            Some(PiEvent::Response(response)) if response.id.as_deref() == Some("fresh") => {
                if !response.success {
                    return Err(format!(
                        "the sidekick refused a fresh session: {}",
                        response.error.unwrap_or_default()
                    )
                    .into());
                }
                break;
            }
            Some(_) => {}
        }
    }
    process
        .send(&json!({"id": PROMPT_ID, "type": "prompt", "message": prompt}).to_string())
        .await?;
    let mut settle = SettleWatch::new();
    let mut summary = RunSummary::default();
    let mut model = None;
    let mut probe_at: Option<Instant> = None;
    loop {
        tokio::select! {
            event = process.next_event() => {
                let Some(event) = event else {
                    return Err(format!("the sidekick exited{}", process.stderr_tail()).into());
                };
                summary.apply(&event);
                if let PiEvent::MessageEnd(message) = &event
                    && message.role == "assistant"
                    && message.model.is_some()
                {
                    model.clone_from(&message.model);
                }
                match settle.on_event(&event) {
                    SettleStep::Nothing => {}
                    SettleStep::Probe { command, .. } => {
                        process.send(&command).await?;
                    }
                    SettleStep::ProbeLater => probe_at = Some(Instant::now() + PROBE_PAUSE),
                    SettleStep::Settled => break,
                    SettleStep::PromptFailed(error) => {
                        return Err(format!("the sidekick refused the question: {error}").into());
                    }
                }
            }
            () = sleep_until_some(probe_at) => {
                probe_at = None;
                if let SettleStep::Probe { command, .. } = settle.probe() {
                    process.send(&command).await?;
                }
            }
        }
    }
    match summary.error {
        Some(error) if summary.final_text.trim().is_empty() => Err(error.into()),
        _ => Ok(Answer {
            text: summary.final_text.trim().to_owned(),
            usage: summary.usage,
            model,
        }),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use super::*;

    /// A stand-in Pi in RPC mode (a shell script): answers `new_session`, then for a prompt
    /// prints an assistant message with usage and `agent_settled`; `die` makes it exit.
    const FAKE_PI: &str = r#"
while IFS= read -r line; do
  case "$line" in
    *new_session*) echo '{"type":"response","id":"fresh","command":"new_session","success":true,"data":{"cancelled":false}}' ;;
    *'"message":"die"'*) exit 3 ;;
    *prompt*)
      echo '{"type":"response","id":"task","command":"prompt","success":true,"data":{"disposition":"started"}}'
      echo '{"type":"agent_start"}'
      echo '{"type":"message_end","message":{"role":"assistant","provider":"p","model":"small","content":[{"type":"text","text":"forty-two"}],"stopReason":"stop","usage":{"input":100,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":105,"cost":{"total":0.0005}}}}'
      echo '{"type":"agent_end"}'
      echo '{"type":"agent_settled","aborted":false}' ;;
  esac
done
"#;

    fn runtime(dir: &std::path::Path) -> SidekickRuntime {
        let script = dir.join("fake-pi.sh");
        std::fs::write(&script, FAKE_PI).unwrap();
        SidekickRuntime::new(
            ChildPi {
                program: PathBuf::from("/bin/sh"),
                leading_args: vec![script.display().to_string()],
                env: Vec::new(),
            },
            dir.to_path_buf(),
        )
    }

    /// The sidekick is started like every Pi: with jiti's and Node's caches made private, or off
    /// when its TMPDIR's `jiti` and `node-compile-cache` are not ours.
    #[tokio::test]
    async fn the_sidekick_gets_the_private_cache_switch() {
        let dir = tempfile::tempdir().unwrap();
        let dump = dir.path().join("env");
        let tmp = crate::pi::compile_cache::foreign_tmpdir();
        let runtime = SidekickRuntime::new(
            ChildPi {
                program: PathBuf::from("/bin/sh"),
                leading_args: vec!["-c".into(), format!("env > '{}'", dump.display())],
                env: vec![("TMPDIR".into(), tmp.path().display().to_string())],
            },
            dir.path().to_path_buf(),
        );
        runtime
            .restart(ModelRef::parse("p/small").unwrap())
            .await
            .unwrap();
        // It exits at once; the question only makes sure it was started.
        let _ = runtime.ask("hello", Duration::from_secs(10)).await;
        runtime.stop().await;
        let dump = std::fs::read_to_string(&dump).unwrap();
        assert!(crate::pi::compile_cache::caches_are_off_in(&dump), "{dump}");
    }

    #[tokio::test]
    async fn asks_in_a_fresh_session_restarts_a_dead_process_and_stops_its_group() {
        let dir = tempfile::tempdir().unwrap();
        let runtime = runtime(dir.path());
        let off = runtime
            .ask("hello", Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(off.contains("fusion is off"), "{off}");
        runtime
            .restart(ModelRef::parse("p/small").unwrap())
            .await
            .unwrap();
        let answer = runtime
            .ask("what is it?", Duration::from_secs(10))
            .await
            .unwrap();
        assert_eq!(answer.text, "forty-two");
        assert_eq!(answer.model.as_deref(), Some("p/small"));
        assert_eq!((answer.usage.input, answer.usage.output), (100, 5));
        assert!((answer.usage.cost - 0.0005).abs() < 1e-12);
        // A process that died is started again for the next question.
        let first = runtime.group().unwrap();
        let died = runtime
            .ask("die", Duration::from_secs(10))
            .await
            .unwrap_err();
        assert!(died.contains("exited"), "{died}");
        let again = runtime
            .ask("and now?", Duration::from_secs(10))
            .await
            .unwrap();
        assert_eq!(again.text, "forty-two");
        let second = runtime.group().unwrap();
        assert_ne!(first, second);
        runtime.stop().await;
        assert!(!second.alive(), "the group is gone after stop");
        assert!(runtime.ask("x", Duration::from_secs(1)).await.is_err());
    }
}
