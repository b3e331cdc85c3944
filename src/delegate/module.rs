//! The `delegate` bridge module: `bg_delegate` launches one read-only child agent seeded with a
//! frozen projection of the calling agent's conversation, `bg_result` reads its verified answer,
//! and a `delegate-result-notification` follow-up wakes the agent when the child ends.
//!
//! The module owns the parent's half of the protocol in [`super::artifacts`], one step a file:
//! `launch`, a preflight that refuses before anything exists (arguments, session file, route
//! pinned to a model Pi lists, window, seed budget), then the task directory with `seed.json`
//! (re-hashed after writing) and the manifest; `supervise`, the child process (`unipi-tui
//! __delegate-child`, its own process group) to its exit; `adjudicate`, which verifies
//! `result.json` against the manifest, writes `outcome.json` and moves the manifest to its
//! terminal state; then the dock's row is updated and the answer delivered inline or as an
//! artifact reference, never shortened.
//!
//! What the module needs from the app comes through [`DelegateHost`] (the models Pi can use and
//! where notifications go; the [`BridgeHost`] in the app, a channel in tests) and
//! [`DelegateModule::observe`] (each agent's session file and current model, from `session_start`
//! and `model_select` on the event bus).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::json;

use super::artifacts::{Outcome, PiCommand};
use super::config::DelegateConfig;
use super::service::DelegateService;
use crate::bridge::{
    AgentId, BridgeHost, BusEvent, EventBus, MessageTypeSpec, Module, PiEvent, ToolCall, ToolError,
    ToolOutput, ToolSpec,
};
use crate::config::live::LiveConfig;
use crate::config::module_file::ModuleConfig as _;
use crate::helpers::board::{HelperBoard, RunControl as _};
use crate::sys::lock;
use crate::tasks::TASKS_CONFIG_FILE;

#[cfg(test)]
pub(crate) use super::args::parse_delegate_args;
pub use super::host::{ChannelHost, DelegateHost, DelegateSettings, ParentSession};
pub use super::report::NOTIFICATION_TYPE;
#[cfg(test)]
pub(crate) use super::route::resolve_route;
pub use super::supervise::STOP_GRACE;

/// The tool names.
pub const DELEGATE_TOOL: &str = "bg_delegate";
pub const RESULT_TOOL: &str = "bg_result";

/// The `delegate` module. Cheap to clone (shared state).
#[derive(Clone)]
pub struct DelegateModule {
    inner: Arc<DelegateService>,
}

