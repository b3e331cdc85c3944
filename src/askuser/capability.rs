//! Ask-user as a workbench capability: started from `ask-user.json`, its module (the `ask_user`
//! tool), the question modal opened by the queue when a question arrives, and
//! `/unipi:ask-user-settings` (the settings overlay, saving into the user's file).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio::sync::watch;

use super::config::{
    ASK_USER_CONFIG_FILE, ASK_USER_SETTINGS_TITLE, apply_settings, load_ask_user_config,
    settings_fields,
};
use super::module::{AskUserModule, SETTINGS_COMMAND};
use super::queue::{AskQueue, Opener};
use super::view::{ASK_INPUT_KEYS, ASK_KEYS, AskView};
use crate::bridge::{CommandCall, CommandReply, Module};
use crate::capability::{
    BridgeLink, Capability, Changed, Registration, StartContext, Ui, WithCommands,
};
use crate::views::settings::{SettingsStore, SettingsView};

pub const REGISTRATION: Registration = Registration {
    name: "ask-user",
    start,
    key_tables: &[&ASK_KEYS, &ASK_INPUT_KEYS],
};

fn start(context: &mut StartContext<'_>) -> Option<Arc<dyn Capability>> {
    let (config, errors) = load_ask_user_config(context.home, context.workspace);
    for error in &errors {
        context.report(error);
    }
    let changed = Changed::default();
    let ui = context.ui.clone();
    let opener: Opener = {
        let ui = ui.clone();
        Arc::new(move |queue: AskQueue| ui.open(AskView::new(queue, ui.keymap())))
    };
    let queue = AskQueue::new(changed.clone(), opener);
    let has_screen = {
        let ui = ui.clone();
        Arc::new(move || ui.has_screen())
    };
    // Started even when disabled: the tool then tells the model so, as the original did.
    Some(Arc::new(AskUserCapability {
        module: AskUserModule::new(config, queue, has_screen),
        ui,
        home: context.home.map(PathBuf::from),
        workspace: context.workspace.to_path_buf(),
        changed,
    }))
}

struct AskUserCapability {
    module: AskUserModule,
    ui: Ui,
    home: Option<PathBuf>,
    workspace: PathBuf,
    changed: Changed,
}

impl Capability for AskUserCapability {
    fn name(&self) -> &'static str {
        "ask-user"
    }

    fn modules(&self) -> Vec<Arc<dyn Module>> {
        let commands = Commands {
            module: self.module.clone(),
            ui: self.ui.clone(),
            home: self.home.clone(),
            workspace: self.workspace.clone(),
            changed: self.changed.clone(),
        };
        let handler = Arc::new(move |call: CommandCall| commands.run(call));
        vec![WithCommands::wrap(Arc::new(self.module.clone()), handler)]
    }

    fn attach(&self, bridge: &BridgeLink) {
        self.module.attach(bridge.clone());
    }

    fn changes(&self) -> Option<watch::Receiver<u64>> {
        Some(self.changed.subscribe())
    }
}

#[derive(Clone)]
struct Commands {
    module: AskUserModule,
    ui: Ui,
    home: Option<PathBuf>,
    workspace: PathBuf,
    changed: Changed,
}

impl Commands {
    fn run(&self, call: CommandCall) -> BoxFuture<'static, CommandReply> {
        let this = self.clone();
        Box::pin(async move {
            if call.name != SETTINGS_COMMAND {
                return CommandReply::Failed {
                    message: format!("unipi-tui has no command /{}", call.name),
                };
            }
            if !this.ui.has_screen() {
                return CommandReply::Failed {
                    message: format!(
                        "the settings overlay needs the workbench's screen; edit ~/{ASK_USER_CONFIG_FILE}"
                    ),
                };
            }
            let (home, workspace) = (this.home.clone(), this.workspace.clone());
            let loaded = tokio::task::spawn_blocking(move || {
                load_ask_user_config(home.as_deref(), &workspace)
            })
            .await;
            let Ok((config, _errors)) = loaded else {
                return CommandReply::Failed {
                    message: "reading the ask-user settings failed".to_owned(),
                };
            };
            let store = Arc::new(AskSettingsStore {
                home: this.home.clone(),
                workspace: this.workspace.clone(),
                module: this.module.clone(),
                outcome: Arc::new(Mutex::new(None)),
                changed: this.changed.clone(),
            });
            this.ui.open(SettingsView::new(
                ASK_USER_SETTINGS_TITLE,
                settings_fields(&config),
                apply_settings,
                store,
            ));
            CommandReply::Done
        })
    }
}

/// Saves into the user's `ask-user.json` off the UI loop; a save takes effect at once.
struct AskSettingsStore {
    home: Option<PathBuf>,
    workspace: PathBuf,
    module: AskUserModule,
    outcome: Arc<Mutex<Option<Result<String, String>>>>,
    changed: Changed,
}

impl SettingsStore for AskSettingsStore {
    fn save(&self, values: Value) {
        let (home, workspace) = (self.home.clone(), self.workspace.clone());
        let module = self.module.clone();
        let outcome = Arc::clone(&self.outcome);
        let changed = self.changed.clone();
        tokio::spawn(async move {
            let result = match home {
                None => Err("no home directory".to_owned()),
                Some(home) => tokio::task::spawn_blocking(move || {
                    let path = home.join(ASK_USER_CONFIG_FILE);
                    crate::config::merge_json_file(&path, &values)
                        .map_err(|err| format!("{err:#}"))?;
                    Ok(load_ask_user_config(Some(&home), &workspace).0)
                })
                .await
                .map_err(|err| format!("the save did not finish: {err}"))
                .and_then(|saved| saved)
                .map(|config| {
                    module.set_config(config);
                    "Saved. Takes effect with the next question.".to_owned()
                }),
            };
            if let Err(err) = &result {
                tracing::warn!("saving ask-user settings: {err}");
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
