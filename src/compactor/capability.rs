//! The compactor as a workbench capability: deterministic compaction through Pi's hook, the
//! session database and recall. It always runs; a bad config or a database that cannot open
//! becomes a start-up notice. It offers `/unipi:compact`, `/unipi:compact-stats` and
//! `/unipi:compact-view` (the overlay of the last compaction) and the footer's `🗜 2 · 41.2k
//! saved`. The module (`module.rs`) owns the compaction state, the database and the calls into
//! Pi; this file only reads its tally and last compaction, and declares and answers the commands.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use unipi_widgets::dashboard::InfoGroup;
use unipi_widgets::footer::Segment;

use super::command::parse_command_args;
use super::config::{CONFIG_FILE, CompactorConfig, UNIPI_GLOBAL_FILE};
use super::module::CompactorModule;
use super::view::CompactionView;
use crate::bridge::{
    Command, CommandCall, CommandReply, CommandSpec, Completion, Module, NotifyLevel,
};
use crate::capability::settings::{live_reporting, report_unipi_files};
use crate::capability::{BridgeLink, Capability, Registration, StartContext, Ui};
use crate::config::module_file::ModuleConfig;

pub const REGISTRATION: Registration = Registration {
    name: "compactor",
    start,
    key_tables: &[],
    actions: &[],
    dock: None,
};

fn start(context: &mut StartContext<'_>) -> Option<Arc<dyn Capability>> {
    // Followed: an edit of compactor.json applies to the next compaction or recall.
    report_unipi_files::<CompactorConfig>(context);
    let config = live_reporting(
        context,
        &[UNIPI_GLOBAL_FILE, CONFIG_FILE],
        CompactorConfig::load,
    );
    let started = CompactorModule::start_with(config, Vec::new(), context.home, context.workspace);
    for notice in started.notices {
        context.report(notice);
    }
    Some(Arc::new(CompactorCapability {
        module: started.module,
        ui: context.ui.clone(),
    }))
}

#[derive(Clone)]
struct CompactorCapability {
    module: CompactorModule,
    ui: Ui,
}

impl Capability for CompactorCapability {
    fn modules(&self) -> Vec<Arc<dyn Module>> {
        vec![Arc::new(self.module.clone())]
    }

    fn attach(&self, bridge: &BridgeLink) {
        self.module.attach_host(bridge.host.clone());
        self.module.watch(&bridge.bus());
    }

    fn changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        Some(self.module.subscribe())
    }

    /// `🗜 2 · 41.2k saved` once the session had a compaction, or `🗜 indexing 12/40 sessions`
    /// while the index is rebuilt from Pi's session files.
    fn footer_segments(&self) -> Vec<Segment> {
        let indexing = self
            .module
            .indexing()
            .map(|progress| unipi_widgets::compactor::Indexing {
                done: progress.done,
                total: progress.total,
            });
        unipi_widgets::compactor::compactor_segment(&self.module.tally(), indexing)
            .into_iter()
            .collect()
    }

    /// Its tab in `/unipi:info`: tokens saved by compaction in this session and project.
    fn info_group(&self) -> Option<BoxFuture<'static, InfoGroup>> {
        let module = self.module.clone();
        Some(Box::pin(async move {
            super::text::info_group(module.totals().await.map_err(|refusal| refusal.to_string()))
        }))
    }

    /// `/unipi:compact [keep:N] [prompt]`, `/unipi:compact-stats` and `/unipi:compact-view`.
    fn commands(&self) -> Vec<Command> {
        vec![
            Command::new(
                CommandSpec::new(
                    "unipi:compact",
                    "Compact now without a model call: [keep:N] user turns to keep, then an optional prompt to send afterwards",
                )
                .completion(Completion::new("keep:1").describe("keep only the latest user turn"))
                .completion(Completion::new("keep:2").describe("keep the last two user turns")),
                self.module.clone(),
                compact,
            ),
            Command::new(
                CommandSpec::new(
                    "unipi:compact-stats",
                    "Compaction statistics: this session and this project",
                ),
                self.module.clone(),
                stats,
            ),
            Command::new(
                CommandSpec::new(
                    "unipi:compact-view",
                    "Show the last compaction: its summary and what was summarized away",
                ),
                self.clone(),
                view,
            ),
        ]
    }
}

/// `/unipi:compact [keep:N] [prompt]`: asks Pi for a compaction, ours.
async fn compact(module: CompactorModule, call: CommandCall) -> CommandReply {
    let name = call.name;
    match parse_command_args(&call.args) {
        Ok(marker) => {
            // Pi's command handler must finish before Pi can start the compaction.
            tokio::spawn(async move {
                if let Err(message) = module.request_compaction(&marker).await {
                    tracing::warn!("/{name}: {message}");
                }
            });
            CommandReply::Done
        }
        Err(message) => CommandReply::Notify {
            message: format!("/{name}: {message}"),
            level: NotifyLevel::Warning,
        },
    }
}

/// `/unipi:compact-stats`: this session's and this project's compactions, in words.
async fn stats(module: CompactorModule, _call: CommandCall) -> CommandReply {
    match module.stats().await {
        Ok(text) => CommandReply::Notify {
            message: text,
            level: NotifyLevel::Info,
        },
        Err(refusal) => refusal.into(),
    }
}

/// `/unipi:compact-view`: the overlay of the last compaction (its summary headless).
async fn view(capability: CompactorCapability, _call: CommandCall) -> CommandReply {
    let CompactorCapability { module, ui } = capability;
    match module.last_view() {
        Some(model) if ui.has_screen() => {
            ui.open(CompactionView::new(model, ui.keymap()));
            CommandReply::Done
        }
        Some(model) => CommandReply::Notify {
            message: model.summary,
            level: NotifyLevel::Info,
        },
        None => CommandReply::Notify {
            message: "No compaction yet in this session.".to_owned(),
            level: NotifyLevel::Info,
        },
    }
}
