//! `bg_delegate`'s launch: a preflight that refuses before anything exists (arguments, session
//! file, a wake the caller can receive, the route pinned to a model Pi lists, the seed budget),
//! then the task directory with `seed.json` (re-hashed after writing) and the manifest, then the
//! child ([`super::supervise`]). The receipt is what the model reads back.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::args::{DelegateArgs, parse_delegate_args};
use super::artifacts::{
    self, Limits, Manifest, ManifestState, PiCommand, Route, SEED_FILE, TaskDir,
};
use super::config::DelegateConfig;
use super::errors::{DelegateError, DelegateErrorCode};
use super::host::{DelegateHost, ParentSession};
use super::report::{Launch, receipt};
use super::route::resolve_route;
use super::seed::{Accounting, SeedInput, build_seed, sha256_hex};
use super::service::{DelegateService, blocking};
use crate::bridge::{AgentId, ModelInfo, ToolCall, ToolOutput, WakeReach};
use crate::sys::{lock, now_ms, random_u64, write_new_atomic};

/// The child's task must fit one command-line argument (Linux: 128 KiB); this leaves room.
pub(crate) const MAX_CHILD_PROMPT_BYTES: usize = 120 * 1024;
/// The framing around the seed in the child's task, in bytes (generous).
const PROMPT_FRAME_BYTES: usize = 1024;
/// What a delegate's wake promise allows past its deadline: the stop and the notification.
const WAKE_DELIVERY: Duration = Duration::from_secs(60);

impl DelegateService {
    pub(super) async fn launch(
        self: &Arc<Self>,
        call: &ToolCall,
    ) -> Result<ToolOutput, DelegateError> {
        let config = self.settings.config.get();
        let args = parse_delegate_args(&call.args)?;
        let session = lock(&self.sessions)
            .get(&call.agent)
            .cloned()
            .unwrap_or_default();
        let session_file = seedable_file(&session)?;
        let host = lock(&self.host).clone();
        // A delegate that will wake the caller must be able to: a print or JSON run waits for
        // it (at most its deadline) or, where it cannot wait, the launch is refused in words.
        let wakes_caller = args.notify && args.trigger;
        let deadline = Duration::from_secs(args.timeout_seconds.unwrap_or(config.timeout_seconds));
        if wakes_caller {
            refuse_unreachable_wake(host.as_deref(), &call.agent, deadline)?;
        }
        let models = listed_models(host.as_deref(), &call.agent).await?;
        let route = resolve_route(args.route.as_ref(), session.model.as_ref(), &models)?;
        let limits = limits(&args, &config, &route);
        let budget = seed_budget(&args.prompt, &config, limits.allowed_input_tokens)?;
        let plan = TaskPlan {
            task_id: format!("d{:016x}{:016x}", random_u64(), random_u64()),
            nonce: format!("{:016x}{:016x}", random_u64(), random_u64()),
            cwd: self.settings.workspace.clone(),
            route,
            directive: args.prompt.clone(),
            name: args.name.clone(),
            session_file,
            call_id: call.call_id.clone(),
            budget,
            limits,
            pi: self.settings.pi.clone(),
        };
        let dir = self.task_dir(&session, &plan.task_id);
        let (accounting, manifest) = {
            let dir = dir.clone();
            blocking(move || plan.write(&dir)).await?
        };
        // Owed until the notice is delivered (the launch is dropped after it).
        let wake = host.filter(|_| wakes_caller).and_then(|host| {
            host.promise_wake(
                &call.agent,
                format!("delegate {}", manifest.task_id),
                deadline + WAKE_DELIVERY,
            )
        });
        let launch = Launch {
            agent: call.agent.clone(),
            name: args.name.clone(),
            dir,
            manifest,
            notify: args.notify,
            trigger: args.trigger,
            started: Instant::now(),
            _wake: wake,
        };
        let receipt = receipt(&launch, &accounting);
        self.spawn_child(launch, args.prompt)?;
        Ok(receipt)
    }

    /// Where a task of this run lives: `<workspace>/.unipi/delegate/<session>-<pid>/<task-id>/`.
    fn task_dir(&self, session: &ParentSession, task_id: &str) -> TaskDir {
        let run = format!(
            "{}-{}",
            session.session_id.as_deref().unwrap_or("session"),
            std::process::id()
        );
        TaskDir::new(&self.settings.workspace, &sanitize(&run), task_id)
    }
}

/// The session file a seed is projected from; none means nothing to seed from.
fn seedable_file(session: &ParentSession) -> Result<PathBuf, DelegateError> {
    session.session_file.clone().ok_or_else(|| {
        DelegateError::new(
            DelegateErrorCode::SeedProjectionFailed,
            "this session has no session file (it is in memory, or Pi has not reported \
             one yet), so there is no conversation to seed a delegate from",
        )
    })
}

