//! Notifications as a workbench capability: started from the notify files, its module (the
//! `notify_user` tool), the router that follows the event bus and the screen once the bridge is
//! up, `/unipi:notify-settings` (the settings overlay) and `/unipi:notify-test`.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio::sync::watch;

use super::config::{CONFIG_FILE, NtfySource, load_notify_config};
use super::dispatch::{Dispatcher, test_report};
use super::module::{NotifyModule, SETTINGS_COMMAND, TEST_COMMAND};
use super::platforms::terminal;
use super::routing::Router;
use super::settings::{SETTINGS_TITLE, apply_settings, save, settings_fields};
use crate::bridge::{CommandCall, CommandReply, Module, NotifyLevel};
use crate::capability::{
    BridgeLink, Capability, Changed, Registration, StartContext, Ui, WithCommands,
};
use crate::views::settings::{SettingsStore, SettingsView};

pub const REGISTRATION: Registration = Registration {
    name: "notify",
    start,
    key_tables: &[],
};

fn start(context: &mut StartContext<'_>) -> Option<Arc<dyn Capability>> {
    let (config, errors) = load_notify_config(context.home, context.workspace);
    for error in &errors {
        context.report(error);
    }
    let in_tmux = std::env::var_os("TMUX").is_some_and(|v| !v.is_empty());
    let auto = terminal::detect(|key| std::env::var(key).ok());
    let dispatcher = Dispatcher::new(config, context.ui.clone(), in_tmux, auto);
    Some(Arc::new(NotifyCapability {
        module: NotifyModule::new(dispatcher.clone()),
        dispatcher,
        ui: context.ui.clone(),
        home: context.home.map(PathBuf::from),
        workspace: context.workspace.to_path_buf(),
        changed: Changed::default(),
    }))
}

struct NotifyCapability {
    module: NotifyModule,
    dispatcher: Dispatcher,
    ui: Ui,
    home: Option<PathBuf>,
    workspace: PathBuf,
    changed: Changed,
}

impl Capability for NotifyCapability {
    fn name(&self) -> &'static str {
        "notify"
    }

    fn modules(&self) -> Vec<Arc<dyn Module>> {
        let commands = Commands {
            dispatcher: self.dispatcher.clone(),
            ui: self.ui.clone(),
            home: self.home.clone(),
            workspace: self.workspace.clone(),
            changed: self.changed.clone(),
        };
        let handler = Arc::new(move |call: CommandCall| commands.run(call));
        vec![WithCommands::wrap(Arc::new(self.module.clone()), handler)]
    }

    fn attach(&self, bridge: &BridgeLink) {
        self.dispatcher.attach(bridge.bus());
        tokio::spawn(Router::new(self.dispatcher.clone()).run(bridge.bus()));
    }

    fn changes(&self) -> Option<watch::Receiver<u64>> {
        Some(self.changed.subscribe())
    }
}

#[derive(Clone)]
struct Commands {
    dispatcher: Dispatcher,
    ui: Ui,
    home: Option<PathBuf>,
    workspace: PathBuf,
    changed: Changed,
}

impl Commands {
    fn run(&self, call: CommandCall) -> BoxFuture<'static, CommandReply> {
        let this = self.clone();
        Box::pin(async move {
            match call.name.as_str() {
                TEST_COMMAND => {
                    let results = this.dispatcher.test().await;
                    let failed = results.iter().any(|result| !result.ok());
                    CommandReply::Notify {
                        message: test_report(&results),
                        level: if results.is_empty() || failed {
                            NotifyLevel::Warning
                        } else {
                            NotifyLevel::Info
                        },
                    }
                }
                SETTINGS_COMMAND => this.open_settings().await,
                other => CommandReply::Failed {
                    message: format!("unipi-tui has no command /{other}"),
                },
            }
        })
    }

    async fn open_settings(&self) -> CommandReply {
        if !self.ui.has_screen() {
            return CommandReply::Failed {
                message: format!(
                    "the settings overlay needs the workbench's screen; edit ~/{CONFIG_FILE}"
                ),
            };
        }
        let (home, workspace) = (self.home.clone(), self.workspace.clone());
        let loaded =
            tokio::task::spawn_blocking(move || load_notify_config(home.as_deref(), &workspace))
                .await;
        let Ok((config, _errors)) = loaded else {
            return CommandReply::Failed {
                message: "reading the notification settings failed".to_owned(),
            };
        };
        let store = Arc::new(NotifySettingsStore {
            home: self.home.clone(),
            workspace: self.workspace.clone(),
            source: config.ntfy_source.clone(),
            dispatcher: self.dispatcher.clone(),
            outcome: Arc::new(Mutex::new(None)),
            changed: self.changed.clone(),
        });
        self.ui.open(SettingsView::new(
            SETTINGS_TITLE,
            settings_fields(&config),
            apply_settings,
            store,
        ));
        CommandReply::Done
    }
}

/// Saves into the notify files off the UI loop; the new settings apply at once.
struct NotifySettingsStore {
    home: Option<PathBuf>,
    workspace: PathBuf,
    source: NtfySource,
    dispatcher: Dispatcher,
    outcome: Arc<Mutex<Option<Result<String, String>>>>,
    changed: Changed,
}

impl SettingsStore for NotifySettingsStore {
    fn save(&self, values: Value) {
        let (home, workspace, source) = (
            self.home.clone(),
            self.workspace.clone(),
            self.source.clone(),
        );
        let dispatcher = self.dispatcher.clone();
        let outcome = Arc::clone(&self.outcome);
        let changed = self.changed.clone();
        tokio::spawn(async move {
            let result = match home {
                None => Err("no home directory".to_owned()),
                Some(home) => tokio::task::spawn_blocking(move || {
                    save(&home, &source, &values).map_err(|err| format!("{err:#}"))?;
                    Ok(load_notify_config(Some(&home), &workspace).0)
                })
                .await
                .map_err(|err| format!("the save did not finish: {err}"))
                .and_then(|saved| saved)
                .map(|config| {
                    dispatcher.set_config(config);
                    "Saved. In force now.".to_owned()
                }),
            };
            if let Err(err) = &result {
                tracing::warn!("saving notification settings: {err}");
            }
            *outcome.lock().unwrap_or_else(PoisonError::into_inner) = Some(result);
            changed.bump();
        });
    }

    fn take_outcome(&self) -> Option<Result<String, String>> {
        self.outcome
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}
