//! Ask-user as a workbench capability: started from `ask-user.json`, its module (the `ask_user`
//! tool), the question modal opened by the queue when a question arrives, and
//! `/unipi:ask-user-settings` (the settings overlay, saving into the user's file).

use std::sync::Arc;

use tokio::sync::watch;

use super::config::{ASK_USER_CONFIG_FILE, AskUserConfig, SETTINGS_PAGE};
use super::module::AskUserModule;
use super::queue::{AskQueue, Opener};
use super::view::{ASK_INPUT_KEYS, ASK_KEYS, AskView};
use crate::bridge::{Command, CommandCall, CommandReply, CommandSpec, Module};
use crate::capability::settings::{Save, SettingsHome, live_reporting, report_unipi_files};
use crate::capability::{BridgeLink, Capability, Changed, Registration, StartContext};
use crate::config::module_file::ModuleConfig;

pub const REGISTRATION: Registration = Registration {
    name: "ask-user",
    start,
    key_tables: &[&ASK_KEYS, &ASK_INPUT_KEYS],
    actions: &[],
    dock: None,
};

fn start(context: &mut StartContext<'_>) -> Option<Arc<dyn Capability>> {
    // Followed: an edit of the file applies to the next question.
    report_unipi_files::<AskUserConfig>(context);
    let config = live_reporting(context, &[ASK_USER_CONFIG_FILE], AskUserConfig::load);
    let changed = Changed::default();
    let ui = context.ui.clone();
    let opener: Opener = {
        let ui = ui.clone();
        Arc::new(move |queue: AskQueue| ui.open(AskView::new(queue, ui.keymap())))
    };
    let queue = AskQueue::new(changed.clone(), opener);
    let has_screen = Arc::new(move || ui.has_screen());
    // Started even when disabled: the tool then tells the model so, as the original did.
    Some(Arc::new(AskUserCapability {
        module: AskUserModule::new(config, queue, has_screen),
        settings: SettingsHome::new(context, changed),
    }))
}

/// The capability and its commands' state: the module and where its settings live.
#[derive(Clone)]
struct AskUserCapability {
    module: AskUserModule,
    settings: SettingsHome,
}

impl Capability for AskUserCapability {
    fn modules(&self) -> Vec<Arc<dyn Module>> {
        vec![Arc::new(self.module.clone())]
    }

    fn commands(&self) -> Vec<Command> {
        let spec = CommandSpec::new(
            "unipi:ask-user-settings",
            "Ask-user settings: the tool, the question formats, notifications",
        );
        vec![Command::new(spec, self.clone(), Self::edit_settings)]
    }

    fn attach(&self, bridge: &BridgeLink) {
        self.module.attach(bridge.clone());
    }

    fn changes(&self) -> Option<watch::Receiver<u64>> {
        Some(self.settings.changed.subscribe())
    }
}

impl AskUserCapability {
    /// `/unipi:ask-user-settings`: the settings overlay.
    async fn edit_settings(self, _call: CommandCall) -> CommandReply {
        let module = self.module.clone();
        // A save takes effect at once.
        let save: Save = Arc::new(move |home, values| {
            crate::config::merge_json_file(&home.join(ASK_USER_CONFIG_FILE), &values)?;
            module.reload_config();
            Ok("Saved. Takes effect with the next question.".to_owned())
        });
        self.settings.open_settings(&SETTINGS_PAGE, |_| save).await
    }
}
