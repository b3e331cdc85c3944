//! Running one tool call: the module's future in its own task (so a panic is a `JoinError`, not
//! a dead connection), raced against the call's timeout and its cancellation, and always
//! answered with exactly one `tool_result` — the module's output, or an error result that says
//! what went wrong in words the model can act on.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::{JoinError, JoinHandle};

use super::AgentId;
use super::host_state::HostState;
use super::module::{
    CancelHandle, CancelToken, ContentBlock, ToolCall, ToolError, ToolOutput, UpdateSender,
};
use super::protocol::{HostMessage, ToolCallMsg};
use crate::sys::lock;

/// Answers one of Pi's hooks from the first module that takes it, in a task of its own (a panic
/// or a timeout answers `null`, which leaves the decision to Pi), and always writes exactly one
/// `hook_result`.
pub(crate) fn spawn_hook(
    state: &Arc<HostState>,
    agent: AgentId,
    out: mpsc::Sender<String>,
    hook: super::protocol::HookMsg,
) {
    let call = super::module::HookCall {
        agent: agent.clone(),
        name: hook.name.clone(),
        data: hook.data,
    };
    let answer = state.registry.hook(&call);
    let timeout = state.options.hook_timeout;
    let state = state.clone();
    tokio::spawn(async move {
        let result = match answer {
            None => serde_json::Value::Null,
            Some((module, future)) => {
                let task = tokio::spawn(future);
                match tokio::time::timeout(timeout, task).await {
                    Ok(Ok(value)) => value,
                    Ok(Err(err)) => {
                        let message = format!(
                            "module `{module}` failed answering Pi's `{}` hook: {err}",
                            hook.name
                        );
                        tracing::error!("bridge: {message}");
                        state.fault(Some(agent.clone()), message);
                        serde_json::Value::Null
                    }
                    Err(_) => {
                        let message = format!(
                            "module `{module}` did not answer Pi's `{}` hook within {}",
                            hook.name,
                            seconds(timeout)
                        );
                        tracing::warn!("bridge: {message}");
                        state.fault(Some(agent.clone()), message);
                        serde_json::Value::Null
                    }
                }
            }
        };
        let line = HostMessage::HookResult {
            id: hook.id,
            result,
        }
        .to_line();
        let _ = out.send(line).await;
    });
}

/// The hook a print or JSON run's extension sends from Pi's `agent_settled` (see
/// [`super::wakes`]): answered once nothing is owed to the agent any more.
pub(crate) const SETTLE_HOOK: &str = "agent_settled";

/// Answers a [`SETTLE_HOOK`] once every wake promised to `agent` came (each promise bounds its
/// own wait), or at once when none is owed; gives up when the connection closes (Pi is gone).
pub(crate) fn spawn_settle_hold(
    state: &Arc<HostState>,
    agent: AgentId,
    out: mpsc::Sender<String>,
    id: u64,
) {
    let wakes = state.wakes.clone();
    tokio::spawn(async move {
        let owed = wakes.owed_to(&agent);
        if !owed.is_empty() {
            tracing::info!(
                "bridge: agent `{agent}` settled; its run waits for {}",
                owed.join(", ")
            );
        }
        tokio::select! {
            () = wakes.kept(&agent) => {}
            () = out.closed() => return,
        }
        let line = HostMessage::HookResult {
            id,
            result: serde_json::Value::Null,
        }
        .to_line();
        let _ = out.send(line).await;
    });
}

/// Starts `call` and returns at once; the result is written to `out` when it is ready.
pub(crate) fn spawn_call(
    state: &Arc<HostState>,
    agent: AgentId,
    out: mpsc::Sender<String>,
    inflight: Arc<Mutex<HashMap<u64, CancelHandle>>>,
    call: ToolCallMsg,
) {
    let id = call.id;
    let (module, timeout) = match state.registry.tool(&call.tool) {
        Ok(found) => found,
        Err(message) => {
            tracing::warn!("bridge: agent `{agent}` called an unknown tool: {message}");
            let line = error_result(id, ToolError::new(message));
            tokio::spawn(async move {
                let _ = out.send(line).await;
            });
            return;
        }
    };
    let timeout = timeout.unwrap_or(state.options.tool_timeout);
    let grace = state.options.cancel_grace;
    let state = state.clone();
    let (handle, cancel) = CancelHandle::pair();
    lock(&inflight).insert(id, handle.clone());
    tokio::spawn(async move {
        let tool = call.tool.clone();
        let module_name = module.name();
        let request = ToolCall {
            agent: agent.clone(),
            tool: call.tool,
            call_id: call.call_id,
            args: call.args,
            updates: UpdateSender::new(out.clone(), id),
            cancel: cancel.clone(),
        };
        // The module is called inside the task, so a panic before its future even exists is
        // caught the same way as one while it runs.
        let mut task = tokio::spawn(async move { module.call_tool(request).await });
        let site = CallSite {
            state: &state,
            agent: &agent,
            module: module_name,
            tool: &tool,
        };
        let (outcome, winding_down) =
            await_call(&mut task, &site, timeout, grace, &handle, &cancel).await;
        lock(&inflight).remove(&id);
        if let Err(err) = &outcome {
            tracing::debug!(
                "bridge: tool `{tool}` of `{module_name}` failed: {}",
                err.message
            );
        }
        let line = match outcome {
            Ok(output) => HostMessage::ToolResult {
                id,
                content: output.content,
                details: output.details,
                is_error: false,
            }
            .to_line(),
            Err(err) => error_result(id, err),
        };
        let _ = out.send(line).await;
        if winding_down && tokio::time::timeout(grace, &mut task).await.is_err() {
            task.abort();
        }
    });
}