/// Refuses, in words, a wake the caller's run could not receive before `deadline`.
fn refuse_unreachable_wake(
    host: Option<&dyn DelegateHost>,
    agent: &AgentId,
    deadline: Duration,
) -> Result<(), DelegateError> {
    let reach = host.map_or(WakeReach::Anytime, |host| host.wake_reach(agent));
    match reach.refusal_for(
        "a delegate",
        Some(deadline),
        "pass triggerOnCompletion: false and wait for its answer with bg_result",
    ) {
        Some(refused) => Err(DelegateError::new(
            DelegateErrorCode::InvalidArguments,
            refused,
        )),
        None => Ok(()),
    }
}

/// The models `agent`'s Pi lists (none without a host).
async fn listed_models(
    host: Option<&dyn DelegateHost>,
    agent: &AgentId,
) -> Result<Vec<ModelInfo>, DelegateError> {
    let Some(host) = host else {
        return Ok(Vec::new());
    };
    host.models(agent).await.map_err(|err| {
        DelegateError::new(
            DelegateErrorCode::RouteUnresolved,
            format!("cannot read the model registry: {err:#}"),
        )
    })
}

/// The child's limits: the arguments over the config, the input the route allows.
fn limits(args: &DelegateArgs, config: &DelegateConfig, route: &Route) -> Limits {
    Limits {
        max_turns: args.max_turns.unwrap_or(config.max_turns),
        timeout_seconds: args.timeout_seconds.unwrap_or(config.timeout_seconds),
        inline_answer_bytes: config.inline_answer_bytes,
        allowed_input_tokens: route.allowed_input_tokens().unwrap_or(0),
        ..Limits::default()
    }
}

/// The bytes the seed may take. One byte per token is the conservative estimate: the seed, the
/// directive (which the child's task repeats) and the frame must fit the allowed input.
fn seed_budget(
    prompt: &str,
    config: &DelegateConfig,
    allowed: u64,
) -> Result<usize, DelegateError> {
    let allowed_bytes = usize::try_from(allowed).unwrap_or(usize::MAX);
    let fixed = prompt.len() * 2 + PROMPT_FRAME_BYTES;
    let budget = config
        .seed_budget_bytes
        .min(allowed_bytes.saturating_sub(fixed))
        .min(MAX_CHILD_PROMPT_BYTES.saturating_sub(fixed));
    if budget < 1024 {
        return Err(DelegateError::new(
            DelegateErrorCode::SeedBudgetExceeded,
            format!(
                "the prompt ({} bytes) leaves no room for the conversation seed within {} \
                 allowed input tokens",
                prompt.len(),
                allowed
            ),
        ));
    }
    Ok(budget)
}

/// Everything the preflight decided that the task directory records.
struct TaskPlan {
    task_id: String,
    nonce: String,
    cwd: PathBuf,
    route: Route,
    directive: String,
    name: String,
    session_file: PathBuf,
    call_id: String,
    budget: usize,
    limits: Limits,
    pi: PiCommand,
}

impl TaskPlan {
    /// Builds the seed and the manifest and writes both into `dir` (blocking file work).
    fn write(self, dir: &TaskDir) -> Result<(Accounting, Manifest), DelegateError> {
        let seed = build_seed(&SeedInput {
            task_id: &self.task_id,
            nonce: &self.nonce,
            cwd: &self.cwd,
            route: &self.route,
            directive: &self.directive,
            session_file: &self.session_file,
            active_call_id: Some(&self.call_id),
            budget_bytes: self.budget,
            limits: self.limits,
        })?;
        let now = now_ms();
        let manifest = Manifest {
            schema_version: artifacts::MANIFEST_SCHEMA.to_string(),
            task_id: self.task_id,
            launch_nonce: self.nonce,
            name: self.name,
            created_at: now,
            updated_at: now,
            cwd: self.cwd,
            route: self.route,
            limits: self.limits,
            seed_sha256: seed.sha256.clone(),
            seed_bytes: seed.bytes.len(),
            directive_sha256: sha256_hex(self.directive.as_bytes()),
            pi: self.pi,
            state: ManifestState::Launched,
            child_pid: None,
            error: None,
        };
        // From here on something exists on disk: a failure removes the task directory.
        dir.create()?;
        if let Err(err) = persist(dir, &seed.bytes, &manifest) {
            let _ = std::fs::remove_dir_all(&dir.dir);
            return Err(err);
        }
        Ok((seed.accounting, manifest))
    }
}

/// Writes `seed.json` (exclusive), re-reads it to prove the bytes on disk are the hashed ones,
/// and creates the manifest.
fn persist(dir: &TaskDir, seed: &[u8], manifest: &Manifest) -> Result<(), DelegateError> {
    let path = dir.file(SEED_FILE);
    let persist_failed =
        |message: String| DelegateError::new(DelegateErrorCode::SeedPersistFailed, message);
    write_new_atomic(&path, seed)
        .map_err(|err| persist_failed(format!("cannot write {}: {err}", path.display())))?;
    let on_disk = std::fs::read(&path)
        .map_err(|err| persist_failed(format!("cannot re-read {}: {err}", path.display())))?;
    if sha256_hex(&on_disk) != manifest.seed_sha256 {
        return Err(persist_failed(format!(
            "{} does not hash to the seed just written",
            path.display()
        )));
    }
    dir.create_manifest(manifest)
}

/// A directory-name-safe form of a session id.
fn sanitize(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
