//! The model-driven loop as a workbench capability: its tools and `/unipi:ralph` (with its
//! completions), its footer segment, and the follower of Pi's events that ends a loop on the
//! completion marker and pauses it on Esc. At attach, a loop the last workbench left running is
//! offered for resuming.

use std::sync::Arc;

use tokio::sync::{broadcast, watch};
use unipi_widgets::footer::Segment;

use super::args;
use super::commands;
use super::engine::Engine;
use super::state;
use super::tools::RalphModule;
use crate::bridge::{BusEvent, Command, CommandSpec, Module, PiEvent};
use crate::capability::{BridgeLink, Capability, Changed, Registration, StartContext};

pub const REGISTRATION: Registration = Registration {
    name: "ralph",
    start,
    key_tables: &[],
    actions: &[],
    dock: None,
};

fn start(context: &mut StartContext<'_>) -> Option<Arc<dyn Capability>> {
    let changed = Changed::default();
    let engine = Engine::new(
        context.workspace.to_path_buf(),
        context.ui.clone(),
        changed.clone(),
    );
    Some(Arc::new(Ralph {
        engine: Arc::new(engine),
        changed,
    }))
}

struct Ralph {
    engine: Arc<Engine>,
    changed: Changed,
}

impl Capability for Ralph {
    fn modules(&self) -> Vec<Arc<dyn Module>> {
        vec![Arc::new(RalphModule {
            engine: Arc::clone(&self.engine),
        })]
    }

    fn commands(&self) -> Vec<Command> {
        let spec = CommandSpec::new(
            "unipi:ralph",
            "Ralph loops: start|stop|resume|status|list|cancel|archive|clean|nuke",
        );
        let workspace = self.engine.workspace.clone();
        let command = Command::new(spec, Arc::clone(&self.engine), commands::run);
        vec![command.completer(move |typed: &str| {
            args::complete(typed, || {
                state::list(&workspace, state::RALPH_DIR)
                    .into_iter()
                    .filter(|summary| summary.plan.is_none())
                    .map(|summary| summary.name)
                    .collect()
            })
        })]
    }

    fn attach(&self, bridge: &BridgeLink) {
        self.engine.attach(bridge);
        let engine = Arc::clone(&self.engine);
        let bus = bridge.bus().subscribe();
        tokio::spawn(async move {
            engine.rehydrate().await;
            follow(engine, bus).await;
        });
    }

    fn changes(&self) -> Option<watch::Receiver<u64>> {
        Some(self.changed.subscribe())
    }

    fn footer_segments(&self) -> Vec<Segment> {
        self.engine.segment().into_iter().collect()
    }
}

/// Follows Pi's events: an answer with the completion marker ends the loop, Esc pauses it.
async fn follow(engine: Arc<Engine>, mut bus: broadcast::Receiver<BusEvent>) {
    loop {
        let (agent, event) = match bus.recv().await {
            Ok(BusEvent::Pi { agent, event }) => (agent, event),
            Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => continue,
            Err(broadcast::error::RecvError::Closed) => return,
        };
        match &*event {
            PiEvent::MessageEnd(end) => {
                if let Some(text) = end.text.as_deref() {
                    engine.on_message(&agent, text).await;
                }
            }
            PiEvent::AgentSettled { aborted, .. } => engine.on_settled(&agent, *aborted).await,
            _ => {}
        }
    }
}
