//! Sending one notification to its platforms: all at once, each under the settings' timeout, so
//! a slow or failing platform never holds up another — and never anything else: [`Dispatcher::
//! dispatch`] returns at once and the sending runs in its own task. Each platform's outcome is
//! collected (a desktop notification held back because the terminal has focus counts as
//! delivered, as the original's "suppressed"), logged without secrets, and announced on the bus
//! as [`NotificationSent`] (`unipi:notify:sent`).
//!
//! Without a D-Bus session bus the desktop can never be reached: the first such failure says so
//! once (in Pi, and the log) with how to turn the platform off, and alerts stop trying it for the
//! session; `/unipi:notify-test` still tries, and a success there takes it back into use.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use super::bus::{NotificationSent, PlatformResult};
use super::config::{NotifyConfig, Platform, TerminalMethod};
use super::platforms::native::NativeError;
use super::platforms::{Notice, http, native, terminal};
use crate::bridge::{AgentId, BridgeHost, EventBus, HostCall, HostOptions, NotifyLevel};
use crate::capability::Ui;
use crate::config::live::LiveConfig;
use crate::http::LazyClient;
use futures_util::future::join_all;

/// How a platform took a notification.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sent {
    Delivered,
    /// Deliberately not sent (the desktop notification while the terminal has focus).
    Suppressed(&'static str),
}

/// One platform's outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    pub(crate) platform: Platform,
    pub outcome: Result<Sent, String>,
}

impl Delivery {
    pub fn ok(&self) -> bool {
        self.outcome.is_ok()
    }

    fn result(&self) -> PlatformResult {
        let (suppressed, error) = match &self.outcome {
            Ok(Sent::Delivered) => (None, None),
            Ok(Sent::Suppressed(why)) => (Some((*why).to_owned()), None),
            Err(error) => (None, Some(error.clone())),
        };
        PlatformResult {
            platform: self.platform.key().to_owned(),
            success: self.ok(),
            suppressed,
            error,
        }
    }
}

/// Whether the focus rule applies: alerts respect it; a test the user asked for does not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Focus {
    Respect,
    Ignore,
}

#[derive(Clone)]
pub struct Dispatcher {
    inner: Arc<Inner>,
}

struct Inner {
    /// The notify files, followed: an edit applies to the next notification.
    config: LiveConfig<NotifyConfig>,
    ui: Ui,
    /// Built at the first HTTP notification: most sessions never need it.
    client: LazyClient,
    in_tmux: bool,
    /// What `auto` means for the terminal the workbench started in.
    terminal_auto: TerminalMethod,
    bus: OnceLock<EventBus>,
    /// Pi, to tell the user what went wrong where they look (its notifications).
    host: OnceLock<BridgeHost>,
    /// Why the desktop cannot be reached (no session bus): alerts no longer try it.
    no_desktop: Mutex<Option<String>>,
    /// The last notification sent: when (ms) and to which platforms (the footer's segments).
    last_sent: Mutex<Option<LastSent>>,
    /// Deliveries since start, for `/unipi:info`.
    tally: Mutex<Tally>,
}

/// Deliveries since the workbench started: one per platform a notification went to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    pub(crate) delivered: u64,
    pub(crate) failed: u64,
}

/// A notification that went out, as the footer shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LastSent {
    pub at_ms: u64,
    pub platforms: Vec<String>,
}

/// What an alert's desktop notification is, once there proved to be no session bus.
pub(crate) const NO_BUS: &str = "no D-Bus session bus";

/// The most `/unipi:notify-test` waits for a platform: well inside the bridge's budget for a
/// command, so the report always gets back to Pi (the platforms are tried at once).
pub(crate) fn test_wait(config: &NotifyConfig) -> Duration {
    let budget = HostOptions::default().command_timeout;
    config
        .send_timeout
        .min(budget.saturating_sub(Duration::from_secs(2)))
        .max(Duration::from_secs(1))
}

/// `8 s`, `0.5 s`.
fn seconds(duration: Duration) -> String {
    format!("{} s", duration.as_secs_f64())
}

impl Dispatcher {
    pub fn new(
        config: impl Into<LiveConfig<NotifyConfig>>,
        ui: Ui,
        in_tmux: bool,
        terminal_auto: TerminalMethod,
    ) -> Self {
        Dispatcher {
            inner: Arc::new(Inner {
                config: config.into(),
                ui,
                client: LazyClient::default(),
                in_tmux,
                terminal_auto,
                bus: OnceLock::new(),
                host: OnceLock::new(),
                no_desktop: Mutex::new(None),
                last_sent: Mutex::new(None),
                tally: Mutex::new(Tally::default()),
            }),
        }
    }

