//! A capability's own JSON config file, the one way it is handled: read at start with its
//! problems reported ([`load_reporting`]), and edited through the settings overlay from a
//! `/unipi:*-settings` command ([`SettingsHome::open_settings`]). Ask-user, notifications and
//! background tasks differ only in their config, its fields and what a save does, so the rest —
//! reading the file off the UI loop, the word to a headless run, the store that saves off the UI
//! loop and hands the overlay its outcome — lives here once, with the constructors of the
//! overlay's fields.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use unipi_widgets::settings::{SettingField, SettingValue};

use super::{Changed, StartContext, Ui};
use crate::bridge::CommandReply;
use crate::config::ConfigError;
use crate::views::settings::{SettingsStore, SettingsView, ToValues};

/// A capability's config loader: defaults, then the home file, then the workspace file.
pub type LoadConfig<C> = fn(Option<&Path>, &Path) -> (C, Vec<ConfigError>);

/// Loads a capability's config at start; each problem becomes a start-up notice.
pub fn load_reporting<C>(context: &mut StartContext<'_>, load: LoadConfig<C>) -> C {
    let (config, errors) = load(context.home, context.workspace);
    for error in &errors {
        context.report(error);
    }
    config
}

/// What one capability's settings overlay shows and reads.
pub struct SettingsPage<C> {
    /// The overlay's title.
    pub title: &'static str,
    /// The config file below the home directory (named to a run without a screen).
    pub file: &'static str,
    /// What the settings are called in messages and logs ("ask-user settings").
    pub what: &'static str,
    pub load: LoadConfig<C>,
    /// The overlay's fields for a config.
    pub fields: fn(&C) -> Vec<SettingField>,
    /// The edited fields back into the file's keys.
    pub to_values: ToValues,
}

/// The overlay's field for the file's `key`, shown as `label` with `help` under it.
pub fn field(key: &str, label: &str, value: SettingValue, help: &str) -> SettingField {
    SettingField {
        key: key.to_owned(),
        label: label.to_owned(),
        value,
        help: help.to_owned(),
    }
}

/// An on/off field.
pub fn flag(key: &str, label: &str, on: bool, help: &str) -> SettingField {
    field(key, label, SettingValue::Bool(on), help)
}

/// A text field; not set shows empty.
pub fn text(key: &str, label: &str, value: Option<&str>, help: &str) -> SettingField {
    let value = value.unwrap_or_default().to_owned();
    field(key, label, SettingValue::Text(value), help)
}

/// A secret field (a token): typed, never shown.
pub fn secret(key: &str, label: &str, value: Option<&str>, help: &str) -> SettingField {
    let value = value.unwrap_or_default().to_owned();
    field(key, label, SettingValue::Secret(value), help)
}

/// Writes the overlay's values under the home directory (blocking I/O, run off the UI loop),
/// puts them in force as far as they take effect at once, and says what the user is told.
pub type Save = Arc<dyn Fn(&Path, Value) -> anyhow::Result<String> + Send + Sync>;

/// Where a capability's settings live and whom to tell when a save is done.
#[derive(Clone)]
pub struct SettingsHome {
    pub ui: Ui,
    pub home: Option<PathBuf>,
    pub workspace: PathBuf,
    pub changed: Changed,
}

impl SettingsHome {
    pub fn new(context: &StartContext<'_>, changed: Changed) -> Self {
        SettingsHome {
            ui: context.ui.clone(),
            home: context.home.map(PathBuf::from),
            workspace: context.workspace.to_path_buf(),
            changed,
        }
    }

    /// Opens `page`'s overlay with the config as it is on disk now; `save` is given that config
    /// (a save may depend on where it was read from).
    pub async fn open_settings<C: Send + 'static>(
        &self,
        page: &SettingsPage<C>,
        save: impl FnOnce(&C) -> Save,
    ) -> CommandReply {
        if !self.ui.has_screen() {
            return CommandReply::Failed {
                message: format!(
                    "the settings overlay needs the workbench's screen; edit ~/{}",
                    page.file
                ),
            };
        }
        let (home, workspace, load) = (self.home.clone(), self.workspace.clone(), page.load);
        let loaded = tokio::task::spawn_blocking(move || load(home.as_deref(), &workspace)).await;
        let Ok((config, _errors)) = loaded else {
            return CommandReply::Failed {
                message: format!("reading the {} failed", page.what),
            };
        };
        let store = Arc::new(SaveStore {
            home: self.home.clone(),
            what: page.what,
            save: save(&config),
            outcome: Arc::new(Mutex::new(None)),
            changed: self.changed.clone(),
        });
        self.ui.open(SettingsView::new(
            page.title,
            (page.fields)(&config),
            page.to_values,
            store,
        ));
        CommandReply::Done
    }
}

/// Saves off the UI loop through the capability's [`Save`], then signals its change so the
/// overlay pulls the outcome.
struct SaveStore {
    home: Option<PathBuf>,
    what: &'static str,
    save: Save,
    outcome: Arc<Mutex<Option<Result<String, String>>>>,
    changed: Changed,
}

impl SettingsStore for SaveStore {
    fn save(&self, values: Value) {
        let (home, what, save) = (self.home.clone(), self.what, Arc::clone(&self.save));
        let outcome = Arc::clone(&self.outcome);
        let changed = self.changed.clone();
        tokio::spawn(async move {
            let result = match home {
                None => Err("no home directory".to_owned()),
                Some(home) => tokio::task::spawn_blocking(move || save(&home, values))
                    .await
                    .map_err(|err| format!("the save did not finish: {err}"))
                    .and_then(|saved| saved.map_err(|err| format!("{err:#}"))),
            };
            if let Err(err) = &result {
                tracing::warn!("saving {what}: {err}");
            }
            *crate::sys::lock(&outcome) = Some(result);
            changed.bump();
        });
    }

    fn take_outcome(&self) -> Option<Result<String, String>> {
        crate::sys::lock(&self.outcome).take()
    }
}
