//! `/btw` as a workbench capability: its registration, its bridge module (under which its
//! commands are listed), the commands — `/btw`, `/btw:tangent`, `/btw:new`, `/btw:clear`,
//! `/btw:inject`, `/btw:summarize`, as Unipi named them — the overlay's port, Alt+/ to open the
//! overlay, and stopping the side Pi on every exit path.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::sync::watch;
use unipi_widgets::btw::BtwThreadModel;

use super::service::BtwService;
use super::thread::{Mode, take_save_flag};
use super::view::{BTW_KEYS, ThreadPort, ThreadView, thread_model};
use crate::bridge::{
    Command, CommandCall, CommandReply, CommandSpec, Module, NotifyLevel, Refusal,
};
use crate::capability::{
    BridgeLink, Capability, GlobalAction, Otherwise, Registration, StartContext,
};
use crate::fusion::runtime::SidekickRuntime;

pub const REGISTRATION: Registration = Registration {
    name: "btw",
    start,
    key_tables: &[&BTW_KEYS],
    actions: &[&OPEN_ACTION],
    dock: None,
};

/// Alt+/: the thread overlay, as `/btw` with no question opens it (Unipi's shortcut).
static OPEN_ACTION: GlobalAction = GlobalAction {
    name: "btw.open",
    description: "Open the /btw side thread",
    keys: &["alt+/"],
    under_views: false,
    otherwise: Otherwise::ToPi,
    help_order: 45,
};

/// How long a headless `/btw` waits for the answer (the bridge gives a command 10 s); the
/// answer still lands in the thread after that.
const HEADLESS_WAIT: Duration = Duration::from_secs(8);

fn start(context: &mut StartContext<'_>) -> Option<Arc<dyn Capability>> {
    let runtime = SidekickRuntime::new(context.child_pi(), context.workspace.to_path_buf());
    let service = BtwService::new(runtime, context.ui.clone(), context.workspace.to_path_buf());
    Some(Arc::new(BtwCapability {
        service: Arc::new(service),
    }))
}

struct BtwCapability {
    service: Arc<BtwService>,
}

/// The bridge module: the commands are listed under it.
struct BtwModule;

impl Module for BtwModule {
    fn name(&self) -> &'static str {
        "btw"
    }
}

/// The six commands: name, description, what they do.
type Handler = fn(Arc<BtwService>, CommandCall) -> BoxFuture<'static, CommandReply>;

const COMMANDS: [(&str, &str, Handler); 6] = [
    (
        "btw",
        "Side question in a thread outside the conversation (--save keeps it as a note)",
        |service, call| {
            Box::pin(async move { reply(ask(&service, Mode::Contextual, &call.args).await) })
        },
    ),
    (
        "btw:tangent",
        "Side thread without the main conversation's context",
        |service, call| {
            Box::pin(async move { reply(ask(&service, Mode::Tangent, &call.args).await) })
        },
    ),
    (
        "btw:new",
        "Start a fresh /btw thread (and ask, given a question)",
        |service, call| Box::pin(async move { reply(new_thread(&service, &call.args).await) }),
    ),
    (
        "btw:clear",
        "Drop the /btw thread and close it",
        |service, _call| Box::pin(async move { reply(Ok(Some(clear(&service)))) }),
    ),
    (
        "btw:inject",
        "Bring the /btw thread into the conversation (optional instructions)",
        |service, call| {
            Box::pin(async move { reply(handoff(&service, Handoff::Inject, &call.args)) })
        },
    ),
    (
        "btw:summarize",
        "Bring a summary of the /btw thread into the conversation",
        |service, call| {
            Box::pin(async move { reply(handoff(&service, Handoff::Summarize, &call.args)) })
        },
    ),
];

impl Capability for BtwCapability {
    fn modules(&self) -> Vec<Arc<dyn Module>> {
        vec![Arc::new(BtwModule)]
    }

    fn commands(&self) -> Vec<Command> {
        COMMANDS
            .iter()
            .map(|(name, description, handler)| {
                Command::new(
                    CommandSpec::new(*name, *description),
                    self.service.clone(),
                    *handler,
                )
            })
            .collect()
    }

    fn attach(&self, bridge: &BridgeLink) {
        self.service.attach(bridge.host.clone(), bridge.bus());
    }

    fn changes(&self) -> Option<watch::Receiver<u64>> {
        Some(self.service.changed().subscribe())
    }

    fn action(&self, name: &str) -> bool {
        if name != OPEN_ACTION.name || !self.service.ui().has_screen() {
            return false;
        }
        open(&self.service);
        true
    }

    fn shutdown(&self) -> BoxFuture<'static, ()> {
        let service = self.service.clone();
        Box::pin(async move { service.runtime().stop().await })
    }

    fn kill_now(&self) {
        self.service.runtime().kill_now();
    }
}

/// A command's outcome as Pi's answer: nothing to say, a notice, or the refusal.
fn reply(outcome: Result<Option<String>, Refusal>) -> CommandReply {
    match outcome {
        Ok(None) => CommandReply::Done,
        Ok(Some(message)) => CommandReply::Notify {
            message,
            level: NotifyLevel::Info,
        },
        Err(refusal) => refusal.into(),
    }
}

/// The overlay over the service.
struct ServicePort(Arc<BtwService>);

impl ThreadPort for ServicePort {
    fn snapshot(&self) -> BtwThreadModel {
        thread_model(&self.0.thread(), &self.0.progress(), self.0.answerer())
    }