impl DelegateModule {
    pub fn new(settings: DelegateSettings) -> Self {
        Self {
            inner: Arc::new(DelegateService {
                settings,
                host: Mutex::new(None),
                board: Mutex::new(None),
                sessions: Mutex::new(HashMap::new()),
                tasks: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The module as the app starts it: config from `background-tasks.json` (home, then the
    /// workspace), the child run from this executable. `None` when delegates are disabled; the
    /// config errors are for the app's notice.
    pub fn for_app(
        home: Option<&Path>,
        workspace: &Path,
        pi: PiCommand,
        env: Vec<(String, String)>,
    ) -> (
        anyhow::Result<Option<Self>>,
        Vec<crate::config::ConfigError>,
    ) {
        let (config, errors) =
            LiveConfig::module(home, workspace, &[TASKS_CONFIG_FILE], DelegateConfig::load);
        if !config.get().enabled {
            return (Ok(None), errors);
        }
        let settings = DelegateSettings::new(workspace.to_path_buf(), pi, env, config);
        (settings.map(|settings| Some(Self::new(settings))), errors)
    }

    /// Connects a registered module to the running bridge: models and notifications through
    /// `host`, session files and models from the registry's event bus.
    pub fn connect(&self, host: BridgeHost, bus: &EventBus) {
        self.attach_host(Arc::new(host));
        self.watch_bus(bus);
    }

    /// Where models come from and completions go; without a host every launch is refused
    /// (`route_unresolved`: no models are known).
    pub fn attach_host(&self, host: Arc<dyn DelegateHost>) {
        *lock(&self.inner.host) = Some(host);
    }

    /// The dock's board: a row per delegate, with a stop control.
    pub fn attach_board(&self, board: HelperBoard) {
        *lock(&self.inner.board) = Some(board);
    }

    /// Follows `session_start` and `model_select` on the bus (runs until the bus closes).
    pub(crate) fn watch_bus(&self, bus: &EventBus) -> tokio::task::JoinHandle<()> {
        let module = self.clone();
        let mut events = bus.subscribe();
        tokio::spawn(async move {
            loop {
                match events.recv().await {
                    Ok(BusEvent::Pi { agent, event }) => module.observe(&agent, &event),
                    Ok(_) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                }
            }
        })
    }

    /// Applies one Pi event to what the module knows of `agent`'s session.
    pub fn observe(&self, agent: &AgentId, event: &PiEvent) {
        let mut sessions = lock(&self.inner.sessions);
        match event {
            PiEvent::SessionStart(start) => {
                let session = sessions.entry(agent.clone()).or_default();
                session.session_id.clone_from(&start.session_id);
                session.session_file = start.session_file.as_ref().map(PathBuf::from);
                if let Some(model) = &start.model {
                    session.model = Some((model.provider.clone(), model.id.clone()));
                }
            }
            PiEvent::ModelSelect(select) => {
                let session = sessions.entry(agent.clone()).or_default();
                session.model = Some((select.model.provider.clone(), select.model.id.clone()));
            }
            _ => {}
        }
    }

    /// Sets what the module knows of `agent`'s session directly.
    pub fn set_session(&self, agent: &AgentId, session: ParentSession) {
        lock(&self.inner.sessions).insert(agent.clone(), session);
    }

    /// A task's outcome once decided (for the app and tests).
    pub fn outcome(&self, task_id: &str) -> Option<Outcome> {
        lock(&self.inner.tasks)
            .get(task_id)
            .and_then(|task| task.outcome.borrow().clone())
    }

    /// Stops a running delegate (as the dock's stop does); false when it is not running.
    pub fn stop(&self, task_id: &str) -> bool {
        let control = lock(&self.inner.tasks)
            .get(task_id)
            .map(|task| task.control.clone());
        match control {
            Some(control) if control.outcome.borrow().is_none() => {
                control.stop();
                true
            }
            _ => false,
        }
    }
}

impl Module for DelegateModule {
    fn name(&self) -> &'static str {
        "delegate"
    }

    fn tools(&self) -> Vec<ToolSpec> {
        let config = self.inner.settings.config.get();
        if !config.enabled {
            return vec![];
        }
        let wait_timeout = Duration::from_secs(config.timeout_seconds + 60);
        vec![
            ToolSpec::new(
                DELEGATE_TOOL,
                "Background Delegate",
                "Start one read-only child agent (read, grep, find, ls) seeded with a frozen copy \
                 of this conversation, to answer one question in the background. The route \
                 (provider/model) is pinned and never substituted. Returns a task id at once; a \
                 <delegate-result-notification> arrives when the child ends.",
            )
            .string_param("name", "A short label for the delegate", true)
            .param(
                "prompt",
                json!({"type": "string",
                       "description": "The question the delegate must answer (kept verbatim)"}),
                true,
            )
            .param(
                "route",
                json!({"type": "object",
                       "description": "The model to pin; default: this session's current model",
                       "properties": {"provider": {"type": "string"}, "model": {"type": "string"}},
                       "required": ["provider", "model"], "additionalProperties": false}),
                false,
            )
            .integer_param("maxTurns", "Turn budget (default from config)", false)
            .integer_param(
                "timeoutSeconds",
                "Run deadline (default from config)",
                false,
            )
            .boolean_param(
                "notifyOnCompletion",
                "Send a notification when it ends (default true)",
                false,
            )
            .boolean_param(
                "triggerOnCompletion",
                "Start a follow-up turn with the notification (default true)",
                false,
            )
            .prompt_snippet("delegate a read-only investigation to a background child agent")
            .guideline(
                "After bg_delegate, do not poll bg_result; end the turn or continue other work \
                 and wait for the <delegate-result-notification>.",
            ),
            ToolSpec::new(
                RESULT_TOOL,
                "Background Result",
                "Read a delegate's verified answer by task id. Inline when it fits the inline \
                 cap, otherwise an artifact reference to the complete answer; never truncated.",
            )
            .string_param("taskId", "The task id bg_delegate returned", true)
            .param(
                "delivery",
                json!({"type": "string", "enum": ["inline", "artifact"],
                       "description": "Force inline (errors when too large) or artifact"}),
                false,
            )
            .boolean_param(
                "wait",
                "Wait until the delegate ends (default false)",
                false,
            )
            .timeout(wait_timeout),
        ]
    }

    fn message_types(&self) -> Vec<MessageTypeSpec> {
        vec![MessageTypeSpec::new(NOTIFICATION_TYPE, "Delegate result")]
    }

    fn call_tool(&self, call: ToolCall) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let inner = self.inner.clone();
        Box::pin(async move {
            let result = match call.tool.as_str() {
                DELEGATE_TOOL => inner.launch(&call).await,
                RESULT_TOOL => inner.result(&call.args, &call.cancel).await,
                other => {
                    return Err(ToolError::new(format!(
                        "module `delegate` declares no tool `{other}`"
                    )));
                }
            };
            result.map_err(|err| ToolError {
                message: err.describe(),
                details: json!({"error_code": err.code.as_str()}),
            })
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use super::*;
    use crate::bridge::{AgentNotice, CancelToken, ModelInfo, NoticeSink, UpdateSender, WakeReach};
    use crate::delegate::DelegateErrorCode;
    use crate::delegate::artifacts::{ManifestState, RouteOrigin, TaskDir};
    use serde_json::Value;
    use tokio::sync::mpsc;

    fn model(provider: &str, id: &str, window: Option<u64>) -> ModelInfo {
        ModelInfo {
            provider: provider.into(),
            id: id.into(),
            context_window: window,
            ..ModelInfo::default()
        }
    }

    fn pair(a: &str, b: &str) -> (String, String) {
        (a.to_string(), b.to_string())
    }

    #[test]
    fn argument_table() {
        let cases = [
            (json!({"name": "a", "prompt": "q"}), None),
            (json!({"prompt": "q"}), Some("requires a non-empty name")),
            (
                json!({"name": "a", "prompt": "  "}),
                Some("requires a non-blank prompt"),
            ),
            (json!({"name": "a"}), Some("requires a non-blank prompt")),
            (
                json!({"name": "a", "prompt": "q", "x": 1, "y": 2}),
                Some("unsupported key(s): x, y"),
            ),
            (
                json!({"name": "a", "prompt": "q", "route": {"provider": "p"}}),
                Some("route.model"),
            ),
            (
                json!({"name": "a", "prompt": "q", "maxTurns": 0}),
                Some("maxTurns must be a positive"),
            ),
            (
                json!({"name": "a", "prompt": "q", "triggerOnCompletion": "no"}),
                Some("true or false"),
            ),
        ];
        for (args, want) in cases {
            let got = parse_delegate_args(&args);
            match want {
                None => assert!(got.is_ok(), "{args}: {got:?}"),
                Some(fragment) => {
                    let err = got.unwrap_err();
                    assert_eq!(err.code, DelegateErrorCode::InvalidArguments);
                    assert!(err.message.contains(fragment), "{args}: {}", err.message);
                }
            }
        }
        let parsed = parse_delegate_args(&json!({"name": " a ", "prompt": " q ",
            "route": {"provider": "p", "model": "m"}, "triggerOnCompletion": false}))
        .unwrap();
        assert_eq!(parsed.name, "a");
        assert_eq!(parsed.prompt, " q ", "the prompt is kept verbatim");
        assert_eq!(parsed.route, Some(pair("p", "m")));
        assert!(parsed.notify && !parsed.trigger);
    }

    #[test]
    fn route_table() {
        let models = [
            model("p", "m", Some(128_000)),
            model("p", "small", Some(8_000)),
            model("q", "m", None),
        ];
        let cases = [
            (
                Some(pair("p", "m")),
                None,
                Ok(("p", "m", RouteOrigin::Explicit)),
            ),
            (
                None,
                Some(pair("p", "m")),
                Ok(("p", "m", RouteOrigin::ParentCurrent)),
            ),
            // An explicit route wins over the current model, and is never substituted.
            (
                Some(pair("p", "gone")),
                Some(pair("p", "m")),
                Err(DelegateErrorCode::RouteUnresolved),
            ),
            (
                Some(pair("P", "m")),
                None,
                Err(DelegateErrorCode::RouteUnresolved),
            ),
            (None, None, Err(DelegateErrorCode::RouteUnresolved)),
            (
                None,
                Some(pair("x", "y")),
                Err(DelegateErrorCode::RouteUnresolved),
            ),
            (
                Some(pair("p", "small")),
                None,
                Err(DelegateErrorCode::RouteCapacityUnknown),
            ),
            (
                Some(pair("q", "m")),
                None,
                Err(DelegateErrorCode::RouteCapacityUnknown),
            ),
        ];
        for (requested, current, want) in cases {
            let got = resolve_route(requested.as_ref(), current.as_ref(), &models)
                .map(|r| (r.provider, r.model, r.origin))
                .map_err(|e| e.code);
            let want = want.map(|(p, m, o)| (p.to_string(), m.to_string(), o));
            assert_eq!(got, want, "{requested:?} / {current:?}");
        }
    }

    fn session_file(dir: &Path) -> PathBuf {
        let path = dir.join("parent.jsonl");
        let lines = [
            json!({"type": "session", "version": 3, "id": "s1"}),
            json!({"type": "message", "id": "a", "parentId": null,
                   "message": {"role": "user", "content": "what is in notes.txt?"}}),
        ];
        let text: Vec<String> = lines.iter().map(Value::to_string).collect();
        std::fs::write(&path, text.join("\n")).unwrap();
        path
    }

    fn module_in(
        workspace: &Path,
        models: Vec<ModelInfo>,
    ) -> (DelegateModule, mpsc::UnboundedReceiver<AgentNotice>) {
        let settings = DelegateSettings {
            workspace: workspace.to_path_buf(),
            pi: PiCommand::default(),
            env: vec![],
            child_program: PathBuf::from("/nonexistent/unipi-tui"),
            config: DelegateConfig::default().into(),
        };
        let module = DelegateModule::new(settings);
        let (tx, rx) = mpsc::unbounded_channel();
        module.attach_host(Arc::new(ChannelHost {
            models,
            notices: tx,
        }));
        (module, rx)
    }

    /// The main agent's session `id`, written to `file`, on model p/m.
    fn session_on(id: &str, file: PathBuf) -> ParentSession {
        ParentSession {
            session_id: Some(id.into()),
            session_file: Some(file),
            model: Some(pair("p", "m")),
        }
    }

    /// The message of the error `module` answers a delegate call with `args` with.
    async fn refusal(module: &DelegateModule, args: Value) -> String {
        module.call_tool(call(args)).await.unwrap_err().message
    }

    fn call(args: Value) -> ToolCall {
        ToolCall {
            agent: AgentId::main(),
            tool: DELEGATE_TOOL.to_string(),
            call_id: "c1".to_string(),
            args,
            updates: UpdateSender::detached(),
            cancel: CancelToken::never(),
        }
    }

    /// A host of a print run whose Pi cannot wait after its agent stops (Pi 0.7x `-p`).
    struct CannotWaitHost(Vec<ModelInfo>);

    impl DelegateHost for CannotWaitHost {
        fn models(&self, _agent: &AgentId) -> BoxFuture<'static, anyhow::Result<Vec<ModelInfo>>> {
            let models = self.0.clone();
            Box::pin(async move { Ok(models) })
        }
    }

    impl NoticeSink for CannotWaitHost {
        fn deliver(&self, _notice: AgentNotice) -> BoxFuture<'static, anyhow::Result<()>> {
            Box::pin(async { anyhow::bail!("nobody is there to wake") })
        }

        fn wake_reach(&self, _agent: &AgentId) -> WakeReach {
            WakeReach::Never
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_delegate_that_would_wake_a_run_that_cannot_wait_is_refused_in_words() {
        let workspace = tempfile::tempdir().unwrap();
        let file = session_file(workspace.path());
        let (module, _rx) = module_in(workspace.path(), vec![]);
        module.attach_host(Arc::new(CannotWaitHost(vec![model(
            "p",
            "m",
            Some(128_000),
        )])));
        module.set_session(&AgentId::main(), session_on("s1", file));
        let err = refusal(&module, json!({"name": "a", "prompt": "q"})).await;
        assert!(err.contains("could not wake you"), "{err}");
        assert!(
            err.contains("pass triggerOnCompletion: false and wait for its answer with bg_result"),
            "{err}"
        );
        assert!(
            !workspace.path().join(".unipi").exists(),
            "a directory was created"
        );
        // Without the wake it is not refused for it (it goes on, here to a child that cannot
        // start).
        let err = refusal(
            &module,
            json!({"name": "a", "prompt": "q", "triggerOnCompletion": false}),
        )
        .await;
        assert!(
            err.starts_with(&format!(
                "[{}]",
                DelegateErrorCode::ChildSpawnFailed.as_str()
            )),
            "{err}"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn preflight_refusals_create_nothing() {
        let workspace = tempfile::tempdir().unwrap();
        let file = session_file(workspace.path());
        let listed = vec![model("p", "m", Some(128_000))];
        let with_session = session_on("s1", file);
        let no_file = ParentSession {
            session_file: None,
            ..with_session.clone()
        };
        let cases = [
            (
                "route not listed",
                listed.clone(),
                with_session.clone(),
                json!({"name": "a", "prompt": "q", "route": {"provider": "p", "model": "other"}}),
                DelegateErrorCode::RouteUnresolved,
            ),
            (
                "empty registry",
                vec![],
                with_session.clone(),
                json!({"name": "a", "prompt": "q"}),
                DelegateErrorCode::RouteUnresolved,
            ),
            (
                "missing question",
                listed.clone(),
                with_session.clone(),
                json!({"name": "a"}),
                DelegateErrorCode::InvalidArguments,
            ),
            (
                "no session file",
                listed.clone(),
                no_file,
                json!({"name": "a", "prompt": "q"}),
                DelegateErrorCode::SeedProjectionFailed,
            ),
        ];
        for (name, models, session, args, want) in cases {
            let (module, _rx) = module_in(workspace.path(), models);
            module.set_session(&AgentId::main(), session);
            let err = refusal(&module, args).await;
            assert!(
                err.starts_with(&format!("[{}]", want.as_str())),
                "{name}: {err}"
            );
            assert!(err.contains("Child process created: no"), "{name}");
            assert!(
                !workspace.path().join(".unipi").exists(),
                "{name}: a directory was created"
            );
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_child_that_cannot_start_fails_with_its_evidence_kept() {
        let workspace = tempfile::tempdir().unwrap();
        let file = session_file(workspace.path());
        let (module, _rx) = module_in(workspace.path(), vec![model("p", "m", Some(128_000))]);
        module.set_session(&AgentId::main(), session_on("s/1", file));
        let err = refusal(&module, json!({"name": "a", "prompt": "q"})).await;
        assert!(err.starts_with("[child_spawn_failed]"), "{err}");
        let run = workspace
            .path()
            .join(format!(".unipi/delegate/s_1-{}", std::process::id()));
        let task = std::fs::read_dir(&run)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let manifest = TaskDir::at(&task).read_manifest().unwrap();
        assert_eq!(manifest.state, ManifestState::Failed);
        assert_eq!(manifest.error.unwrap().code, "child_spawn_failed");
    }

    #[test]
    fn session_start_and_model_select_update_the_parent_session() {
        use crate::bridge::{ModelSelect, SessionStart};
        let workspace = tempfile::tempdir().unwrap();
        let (module, _rx) = module_in(workspace.path(), vec![]);
        let agent = AgentId::main();
        module.observe(
            &agent,
            &PiEvent::SessionStart(Box::new(SessionStart {
                session_id: Some("s1".into()),
                session_file: Some("/x/s1.jsonl".into()),
                model: Some(model("p", "m", Some(1))),
                ..SessionStart::default()
            })),
        );
        module.observe(
            &agent,
            &PiEvent::ModelSelect(Box::new(ModelSelect {
                model: model("q", "n", None),
                ..ModelSelect::default()
            })),
        );
        let session = lock(&module.inner.sessions).get(&agent).cloned().unwrap();
        assert_eq!(
            session,
            ParentSession {
                session_id: Some("s1".into()),
                session_file: Some(PathBuf::from("/x/s1.jsonl")),
                model: Some(pair("q", "n")),
            }
        );
    }
}
