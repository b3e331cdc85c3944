//! Notifications as a workbench capability: started from the notify files, its module (the
//! `notify_user` tool), the router that follows the event bus and the screen once the bridge is
//! up, `/unipi:notify-settings` (the settings overlay), `/unipi:notify-set-ntfy`, `-set-gotify`
//! and `-set-tg` (one platform's set-up) and `/unipi:notify-test`.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use tokio::sync::watch;
use unipi_widgets::dashboard::InfoGroup;

use super::config::{CONFIG_FILE, NTFY_FILE, NotifyConfig};
use super::dispatch::{Dispatcher, test_report};
use super::module::NotifyModule;
use super::platforms::terminal;
use super::routing::Router;
use super::settings::{SETTINGS_PAGE, save};
use super::setup::{GOTIFY_PAGE, NTFY_PAGE, SetUp, TELEGRAM_PAGE};
use crate::bridge::{Command, CommandCall, CommandReply, CommandSpec, Module, NotifyLevel};
use crate::capability::settings::{Save, SettingsHome, live_reporting};
use crate::capability::{BridgeLink, Capability, Changed, Registration, StartContext};
use crate::config::module_file::ModuleConfig;

pub const REGISTRATION: Registration = Registration {
    name: "notify",
    start,
    key_tables: &[],
    actions: &[],
    dock: None,
};

fn start(context: &mut StartContext<'_>) -> Option<Arc<dyn Capability>> {
    // Followed: an edit of either file applies to the next notification.
    let config = live_reporting(context, &[CONFIG_FILE, NTFY_FILE], NotifyConfig::load);
    let in_tmux = std::env::var_os("TMUX").is_some_and(|v| !v.is_empty());
    let auto = terminal::detect(|key| std::env::var(key).ok());
    let dispatcher = Dispatcher::new(config, context.ui.clone(), in_tmux, auto);
    Some(Arc::new(NotifyCapability {
        module: NotifyModule::new(dispatcher.clone()),
        dispatcher,
        settings: SettingsHome::new(context, Changed::default()),
    }))
}

/// The capability and its commands' state.
#[derive(Clone)]
struct NotifyCapability {
    module: NotifyModule,
    dispatcher: Dispatcher,
    settings: SettingsHome,
}

impl Capability for NotifyCapability {
    fn modules(&self) -> Vec<Arc<dyn Module>> {
        vec![Arc::new(self.module.clone())]
    }

    fn commands(&self) -> Vec<Command> {
        vec![
            Command::new(
                CommandSpec::new(
                    "unipi:notify-settings",
                    "Notification settings: platforms, tokens, events",
                ),
                self.clone(),
                Self::edit_settings,
            ),
            Command::new(
                CommandSpec::new(
                    "unipi:notify-set-ntfy",
                    "Set up ntfy push notifications (sends a test)",
                ),
                self.clone(),
                |this: Self, _call| this.set_up(SetUp::Ntfy),
            ),
            Command::new(
                CommandSpec::new(
                    "unipi:notify-set-gotify",
                    "Set up Gotify push notifications (sends a test)",
                ),
                self.clone(),
                |this: Self, _call| this.set_up(SetUp::Gotify),
            ),
            Command::new(
                CommandSpec::new(
                    "unipi:notify-set-tg",
                    "Set up Telegram notifications (finds your chat, sends a test)",
                ),
                self.clone(),
                |this: Self, _call| this.set_up(SetUp::Telegram),
            ),
            Command::new(
                CommandSpec::new(
                    "unipi:notify-test",
                    "Send a test notification to every enabled platform",
                ),
                self.clone(),
                Self::test,
            ),
        ]
    }

    fn attach(&self, bridge: &BridgeLink) {
        self.dispatcher.attach(bridge.bus());
        self.dispatcher.attach_host(bridge.host.clone());
        tokio::spawn(Router::new(self.dispatcher.clone()).run(bridge.bus()));
    }

    fn changes(&self) -> Option<watch::Receiver<u64>> {
        Some(self.settings.changed.subscribe())
    }

    /// The platforms of the last notification and when it went (the `notify` group, hidden
    /// unless the footer settings show it, as in Unipi).
    fn footer_segments(&self) -> Vec<unipi_widgets::footer::Segment> {
        super::footer::segments(self.dispatcher.last_sent().as_ref(), crate::sys::now_ms())
    }

    /// Its tab in `/unipi:info`: platforms on, deliveries since start, the last notification.
    fn info_group(&self) -> Option<BoxFuture<'static, InfoGroup>> {
        let group = super::info::info_group(
            &self.dispatcher.config(),
            self.dispatcher.tally(),
            self.dispatcher.last_sent().as_ref(),
            crate::sys::now_ms(),
        );
        Some(Box::pin(async move { group }))
    }
}

impl NotifyCapability {
    /// `/unipi:notify-test`: a test notification to every enabled platform, and how each went.
    async fn test(self, _call: CommandCall) -> CommandReply {
        let results = self.dispatcher.test().await;
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

    /// `/unipi:notify-settings`: the settings overlay.
    async fn edit_settings(self, _call: CommandCall) -> CommandReply {
        let save = self.save();
        self.settings.open_settings(&SETTINGS_PAGE, save).await
    }

    /// `/unipi:notify-set-*`: one platform's set-up overlay.
    async fn set_up(self, platform: SetUp) -> CommandReply {
        let page = match platform {
            SetUp::Ntfy => &NTFY_PAGE,
            SetUp::Gotify => &GOTIFY_PAGE,
            SetUp::Telegram => &TELEGRAM_PAGE,
        };
        let save = platform.save(self.dispatcher.clone(), self.settings.workspace.clone());
        self.settings.open_settings(page, |_| save).await
    }

    /// Saves into the notify files (the ntfy settings where `config` read them from); the new
    /// settings apply at once.
    fn save(&self) -> impl FnOnce(&NotifyConfig) -> Save {
        let dispatcher = self.dispatcher.clone();
        move |config| {
            let source = config.ntfy_source.clone();
            Arc::new(move |home, values| {
                save(home, &source, values)?;
                dispatcher.reload_config();
                Ok("Saved. In force now.".to_owned())
            })
        }
    }
}
