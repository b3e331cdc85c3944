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
use crate::bridge::Refusal;
use crate::config::ConfigError;
use crate::config::live::LiveConfig;
use crate::views::settings::{SettingsStore, SettingsView, ToValues};

/// A capability's config loader: defaults, then the home file, then the workspace file.
pub type LoadConfig<C> = fn(Option<&Path>, &Path) -> (C, Vec<ConfigError>);

/// A capability's config that follows its files (`relative`: the file or files `load` reads,
/// below the home directory and the workspace), so an edit takes effect at the next use without
/// a restart ([`LiveConfig`]). A problem at start becomes a start-up notice; one found after an
/// edit, a notice on the screen.
pub fn live_reporting<C: Send + Sync + 'static>(
    context: &mut StartContext<'_>,
    relative: &[&str],
    load: LoadConfig<C>,
) -> LiveConfig<C> {
    let (live, errors) = LiveConfig::module(context.home, context.workspace, relative, load);
    for error in &errors {
        context.report(error);
    }
    let ui = context.ui.clone();
    live.reporting(move |errors| {
        for error in errors {
            ui.notice(error.to_string());
        }
    })
}

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
    outcome: Arc<Mutex<Option<Result<String, Refusal>>>>,
    changed: Changed,
}

impl SettingsStore for SaveStore {
    fn save(&self, values: Value) {
        let (home, what, save) = (self.home.clone(), self.what, Arc::clone(&self.save));
        let outcome = Arc::clone(&self.outcome);
        let changed = self.changed.clone();
        tokio::spawn(async move {
            let result: Result<String, Refusal> = match home {
                None => Err("no home directory".into()),
                Some(home) => tokio::task::spawn_blocking(move || save(&home, values))
                    .await
                    .map_err(|err| format!("the save did not finish: {err}").into())
                    .and_then(|saved| saved.map_err(|err| format!("{err:#}").into())),
            };
            if let Err(err) = &result {
                tracing::warn!("saving {what}: {err}");
            }
            *crate::sys::lock(&outcome) = Some(result);
            changed.bump();
        });
    }

    fn take_outcome(&self) -> Option<Result<String, Refusal>> {
        crate::sys::lock(&self.outcome).take()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use anyhow::Context;
    use serde_json::json;

    use super::*;
    use crate::capability::UiRequest;
    use crate::config::keymap::Keymap;

    /// A one-flag config for a page.
    fn load(_home: Option<&Path>, _workspace: &Path) -> (bool, Vec<ConfigError>) {
        (true, Vec::new())
    }

    const PAGE: SettingsPage<bool> = SettingsPage {
        title: "Test settings",
        file: ".unipi/config/test.json",
        what: "test settings",
        load,
        fields: |on| vec![flag("on", "On", *on, "")],
        to_values: |_| json!({}),
    };

    fn home(ui: Ui, home: Option<&Path>) -> SettingsHome {
        SettingsHome {
            ui,
            home: home.map(Path::to_path_buf),
            workspace: PathBuf::from("/nonexistent-workspace"),
            changed: Changed::default(),
        }
    }

    fn keep(_: &bool) -> Save {
        Arc::new(|_, _| Ok("kept".to_owned()))
    }

    #[tokio::test]
    async fn the_overlay_opens_on_a_screen_and_headless_runs_are_told_the_file() {
        let keymap = Arc::new(Keymap::defaults());
        let headless = home(Ui::headless(Arc::clone(&keymap)), None);
        match headless.open_settings(&PAGE, keep).await {
            CommandReply::Failed { message } => assert_eq!(
                message,
                "the settings overlay needs the workbench's screen; edit ~/.unipi/config/test.json"
            ),
            other => panic!("{other:?}"),
        }
        let (ui, mut requests) = Ui::channel(keymap);
        let screen = home(ui, None);
        assert!(matches!(
            screen.open_settings(&PAGE, keep).await,
            CommandReply::Done
        ));
        assert!(matches!(requests.try_recv(), Ok(UiRequest::Open(_))));
    }

    /// Saves `values` through a store and waits for its outcome.
    async fn saved(home: Option<&Path>, save: Save, values: Value) -> Result<String, Refusal> {
        let store = SaveStore {
            home: home.map(Path::to_path_buf),
            what: "test settings",
            save,
            outcome: Arc::new(Mutex::new(None)),
            changed: Changed::default(),
        };
        let mut changed = store.changed.subscribe();
        store.save(values);
        tokio::time::timeout(Duration::from_secs(20), changed.changed())
            .await
            .expect("the save finishes")
            .expect("the signal stays");
        let outcome = store.take_outcome().expect("an outcome");
        assert_eq!(store.take_outcome(), None, "taken once");
        outcome
    }

    #[tokio::test]
    async fn a_save_runs_under_the_home_directory_and_reports_its_outcome() {
        let dir = tempfile::tempdir().unwrap();
        let write: Save = Arc::new(|home, values| {
            let path = home.join("test.json");
            std::fs::write(&path, values.to_string())
                .with_context(|| format!("writing {}", path.display()))?;
            Ok("Saved.".to_owned())
        });
        let outcome = saved(Some(dir.path()), Arc::clone(&write), json!({"on": false})).await;
        assert_eq!(outcome, Ok("Saved.".to_owned()));
        let written = std::fs::read_to_string(dir.path().join("test.json")).unwrap();
        assert_eq!(written, r#"{"on":false}"#);

        let gone = dir.path().join("gone");
        let outcome = saved(Some(&gone), write, json!({})).await;
        let message = outcome.unwrap_err();
        assert!(
            message.starts_with(&format!("writing {}", gone.join("test.json").display())),
            "the error with its context: {message}"
        );

        let outcome = saved(None, keep(&true), json!({})).await;
        assert_eq!(outcome, Err("no home directory".into()));
    }
}
