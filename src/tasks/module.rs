//! The bridge face of the background tasks: the `bg_*` tools, what `/unipi:bg` starts and the
//! notification's message type. Argument handling is pure (`parse_run_args`,
//! [`parse_bg_command`]) and worded as the reference so the model sees the same errors; the
//! work is the [`TaskService`]'s.

use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use super::config::TasksConfig;
use super::logs::{bounded_read, format_log_text, normalize_max_bytes};
use super::model::{
    TaskInfo, TaskOrigin, delivery_guidance, format_task_list, resolve_task_name, truncate_chars,
};
use super::notify::NOTIFICATION_TYPE;
use super::service::{RunRequest, TaskService};
use crate::bridge::{
    AgentId, Card, CardTint, CommandReply, HEADLESS_WAIT_LIMIT, MessageTypeSpec, Module,
    NotifyLevel, Refusal, ToolCall, ToolError, ToolOutput, ToolSpec, WakeReach,
};
use crate::config::live::LiveConfig;
use crate::text::non_blank_str;

/// Declares the tools and message type, and runs the tools against the service.
#[derive(Clone)]
pub struct TasksModule {
    service: TaskService,
    /// `background-tasks.json`, followed: the task defaults apply to the next task.
    config: LiveConfig<TasksConfig>,
}

impl TasksModule {
    pub const RUN: &'static str = "bg_run";
    pub(crate) const STATUS: &'static str = "bg_status";
    pub(crate) const LOGS: &'static str = "bg_logs";
    pub(crate) const KILL: &'static str = "bg_kill";

    pub fn new(service: TaskService, config: impl Into<LiveConfig<TasksConfig>>) -> Self {
        Self {
            service,
            config: config.into(),
        }
    }

    pub fn service(&self) -> &TaskService {
        &self.service
    }

    /// Runs `/unipi:bg <args>` for `agent`: starts the task with the notification but no wake,
    /// and says what started (or why not) as Pi's notice.
    pub async fn run_user_command(&self, agent: AgentId, args: &str) -> CommandReply {
        let parsed = match parse_bg_command(args) {
            Ok(parsed) => parsed,
            Err(message) => {
                return CommandReply::Failed {
                    message: format!("Background task failed to start: {message}"),
                };
            }
        };
        // A print or JSON run ends right after the command: say that the task goes with it.
        let ends_now = self.service.wake_reach(&agent) != WakeReach::Anytime;
        let request = RunRequest {
            name: resolve_task_name(parsed.name.as_deref(), None, &parsed.command),
            command: parsed.command,
            description: None,
            timeout_seconds: self.config.get().default_timeout_seconds,
            notify_on_completion: true,
            trigger_on_completion: false,
            is_agent: parsed.is_agent,
            origin: TaskOrigin::User,
            agent,
        };
        match self.service.start(request).await {
            Ok(task) => CommandReply::Notify {
                message: format!(
                    "Started {} ({})\nOutput: {}\nCommand: {}{}",
                    task.name,
                    task.id,
                    task.output_path,
                    task.command,
                    if ends_now {
                        "\nThis run ends now, and the task is stopped with it."
                    } else {
                        ""
                    }
                ),
                level: NotifyLevel::Info,
            },
            Err(err) => CommandReply::Failed {
                message: err.to_string(),
            },
        }
    }

    async fn bg_run(&self, agent: AgentId, args: Value) -> Result<ToolOutput, ToolError> {
        let mut request =
            parse_run_args(&args, &self.config.get(), agent).map_err(ToolError::new)?;
        let reach = self.service.wake_reach(&request.agent);
        let note = fit_to_run(&mut request, reach).map_err(ToolError::new)?;
        let task = self
            .service
            .start(request)
            .await
            .map_err(|err| ToolError::new(err.to_string()))?;
        let mut text = run_result_text(&task);
        if let Some(note) = note {
            text.push('\n');
            text.push_str(&note);
        }
        Ok(ToolOutput::text(text)
            .with_details(json!({ "task": task }))
            .with_card(&launch_card(&task)))
    }

