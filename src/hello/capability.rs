//! Hello as the workbench sees it: its registration (a global key action, no key tables), its
//! start from its config, and what it does when its key is pressed or its command is run.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use tokio::sync::watch;

use super::bus::HelloWaved;
use super::dock::HelloDock;
use crate::bridge::{
    Command, CommandCall, CommandReply, CommandSpec, EventBus, Module, NotifyLevel,
};
use crate::capability::{
    BridgeLink, Capability, Changed, GlobalAction, Otherwise, Registration, StartContext,
};
use crate::config::module_file::{ModuleConfig, Object};
use crate::views::dock::DockSource;

pub const REGISTRATION: Registration = Registration {
    name: "hello",
    start,
    key_tables: &[],
    actions: &[&WAVE],
    // No row key acts on a wave: its rows need no words in F1 (`DockWords`).
    dock: None,
};

/// Waves: no default key (a keymap file binds it by name, `"alt+h" = "hello.wave"`).
const WAVE: GlobalAction = GlobalAction {
    name: "hello.wave",
    description: "Wave hello",
    keys: &[],
    under_views: false,
    otherwise: Otherwise::Notice("Hello is off."),
    help_order: u8::MAX,
};

/// `.unipi/config/hello.json`: `{ "enabled": true }` switches it on.
#[derive(Debug, Default)]
struct HelloConfig {
    enabled: bool,
}

impl ModuleConfig for HelloConfig {
    const FILE: &'static str = ".unipi/config/hello.json";

    fn read(&mut self, file: &mut Object<'_>) {
        file.flag("enabled", &mut self.enabled);
        file.warn_unknown();
    }
}

fn start(context: &mut StartContext<'_>) -> Option<Arc<dyn Capability>> {
    let (config, errors) = HelloConfig::load(context.home, context.workspace);
    for error in &errors {
        context.report(error);
    }
    config.enabled.then(|| Arc::new(Hello::default()) as _)
}

/// Hello's bridge module: it declares no tool; its command is listed under it (`/unipi:info`).
struct HelloModule;

impl Module for HelloModule {
    fn name(&self) -> &'static str {
        "hello"
    }
}

/// The capability, and the state its command runs over (cheap to clone: it is all shared).
#[derive(Clone, Default)]
struct Hello {
    waves: Arc<AtomicU64>,
    /// The bridge's bus, once it is up.
    bus: Arc<OnceLock<EventBus>>,
    changed: Changed,
}

impl Hello {
    /// One wave: counted, published on the bus, redrawn. Returns how many so far.
    fn wave(&self) -> u64 {
        let waves = self.waves.fetch_add(1, Ordering::SeqCst) + 1;
        if let Some(bus) = self.bus.get() {
            bus.publish("hello", &HelloWaved { waves });
        }
        self.changed.bump();
        waves
    }

    /// `/unipi:hello`: waves as its key does, and Pi says so.
    async fn wave_command(self, _call: CommandCall) -> CommandReply {
        let waves = self.wave();
        CommandReply::Notify {
            message: format!("Hello waved ({waves} so far)"),
            level: NotifyLevel::Info,
        }
    }
}

impl Capability for Hello {
    fn modules(&self) -> Vec<Arc<dyn Module>> {
        vec![Arc::new(HelloModule)]
    }

    fn commands(&self) -> Vec<Command> {
        let spec = CommandSpec::new("unipi:hello", "Wave hello");
        vec![Command::new(spec, self.clone(), Self::wave_command)]
    }

    fn attach(&self, bridge: &BridgeLink) {
        // Attached once; a second attach would be the same bus.
        let _ = self.bus.set(bridge.bus());
    }

    fn changes(&self) -> Option<watch::Receiver<u64>> {
        Some(self.changed.subscribe())
    }

    fn dock(&self) -> Option<Arc<dyn DockSource>> {
        Some(Arc::new(HelloDock {
            waves: Arc::clone(&self.waves),
        }))
    }

    fn action(&self, name: &str) -> bool {
        if name != WAVE.name {
            return false;
        }
        self.wave();
        true
    }
}
