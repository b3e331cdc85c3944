//! The loop's bridge module: the tools the model drives it with, `ralph_start` (name, task,
//! items per iteration, reflection interval, limit) and `ralph_done` (this iteration is done:
//! queue the next); `/unipi:ralph` is listed under it.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use super::engine::{Engine, Task};
use super::state::{self, Options};
use crate::bridge::{Module, ToolCall, ToolError, ToolOutput, ToolSpec};

pub(crate) const MODULE_NAME: &str = "ralph";
const START: &str = "ralph_start";
const DONE: &str = "ralph_done";

pub(crate) struct RalphModule {
    pub(crate) engine: Arc<Engine>,
}

fn start_spec() -> ToolSpec {
    let count = |about: &str| json!({"type": "integer", "minimum": 0, "description": about});
    ToolSpec::new(
        START,
        "Start Ralph Loop",
        "Start a long-running loop over a task: the task is written to .unipi/ralph/<name>.md \
         and each iteration hands it to you again, until you answer <promise>COMPLETE</promise> \
         or the iteration limit is reached. Call ralph_done at the end of each iteration.",
    )
    .param(
        "name",
        json!({"type": "string", "description": "The loop's name (letters, digits, _ and -)"}),
        true,
    )
    .param(
        "taskContent",
        json!({"type": "string", "description": "The task in markdown: goals and a checklist"}),
        true,
    )
    .param(
        "itemsPerIteration",
        count("Items to take on each iteration (0: no limit)"),
        false,
    )
    .param(
        "reflectEvery",
        count("A reflection turn every N iterations (0: none)"),
        false,
    )
    .param(
        "maxIterations",
        count("Iterations before the loop ends by itself (default 50; 0: no limit)"),
        false,
    )
    .prompt_snippet("Start a long-running Ralph loop over a task that takes many iterations.")
    .guideline(
        "Use ralph_start for long work with many items (three or more tasks): give a name and \
         the task with a checklist, then work on it iteration by iteration.",
    )
}

fn done_spec() -> ToolSpec {
    ToolSpec::new(
        DONE,
        "Ralph Iteration Done",
        "Finish this iteration of the running Ralph loop and queue the next one.",
    )
    .prompt_snippet("End the current Ralph loop iteration and queue the next.")
    .guideline(
        "Call ralph_done only after real progress in a Ralph loop iteration, and never after \
         answering <promise>COMPLETE</promise>.",
    )
}

/// `ralph_start`'s arguments.
fn start_args(args: &Value) -> Result<(String, String, Options), ToolError> {
    let text = |key: &str| {
        args.get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| ToolError::new(format!("{START}: `{key}` must be a non-empty string")))
    };
    let name = state::sanitize(text("name")?);
    text("taskContent")?;
    // Written as the model gave it (checked non-blank above).
    let task = args
        .get("taskContent")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let mut options = Options::default();
    for (key, slot) in [
        ("itemsPerIteration", &mut options.items_per_iteration),
        ("reflectEvery", &mut options.reflect_every),
        ("maxIterations", &mut options.max_iterations),
    ] {
        match args.get(key) {
            None | Some(Value::Null) => {}
            Some(value) => {
                *slot = value
                    .as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| {
                        ToolError::new(format!(
                            "{START}: `{key}` must be a whole number (0 or more), not {value}"
                        ))
                    })?;
            }
        }
    }
    Ok((name, task, options))
}

impl Module for RalphModule {
    fn name(&self) -> &'static str {
        MODULE_NAME
    }

    fn tools(&self) -> Vec<ToolSpec> {
        vec![start_spec(), done_spec()]
    }

    fn call_tool(&self, call: ToolCall) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let engine = Arc::clone(&self.engine);
        Box::pin(async move {
            match call.tool.as_str() {
                START => {
                    let (name, task, options) = start_args(&call.args)?;
                    let started = engine
                        .start(&call.agent, &name, Task::Content(task), options)
                        .await;
                    Ok(ToolOutput::text(match started {
                        Ok((state, _)) => format!(
                            "Started loop \"{}\" (max {} iterations).",
                            state.name,
                            match state.max_iterations {
                                0 => "no limit on".to_owned(),
                                max => max.to_string(),
                            }
                        ),
                        Err(refusal) => refusal.into_text(),
                    }))
                }
                DONE => Ok(ToolOutput::text(engine.done(&call.agent).await)),
                other => Err(ToolError::new(format!(
                    "module `{MODULE_NAME}` declares no tool `{other}`"
                ))),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_arguments_are_checked_and_default_to_unipis() {
        let (name, task, options) = start_args(&json!({"name": "my loop", "taskContent": "# T"}))
            .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!((name.as_str(), task.as_str()), ("my_loop", "# T"));
        assert_eq!(options, Options::default());
        let (_, _, options) = start_args(&json!({
            "name": "x", "taskContent": "t", "itemsPerIteration": 2, "reflectEvery": 3,
            "maxIterations": 0
        }))
        .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(
            options,
            Options {
                max_iterations: 0,
                items_per_iteration: 2,
                reflect_every: 3
            }
        );
        let err = |args: Value| format!("{:?}", start_args(&args).err());
        assert!(err(json!({"taskContent": "t"})).contains("`name` must be a non-empty string"));
        assert!(err(json!({"name": "x", "taskContent": " "})).contains("`taskContent`"));
        assert!(
            err(json!({"name": "x", "taskContent": "t", "maxIterations": -1}))
                .contains("`maxIterations` must be a whole number")
        );
    }
}