    fn bg_status(&self, args: &Value) -> Result<ToolOutput, ToolError> {
        let registry = self.service.registry();
        let tasks = match optional_string(args, "taskId")? {
            Some(id) => vec![
                registry
                    .resolve(&id)
                    .map_err(|e| ToolError::new(e.to_string()))?,
            ],
            None => registry.snapshot(),
        };
        Ok(
            ToolOutput::text(format_task_list(&tasks, crate::sys::now_ms()))
                .with_details(json!({ "tasks": tasks })),
        )
    }

    fn bg_logs(&self, args: &Value) -> Result<ToolOutput, ToolError> {
        let id = optional_string(args, "taskId")?.unwrap_or_default();
        let task = self
            .service
            .resolve(&id)
            .map_err(|e| ToolError::new(e.to_string()))?;
        let max_bytes = normalize_max_bytes(args.get("maxBytes").and_then(Value::as_f64));
        let tail = args.get("tail").and_then(Value::as_bool).unwrap_or(true);
        let path = std::path::Path::new(&task.output_path);
        if !path.exists() {
            return Err(ToolError::new(format!(
                "Output file does not exist for {}: {}",
                task.id, task.output_path
            )));
        }
        let read = bounded_read(path, max_bytes, tail)?;
        Ok(
            ToolOutput::text(format_log_text(&read, tail, &task.output_path)).with_details(json!({
                "task": task,
                "path": task.output_path,
                "bytesRead": read.bytes_read,
                "totalBytes": read.total_bytes,
                "truncated": read.truncated,
                "tail": tail,
            })),
        )
    }

    async fn bg_kill(&self, args: Value) -> Result<ToolOutput, ToolError> {
        let id = optional_string(&args, "taskId")?.unwrap_or_default();
        let task = self
            .service
            .stop(&id)
            .await
            .map_err(|e| ToolError::new(e.to_string()))?;
        let message = format!(
            "Killed background task {} ({}). Output: {}",
            task.name, task.id, task.output_path
        );
        Ok(ToolOutput::text(message.clone())
            .with_details(json!({ "task": task, "message": message })))
    }
}

impl Module for TasksModule {
    fn name(&self) -> &'static str {
        "tasks"
    }

    fn tools(&self) -> Vec<ToolSpec> {
        let task_id = json!({"type": "string", "description": "Task id or an unambiguous prefix"});
        vec![
            ToolSpec::new(
                Self::RUN,
                "Background Run",
                "Start a named long-running shell command (build, test run, dev server) in the \
                 background and keep working. Its end is delivered as a \
                 <background-task-notification> that, by default, starts a follow-up turn: do not \
                 poll or sleep to wait for it.",
            )
            .string_param("name", "A 2-6 word name for the task", false)
            .string_param("command", "The shell command to run", true)
            .string_param("description", "What the task is for (optional)", false)
            .number_param(
                "timeoutSeconds",
                "Stop the task after this many seconds",
                false,
            )
            .boolean_param(
                "notifyOnCompletion",
                "Send a terminal notification when the task ends (default true)",
                false,
            )
            .boolean_param(
                "triggerOnCompletion",
                "Let that notification start a follow-up turn (default true)",
                false,
            )
            .boolean_param(
                "isAgent",
                "True only for LLM/agent tasks; false for scripts, tests, servers and ordinary \
                 commands (default false)",
                false,
            )
            .prompt_snippet("bg_run: run a long shell command in the background; its end wakes you")
            .guideline("Use bg_run for commands that take longer than a few seconds (builds, test suites, dev servers) instead of running them in the foreground.")
            .guideline("Give every bg_run task a 2-6 word name.")
            .guideline("After bg_run, never sleep or poll with bg_status/bg_logs to wait; continue independent work or end the turn, and wait for the <background-task-notification>.")
            .guideline("Treat a <background-task-notification> as the durable terminal truth of a bg_run task; use bg_logs only if you need its output."),
            ToolSpec::new(
                Self::STATUS,
                "Background Status",
                "Point-in-time status of one background task (by id or unambiguous prefix) or of \
                 all of them. Not a polling primitive.",
            )
            .param("taskId", task_id.clone(), false),
            ToolSpec::new(
                Self::LOGS,
                "Background Logs",
                "Bounded read of a background task's output: the tail (default) or the head, at \
                 most 50.0KB.",
            )
            .param("taskId", task_id.clone(), true)
            .number_param(
                "maxBytes",
                "At most this many bytes (default and maximum 50.0KB)",
                false,
            )
            .boolean_param("tail", "Read the end (true, default) or the start (false)", false),
            ToolSpec::new(
                Self::KILL,
                "Background Kill",
                "Stop a running background task and its whole process group.",
            )
            .param("taskId", task_id, true),
        ]
    }

    fn message_types(&self) -> Vec<MessageTypeSpec> {
        vec![MessageTypeSpec::new(NOTIFICATION_TYPE, "Background task")]
    }

    fn call_tool(&self, call: ToolCall) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let module = self.clone();
        Box::pin(async move {
            if !call.args.is_object() && !call.args.is_null() {
                return Err(ToolError::new(format!(
                    "{} arguments must be an object",
                    call.tool
                )));
            }
            match call.tool.as_str() {
                Self::RUN => module.bg_run(call.agent, call.args).await,
                Self::STATUS => module.bg_status(&call.args),
                Self::LOGS => module.bg_logs(&call.args),
                Self::KILL => module.bg_kill(call.args).await,
                other => Err(ToolError::new(format!(
                    "module `tasks` declares no tool `{other}`"
                ))),
            }
        })
    }
}