/// Who called which tool of which module: the words of a call's outcome.
struct CallSite<'a> {
    state: &'a HostState,
    agent: &'a AgentId,
    module: &'a str,
    tool: &'a str,
}

/// Waits for the module's answer, the deadline or Pi's cancel. The flag says the module was
/// cut off at the deadline and still has `grace` to wind down once Pi has its answer.
async fn await_call(
    task: &mut JoinHandle<Result<ToolOutput, ToolError>>,
    site: &CallSite<'_>,
    timeout: Duration,
    grace: Duration,
    handle: &CancelHandle,
    cancel: &CancelToken,
) -> (Result<ToolOutput, ToolError>, bool) {
    let CallSite {
        state,
        agent,
        module,
        tool,
    } = *site;
    tokio::select! {
        joined = &mut *task => (joined_outcome(joined, state, agent, module, tool), false),
        () = tokio::time::sleep(timeout) => {
            // Pi gets its answer now; the module gets the cancel and a moment to wind
            // down (below) before it is dropped.
            handle.cancel();
            let stopped = ToolError::new(format!(
                "`{tool}` did not finish within {} and was stopped",
                seconds(timeout)
            ));
            (Err(stopped), true)
        }
        () = cancel.cancelled() => {
            // Pi aborted the call (or the connection closed): give the module a moment to
            // return what it has, then drop it.
            let outcome = match tokio::time::timeout(grace, &mut *task).await {
                Ok(joined) => joined_outcome(joined, state, agent, module, tool),
                Err(_) => {
                    task.abort();
                    Err(ToolError::new(format!("`{tool}` was cancelled")))
                }
            };
            (outcome, false)
        }
    }
}

fn joined_outcome(
    joined: Result<Result<ToolOutput, ToolError>, JoinError>,
    state: &HostState,
    agent: &AgentId,
    module: &str,
    tool: &str,
) -> Result<ToolOutput, ToolError> {
    match joined {
        Ok(outcome) => outcome,
        Err(err) if err.is_panic() => {
            let payload = err.into_panic();
            let reason = payload
                .downcast_ref::<&str>()
                .map(|text| (*text).to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".to_string());
            tracing::error!("bridge: tool `{tool}` of module `{module}` panicked: {reason}");
            state.fault(
                Some(agent.clone()),
                format!("module `{module}` panicked in tool `{tool}`: {reason}"),
            );
            Err(ToolError::new(format!(
                "`{tool}` failed: the unipi-tui module `{module}` panicked ({reason}); the session \
                 continues, but this tool may not work until the workbench restarts"
            )))
        }
        Err(_) => Err(ToolError::new(format!("`{tool}` was stopped"))),
    }
}

fn error_result(id: u64, err: ToolError) -> String {
    HostMessage::ToolResult {
        id,
        content: vec![ContentBlock::text(err.message)],
        details: err.details,
        is_error: true,
    }
    .to_line()
}

fn seconds(duration: Duration) -> String {
    let secs = duration.as_secs_f64();
    if secs >= 1.0 && secs.fract() == 0.0 {
        format!("{secs:.0} s")
    } else {
        format!("{secs:.1} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_seconds() {
        let cases = [
            (Duration::from_secs(120), "120 s"),
            (Duration::from_millis(300), "0.3 s"),
            (Duration::from_millis(1500), "1.5 s"),
        ];
        for (duration, expected) in cases {
            assert_eq!(seconds(duration), expected);
        }
    }
}