    fn dismissals(&self) -> u64 {
        self.0.dismissals()
    }

    fn submit(&self, text: &str) {
        let service = self.0.clone();
        let text = text.to_owned();
        tokio::spawn(async move {
            if let Err(refusal) = from_overlay(&service, &text).await {
                service.ui().notice(refusal.into_text());
            }
        });
    }
}

/// Opens the thread overlay.
fn open(service: &Arc<BtwService>) {
    let ui = service.ui();
    ui.open(ThreadView::new(
        Arc::new(ServicePort(service.clone())),
        ui.keymap(),
    ));
}

/// What was typed in the overlay: a `/btw:` command, or a question in the current mode.
async fn from_overlay(service: &Arc<BtwService>, text: &str) -> Result<(), Refusal> {
    let (name, args) = text.split_once(' ').unwrap_or((text, ""));
    match name {
        "/btw:new" => {
            service.reset(Mode::Contextual);
            service.set_status("Started a fresh BTW thread.", false);
            if !args.trim().is_empty() {
                ask_in_background(service, args);
            }
        }
        "/btw:tangent" => {
            service.enter_mode(Mode::Tangent);
            if !args.trim().is_empty() {
                ask_in_background(service, args);
            }
        }
        "/btw:clear" => {
            clear(service);
        }
        "/btw:inject" => {
            handoff(service, Handoff::Inject, args)?;
        }
        "/btw:summarize" => {
            handoff(service, Handoff::Summarize, args)?;
        }
        _ => {
            ask_in_background(service, text.strip_prefix("/btw ").unwrap_or(text));
        }
    }
    Ok(())
}

/// Asks in the background; the overlay shows the answer or the failure.
fn ask_in_background(service: &Arc<BtwService>, args: &str) -> tokio::task::JoinHandle<()> {
    let (save, question) = take_save_flag(args);
    let service = service.clone();
    tokio::spawn(async move {
        if let Err(err) = service.ask(&question, save).await {
            tracing::info!("btw: no answer: {err:#}");
        }
    })
}

/// `/btw [--save] [question]` and `/btw:tangent …`: the thread in `mode` (a thread of the other
/// mode starts afresh); with a question, it is asked.
async fn ask(service: &Arc<BtwService>, mode: Mode, args: &str) -> Result<Option<String>, Refusal> {
    service.enter_mode(mode);
    let (save, question) = take_save_flag(args);
    if question.is_empty() {
        return Ok(show(service));
    }
    if service.ui().has_screen() {
        open(service);
        ask_in_background(service, args);
        return Ok(None);
    }
    let service = service.clone();
    let asking = tokio::spawn(async move { service.ask(&question, save).await });
    match tokio::time::timeout(HEADLESS_WAIT, asking).await {
        Ok(Ok(Ok(turn))) => Ok(Some(turn.answer)),
        Ok(Ok(Err(err))) => Err(format!("/btw: {err:#}").into()),
        Ok(Err(_)) => Err("/btw: the question was cancelled".into()),
        Err(_) => Ok(Some(
            "The side model is still answering; the answer will be in the /btw thread".into(),
        )),
    }
}

/// The overlay, or (headless) the thread in words.
fn show(service: &Arc<BtwService>) -> Option<String> {
    if service.ui().has_screen() {
        open(service);
        return None;
    }
    let thread = service.thread();
    Some(if thread.is_empty() {
        unipi_widgets::btw::EMPTY.to_owned()
    } else {
        thread.transcript()
    })
}

/// `/btw:new [question]`.
async fn new_thread(service: &Arc<BtwService>, args: &str) -> Result<Option<String>, Refusal> {
    service.reset(Mode::Contextual);
    if take_save_flag(args).1.is_empty() {
        const STARTED: &str = "Started a fresh BTW thread.";
        service.set_status(STARTED, false);
        return Ok(show(service).map(|_| STARTED.to_owned()));
    }
    ask(service, Mode::Contextual, args).await
}

/// `/btw:clear`.
fn clear(service: &BtwService) -> String {
    service.clear();
    "Cleared BTW thread.".to_owned()
}

#[derive(Clone, Copy)]
enum Handoff {
    Inject,
    Summarize,
}

/// `/btw:inject` and `/btw:summarize`: refused at once on an empty thread; otherwise sent in the
/// background (the message reaches Pi after the command returned), the outcome in a notice.
fn handoff(
    service: &Arc<BtwService>,
    kind: Handoff,
    instructions: &str,
) -> Result<Option<String>, Refusal> {
    if service.thread().is_empty() {
        return Err(match kind {
            Handoff::Inject => "No BTW thread to inject.",
            Handoff::Summarize => "No BTW thread to summarize.",
        }
        .into());
    }
    let service = service.clone();
    let instructions = instructions.to_owned();
    tokio::spawn(async move {
        let outcome = match kind {
            Handoff::Inject => service.inject(&instructions).await,
            Handoff::Summarize => service.summarize(&instructions).await,
        };
        let notice = outcome.unwrap_or_else(|err| format!("/btw: {err:#}"));
        service.ui().notice(notice);
    });
    Ok(Some(match kind {
        Handoff::Inject => "Injecting the BTW thread…".to_owned(),
        Handoff::Summarize => "Summarizing the BTW thread…".to_owned(),
    }))
}