/// `bg_run`'s arguments, normalized, as the task `agent` starts.
pub(crate) fn parse_run_args(
    args: &Value,
    config: &TasksConfig,
    agent: AgentId,
) -> Result<RunRequest, Refusal> {
    let Some(object) = args.as_object() else {
        return Err("bg_run arguments must be an object".into());
    };
    let Some(command) = object.get("command").and_then(Value::as_str) else {
        return Err("bg_run requires command string".into());
    };
    let command = command.trim().to_string();
    if command.is_empty() {
        return Err("Background command is empty".into());
    }
    let text = |key: &str| non_blank_str(object.get(key)).map(str::to_string);
    let flag = |key: &str, default: bool| match object.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(value)) => Ok(*value),
        Some(_) => Err(format!("bg_run {key} must be a boolean")),
    };
    let timeout_seconds = object
        .get("timeoutSeconds")
        .and_then(Value::as_f64)
        .filter(|secs| secs.is_finite() && *secs >= 1.0)
        .map(|secs| secs.floor() as u64)
        .or(config.default_timeout_seconds);
    let description = text("description");
    Ok(RunRequest {
        name: resolve_task_name(text("name").as_deref(), description.as_deref(), &command),
        command,
        description,
        timeout_seconds,
        notify_on_completion: flag("notifyOnCompletion", config.notify_on_completion)?,
        trigger_on_completion: flag("triggerOnCompletion", config.trigger_on_completion)?,
        is_agent: flag("isAgent", false)?,
        origin: TaskOrigin::Agent,
        agent,
    })
}