    /// The notifications' one HTTP client (built at its first use).
    pub(super) async fn client(&self) -> Result<&reqwest::Client, String> {
        self.inner
            .client
            .get(|| {
                reqwest::Client::builder()
                    .user_agent(concat!("unipi-tui/", env!("CARGO_PKG_VERSION")))
                    .build()
                    .map_err(|err| format!("cannot set up HTTP for notifications: {err}"))
            })
            .await
            .map_err(str::to_owned)
    }

    pub fn attach(&self, bus: EventBus) {
        // A second attach (never done by the app) keeps the first bus.
        let _ = self.inner.bus.set(bus);
    }

    /// Pi's end of the bridge, for telling the user (once) that the desktop cannot be reached.
    pub fn attach_host(&self, host: BridgeHost) {
        let _ = self.inner.host.set(host);
    }

    /// The settings as the files are now.
    pub fn config(&self) -> NotifyConfig {
        (*self.inner.config.get()).clone()
    }

    /// The settings overlay saved: in force at once.
    pub fn reload_config(&self) {
        self.inner.config.reload();
    }

    pub fn ui(&self) -> &Ui {
        &self.inner.ui
    }

    /// The last notification sent (memory only).
    pub fn last_sent(&self) -> Option<LastSent> {
        crate::sys::lock(&self.inner.last_sent).clone()
    }

    /// Deliveries since start (the dashboard's figures).
    pub(crate) fn tally(&self) -> Tally {
        *crate::sys::lock(&self.inner.tally)
    }

    /// Sends `notice` for `event_type` to `platforms` in the background and announces the
    /// outcome on the bus. Returns at once.
    pub(crate) fn dispatch(&self, event_type: &str, notice: Notice, platforms: Vec<Platform>) {
        let this = self.clone();
        let event_type = event_type.to_owned();
        tokio::spawn(async move {
            let results = this.send_all(&notice, &platforms, Focus::Respect).await;
            for result in &results {
                match &result.outcome {
                    Ok(sent) => {
                        tracing::info!("notify: {event_type} → {}: {sent:?}", result.platform.key())
                    }
                    Err(error) => tracing::warn!(
                        "notify: {event_type} → {} failed: {error}",
                        result.platform.key()
                    ),
                }
            }
            {
                let failed = results.iter().filter(|result| !result.ok()).count() as u64;
                let mut tally = crate::sys::lock(&this.inner.tally);
                tally.delivered += results.len() as u64 - failed;
                tally.failed += failed;
            }
            *crate::sys::lock(&this.inner.last_sent) = Some(LastSent {
                at_ms: crate::sys::now_ms(),
                platforms: platforms.iter().map(|p| p.key().to_owned()).collect(),
            });
            if let Some(bus) = this.inner.bus.get() {
                bus.publish(
                    "notify",
                    &NotificationSent {
                        event_type,
                        platforms: platforms.iter().map(|p| p.key().to_owned()).collect(),
                        success: !results.is_empty() && results.iter().all(Delivery::ok),
                        timestamp: crate::sys::now_ms(),
                        results: results.iter().map(Delivery::result).collect(),
                    },
                );
            }
        });
    }

    /// Sends to every platform at once and collects each outcome.
    pub(crate) async fn send_all(
        &self,
        notice: &Notice,
        platforms: &[Platform],
        focus: Focus,
    ) -> Vec<Delivery> {
        join_all(platforms.iter().map(|platform| async move {
            Delivery {
                platform: *platform,
                outcome: self.send_one(*platform, notice, focus).await,
            }
        }))
        .await
    }

    /// Sends to one platform under the timeout.
    pub(crate) async fn send_one(
        &self,
        platform: Platform,
        notice: &Notice,
        focus: Focus,
    ) -> Result<Sent, String> {
        let config = self.config();
        if let Some(missing) = config.missing(platform) {
            return Err(missing.to_owned());
        }
        let timeout = config.send_timeout;
        let send = async {
            match platform {
                Platform::Native => {
                    let screen = self.inner.ui.screen();
                    if focus == Focus::Respect && screen.attached && screen.focused {
                        return Ok(Sent::Suppressed("the terminal has focus"));
                    }
                    if focus == Focus::Respect && self.no_desktop().is_some() {
                        return Ok(Sent::Suppressed(NO_BUS));
                    }
                    match native::send(notice).await {
                        Ok(()) => {
                            self.set_no_desktop(None);
                            Ok(Sent::Delivered)
                        }
                        Err(NativeError::NoBus(why)) => {
                            self.set_no_desktop(Some(&why));
                            Err(why)
                        }
                        Err(NativeError::Failed(why)) => Err(why),
                    }
                }
                Platform::Terminal => {
                    let method = match config.terminal_method {
                        TerminalMethod::Auto => self.inner.terminal_auto,
                        method => method,
                    };
                    let bytes = terminal::bytes(method, self.inner.in_tmux, notice);
                    if !self.inner.ui.screen().attached || !self.inner.ui.terminal(bytes) {
                        // A run without the pane (print mode, a script) has no terminal to tell.
                        return Ok(Sent::Suppressed("no terminal is attached"));
                    }
                    Ok(Sent::Delivered)
                }
                Platform::Ntfy => {
                    http::post(
                        self.client().await?,
                        http::ntfy_request(&config.ntfy, notice),
                    )
                    .await?;
                    Ok(Sent::Delivered)
                }
                Platform::Gotify => {
                    let request = http::gotify_request(&config.gotify, notice);
                    http::post(self.client().await?, request).await?;
                    Ok(Sent::Delivered)
                }
                Platform::Telegram => {
                    let request = http::telegram_request(&config.telegram, notice);
                    http::post(self.client().await?, request).await?;
                    Ok(Sent::Delivered)
                }
            }
        };
        tokio::time::timeout(timeout, send)
            .await
            .unwrap_or_else(|_| Err(format!("no answer within {}", seconds(timeout))))
    }

    /// `/unipi:notify-test`: every enabled platform at once, set up or not (so the user sees
    /// what is missing), ignoring focus, each given [`test_wait`] so the report makes it back
    /// within the command's budget; nothing is announced on the bus.
    pub async fn test(&self) -> Vec<Delivery> {
        let config = self.config();
        let notice = Notice::new(
            "Pi — Test Notification",
            format!("Test notification sent at {}", clock_utc()),
            super::config::Priority::Normal,
        );
        let wait = test_wait(&config);
        let platforms: Vec<Platform> = Platform::ALL
            .iter()
            .copied()
            .filter(|platform| config.enabled(*platform))
            .collect();
        join_all(platforms.into_iter().map(|platform| {
            let notice = &notice;
            async move {
                let send = self.send_one(platform, notice, Focus::Ignore);
                let outcome = tokio::time::timeout(wait, send)
                    .await
                    .unwrap_or_else(|_| Err(format!("no answer within {}", seconds(wait))));
                Delivery { platform, outcome }
            }
        }))
        .await
    }

    fn no_desktop(&self) -> Option<String> {
        self.inner
            .no_desktop
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Records whether the desktop can be reached; the first time it cannot, tells the user.
    fn set_no_desktop(&self, why: Option<&str>) {
        let before = std::mem::replace(
            &mut *self
                .inner
                .no_desktop
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
            why.map(str::to_owned),
        );
        let Some(why) = why.filter(|_| before.is_none()) else {
            return;
        };
        let message = format!(
            "Desktop notifications stopped: {why}. Turn the native platform off with \
             /unipi:notify-settings (or \"native\": {{\"enabled\": false}} in \
             ~/.unipi/config/notify/config.json)."
        );
        tracing::warn!("notify: {message}");
        match self.inner.host.get() {
            Some(host) => {
                let host = host.clone();
                tokio::spawn(async move {
                    let call = HostCall::Notify {
                        message,
                        level: NotifyLevel::Warning,
                    };
                    if let Err(err) = host.call(&AgentId::main(), call).await {
                        tracing::debug!("notify: cannot tell Pi about the desktop: {err}");
                    }
                });
            }
            None => {
                self.inner
                    .ui
                    .notice(format!("Desktop notifications stopped: {NO_BUS}"));
            }
        }
    }
}

/// `HH:MM:SS UTC` now.
fn clock_utc() -> String {
    let seconds = crate::sys::now_ms() / 1000 % 86_400;
    format!(
        "{:02}:{:02}:{:02} UTC",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60
    )
}

/// The test's report: `✓ Native: sent` / `✗ Gotify: <why>`, one line each.
pub(crate) fn test_report(results: &[Delivery]) -> String {
    if results.is_empty() {
        return "No platforms enabled. Use /unipi:notify-settings first.".to_owned();
    }
    results
        .iter()
        .map(|result| match &result.outcome {
            Ok(Sent::Delivered) => format!("✓ {}: sent", result.platform.label()),
            Ok(Sent::Suppressed(why)) => format!("– {}: not sent ({why})", result.platform.label()),
            Err(error) => format!("✗ {}: {error}", result.platform.label()),
        })
        .collect::<Vec<_>>()
        .join("\n")
}