/// Fits a `bg_run` request to how long its agent's run lasts ([`WakeReach`]). Where the run
/// ends as soon as the agent stops (print or JSON mode), a task that will wake the agent must end
/// within the run's wait — one without a timeout is given [`HEADLESS_WAIT_LIMIT`], a longer one is
/// refused — or is refused outright where the run cannot wait at all; a task that will not wake
/// the agent is stopped with the run. Returns the line the result adds (so nothing is lost
/// silently), or the refusal for the model.
pub(crate) fn fit_to_run(
    request: &mut RunRequest,
    reach: WakeReach,
) -> Result<Option<String>, Refusal> {
    let wakes = request.notify_on_completion && request.trigger_on_completion;
    let max = HEADLESS_WAIT_LIMIT.as_secs();
    let foreground = "run the command in the foreground (bash) instead";
    match (reach, wakes) {
        (WakeReach::Anytime, _) => Ok(None),
        (_, false) => Ok(Some(
            "This run ends when you stop, and the task is stopped with it; its end will not \
             reach you."
                .to_owned(),
        )),
        (WakeReach::Never, true) => Err(reach
            .refusal(
                "a background task",
                &format!(
                    "{foreground}, or pass triggerOnCompletion: false for a task this run need \
                     not wait for (it is stopped when the run ends)"
                ),
            )
            .unwrap_or_default()
            .into()),
        (WakeReach::WithinRun, true) => {
            let asked = request.timeout_seconds.map(Duration::from_secs);
            if let Some(refused) = reach.refusal_for(
                "a background task",
                asked,
                &format!("set timeoutSeconds to at most {max}, or {foreground}"),
            ) {
                return Err(refused.into());
            }
            if request.timeout_seconds.is_none() {
                request.timeout_seconds = Some(max);
                return Ok(Some(format!(
                    "This run waits for the task and wakes you when it ends; as no timeoutSeconds \
                     was given, it is stopped after {max} s."
                )));
            }
            Ok(Some(
                "This run waits for the task (at most its timeout) and wakes you when it ends."
                    .to_owned(),
            ))
        }
    }
}

/// The `bg_run` result text: what started, where its output goes, and how its end is delivered.
pub(crate) fn run_result_text(task: &TaskInfo) -> String {
    let pid = task
        .pid
        .map_or_else(|| "unknown".to_string(), |pid| pid.to_string());
    let guidance = delivery_guidance(task.notify_on_completion, task.trigger_on_completion);
    format!(
        "Started background task {} ({})\nStatus: {}\nPID: {pid}\nOutput: {}\n{}",
        task.name,
        task.id,
        task.status.as_str(),
        task.output_path,
        guidance.join("\n")
    )
}

/// The launch card of a `bg_run` result: `● bg started <name> · wakes agent on completion`,
/// then the command and where its output goes.
pub(crate) fn launch_card(task: &TaskInfo) -> Card {
    let delivery = match (task.notify_on_completion, task.trigger_on_completion) {
        (true, true) => "wakes agent on completion",
        (true, false) => "notifies on completion",
        (false, _) => "no completion notice",
    };
    Card::new(
        format!("● bg started {} · {delivery}", task.name),
        CardTint::Info,
    )
    .line(format!(
        "$ {}",
        truncate_chars(&task.command, CARD_COMMAND_CHARS)
    ))
    .line(format!("output: {}", task.output_path))
    .footer(task.id.clone())
}

/// A card shows the start of a long command, not all of it.
const CARD_COMMAND_CHARS: usize = 200;

/// `/unipi:bg`'s arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BgCommand {
    pub name: Option<String>,
    pub is_agent: bool,
    pub command: String,
}

/// Parses `[--agent|--llm-agent] [--script|--no-agent] [--name v|--name=v|-n v|-n=v] [--] <cmd>`.
pub(crate) fn parse_bg_command(input: &str) -> Result<BgCommand, Refusal> {
    let mut rest = input.trim();
    let mut name = None;
    let mut is_agent = false;
    loop {
        let (word, after) = split_word(rest);
        match word {
            "--agent" | "--llm-agent" => is_agent = true,
            "--script" | "--no-agent" => is_agent = false,
            "--" => {
                rest = after;
                break;
            }
            "--name" | "-n" => {
                let (value, after) =
                    take_value(after).ok_or_else(|| format!("{word} requires a task name"))?;
                name = Some(value);
                rest = after;
                continue;
            }
            _ if word.starts_with("--name=") || word.starts_with("-n=") => {
                let flag_len = if word.starts_with("-n=") { 3 } else { 7 };
                let flag = &word[..flag_len];
                let (value, after) = take_value(&rest[flag_len..])
                    .ok_or_else(|| format!("{flag} requires a task name"))?;
                name = Some(value);
                rest = after;
                continue;
            }
            _ => break,
        }
        rest = after;
    }
    let command = rest.trim().to_string();
    if command.is_empty() {
        return Err("Background command is empty".into());
    }
    Ok(BgCommand {
        name,
        is_agent,
        command,
    })
}

fn split_word(text: &str) -> (&str, &str) {
    let text = text.trim_start();
    match text.find(char::is_whitespace) {
        Some(end) => (&text[..end], text[end..].trim_start()),
        None => (text, ""),
    }
}

/// A flag value: a quoted string (backslash escapes honoured) or one word.
fn take_value(text: &str) -> Option<(String, &str)> {
    let text = text.trim_start();
    let quote = text.chars().next().filter(|c| *c == '"' || *c == '\'');
    let Some(quote) = quote else {
        let (word, after) = split_word(text);
        return (!word.is_empty()).then(|| (word.to_string(), after));
    };
    let mut value = String::new();
    let mut escaped = false;
    for (index, ch) in text.char_indices().skip(1) {
        if escaped {
            value.push(ch);
            escaped = false;
        } else if ch == '\\' {
            escaped = true;
        } else if ch == quote {
            let after = text[index + ch.len_utf8()..].trim_start();
            return (!value.trim().is_empty()).then_some((value, after));
        } else {
            value.push(ch);
        }
    }
    None
}

fn optional_string(args: &Value, key: &str) -> Result<Option<String>, ToolError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(_) => Err(ToolError::new(format!("{key} must be a string"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::model::TaskStatus;

    #[test]
    fn run_args_are_normalized() {
        let config = TasksConfig::default();
        let ok = parse_run_args(
            &json!({"command": "  make  ", "name": " Build ", "timeoutSeconds": 2.9, "description": "  "}),
            &config,
            AgentId::main(),
        )
        .unwrap();
        assert_eq!(ok.command, "make");
        assert_eq!(ok.name, "Build");
        assert_eq!(ok.description, None);
        assert_eq!(ok.timeout_seconds, Some(2));
        assert!(ok.notify_on_completion && ok.trigger_on_completion && !ok.is_agent);

        let errors = [
            (json!("make"), "bg_run arguments must be an object"),
            (json!({}), "bg_run requires command string"),
            (json!({"command": 3}), "bg_run requires command string"),
            (json!({"command": "   "}), "Background command is empty"),
            (
                json!({"command": "x", "isAgent": "yes"}),
                "bg_run isAgent must be a boolean",
            ),
        ];
        for (args, want) in errors {
            assert_eq!(
                parse_run_args(&args, &config, AgentId::main()).unwrap_err(),
                want,
                "{args}"
            );
        }
        let no_timeout = [json!(0), json!(-1), json!("10"), json!(0.5)];
        for value in no_timeout {
            let args = json!({"command": "x", "timeoutSeconds": value});
            assert_eq!(
                parse_run_args(&args, &config, AgentId::main())
                    .unwrap()
                    .timeout_seconds,
                None
            );
        }
        let quiet = TasksConfig {
            trigger_on_completion: false,
            default_timeout_seconds: Some(60),
            ..TasksConfig::default()
        };
        let args = parse_run_args(&json!({"command": "x"}), &quiet, AgentId::main()).unwrap();
        assert!(!args.trigger_on_completion);
        assert_eq!(args.timeout_seconds, Some(60));
    }

    #[test]
    fn run_requests_fit_how_long_the_run_lasts() {
        let request = |timeout: Option<u64>, trigger: bool| RunRequest {
            timeout_seconds: timeout,
            trigger_on_completion: trigger,
            ..parse_run_args(
                &json!({"command": "make"}),
                &TasksConfig::default(),
                AgentId::main(),
            )
            .unwrap()
        };
        // (reach, timeout, wakes) → timeout after, Ok(note contains) / Err(refusal contains)
        type Case = (
            WakeReach,
            Option<u64>,
            bool,
            Option<u64>,
            Result<&'static str, &'static str>,
        );
        let cases: [Case; 8] = [
            (WakeReach::Anytime, None, true, None, Ok("")),
            (WakeReach::Anytime, Some(99_999), true, Some(99_999), Ok("")),
            (
                WakeReach::WithinRun,
                None,
                true,
                Some(1800),
                Ok("stopped after 1800 s"),
            ),
            (
                WakeReach::WithinRun,
                Some(60),
                true,
                Some(60),
                Ok("at most its timeout"),
            ),
            (
                WakeReach::WithinRun,
                Some(3600),
                true,
                Some(3600),
                Err("set timeoutSeconds to at most 1800"),
            ),
            (
                WakeReach::WithinRun,
                None,
                false,
                None,
                Ok("stopped with it"),
            ),
            (
                WakeReach::Never,
                Some(60),
                true,
                Some(60),
                Err("run the command in the foreground (bash)"),
            ),
            (WakeReach::Never, None, false, None, Ok("stopped with it")),
        ];
        for (reach, timeout, wakes, after, want) in cases {
            let mut asked = request(timeout, wakes);
            let got = fit_to_run(&mut asked, reach);
            let case = format!("{reach:?} {timeout:?} wakes={wakes}");
            assert_eq!(asked.timeout_seconds, after, "{case}");
            match (got, want) {
                (Ok(None), Ok("")) => {}
                (Ok(Some(note)), Ok(part)) if !part.is_empty() => {
                    assert!(note.contains(part), "{case}: {note}");
                }
                (Err(refusal), Err(part)) => assert!(refusal.contains(part), "{case}: {refusal}"),
                (got, want) => panic!("{case}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn bg_command_flags_table() {
        let cases = [
            ("make all", None, false, "make all"),
            ("--agent pi -p hi", None, true, "pi -p hi"),
            ("--name build make", Some("build"), false, "make"),
            (
                "-n \"my \\\"big\\\" build\" make -j4",
                Some("my \"big\" build"),
                false,
                "make -j4",
            ),
            (
                "--name='dev server' -- npm run dev",
                Some("dev server"),
                false,
                "npm run dev",
            ),
            ("-- --name x", None, false, "--name x"),
        ];
        for (input, name, is_agent, command) in cases {
            let parsed = parse_bg_command(input).unwrap();
            assert_eq!(parsed.name.as_deref(), name, "{input}");
            assert_eq!(parsed.is_agent, is_agent, "{input}");
            assert_eq!(parsed.command, command, "{input}");
        }
        assert_eq!(
            parse_bg_command("--name \"open").unwrap_err(),
            "--name requires a task name"
        );
        assert_eq!(
            parse_bg_command("").unwrap_err(),
            "Background command is empty"
        );
    }

    #[test]
    fn run_result_lists_id_pid_output_and_guidance() {
        let task = TaskInfo {
            id: "bg-0a0b0c".into(),
            name: "tests".into(),
            command: "cargo test".into(),
            description: None,
            status: TaskStatus::Running,
            cwd: "/w".into(),
            output_path: "/tmp/bg-0a0b0c.log".into(),
            pid: Some(99),
            notify_on_completion: true,
            trigger_on_completion: true,
            agent: "main".into(),
            ..TaskInfo::default()
        };
        let text = run_result_text(&task);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[..4],
            [
                "Started background task tests (bg-0a0b0c)",
                "Status: running",
                "PID: 99",
                "Output: /tmp/bg-0a0b0c.log",
            ]
        );
        assert_eq!(lines[4..], delivery_guidance(true, true));

        let cases = [
            (true, true, "● bg started tests · wakes agent on completion"),
            (true, false, "● bg started tests · notifies on completion"),
            (false, true, "● bg started tests · no completion notice"),
        ];
        for (notify, trigger, title) in cases {
            let task = TaskInfo {
                notify_on_completion: notify,
                trigger_on_completion: trigger,
                ..task.clone()
            };
            let card = launch_card(&task);
            assert_eq!(card.title, title);
            assert_eq!(card.tint, CardTint::Info);
            assert_eq!(
                card.lines,
                ["$ cargo test", "output: /tmp/bg-0a0b0c.log"],
                "{title}"
            );
            assert_eq!(card.footer.as_deref(), Some("bg-0a0b0c"));
        }
    }
}
