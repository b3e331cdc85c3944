//! A capability's own JSON config file, the one way it is handled: read at start with its
//! problems reported ([`live_reporting`], followed from then on), and edited through the settings
//! overlay from a `/unipi:*-settings` command ([`SettingsHome::open_settings`]). Ask-user,
//! notifications and background tasks differ only in their config, its settings and what a save
//! does, so the rest — reading the file off the UI loop, the word to a headless run, the store that
//! saves off the UI loop and hands the overlay its outcome, and the table of settings ([`Setting`])
//! that makes the overlay's fields and turns them back into the file's keys — lives here once.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use unipi_widgets::settings::{SettingField, SettingValue};

use super::{Changed, StartContext, Ui};
use crate::bridge::CommandReply;
use crate::bridge::Refusal;
use crate::config::ConfigError;
use crate::config::live::LiveConfig;
use crate::views::settings::{SettingsStore, SettingsView};

/// A capability's config loader: defaults, then the home file, then the workspace file.
pub(crate) type LoadConfig<C> = fn(Option<&Path>, &Path) -> (C, Vec<ConfigError>);

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

/// Says at start when the module's config comes from both the original Unipi's files and ours
/// ([`crate::config::module_file::ModuleConfig::unipi_notice`]).
pub fn report_unipi_files<C: crate::config::module_file::ModuleConfig>(
    context: &mut StartContext<'_>,
) {
    if let Some(notice) = C::unipi_notice(context.home, context.workspace) {
        context.report(notice);
    }
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
    /// The overlay's settings, in the order it shows them.
    pub settings: fn() -> Vec<Setting>,
    /// A config's values as its file writes them (the settings' keys look into it).
    pub values: fn(&C) -> Value,
}

impl<C> SettingsPage<C> {
    /// The overlay's fields for `config`.
    pub fn fields(&self, config: &C) -> Vec<SettingField> {
        let values = (self.values)(config);
        let settings = (self.settings)();
        settings
            .iter()
            .map(|setting| setting.field(&values))
            .collect()
    }

    /// The edited `fields` as the file's keys ([`to_values`]).
    pub fn to_values(&self, fields: &[SettingField]) -> Value {
        to_values(&(self.settings)(), fields)
    }
}

/// One setting of an overlay, declared once: the file's key (a dotted one is nested: `ntfy.topic`
/// is `topic` in the `ntfy` object), the label and help the overlay shows, and its kind, which
/// turns the file's value into the overlay's and back ([`to_values`]).
pub struct Setting {
    pub key: String,
    pub label: String,
    pub kind: Kind,
    pub help: &'static str,
}

/// What a setting's value is.
#[derive(Clone, Copy)]
pub enum Kind {
    Flag,
    /// A whole number within `min..=max`, stepped by `step`, shown in `unit`; the file holds it
    /// times `scale` (shown rounded up), and 0 as null (none) when `zero_is_null`.
    Number {
        unit: &'static str,
        min: u64,
        max: u64,
        step: u64,
        scale: u64,
        zero_is_null: bool,
    },
    /// Typed in; the file holds it trimmed, a cleared one as null (not set).
    Text,
    /// A token: typed, never shown; held as a text is.
    Secret,
    /// One of the names.
    Choice(&'static [&'static str]),
}

/// Said under a field the user types into.
const TYPE: &str = " Enter to type; Backspace clears.";

impl Setting {
    pub fn new(key: &str, label: &str, kind: Kind, help: &'static str) -> Self {
        let (key, label) = (key.to_owned(), label.to_owned());
        Setting {
            key,
            label,
            kind,
            help,
        }
    }

    /// An on/off setting.
    pub fn flag(key: &str, label: &str, help: &'static str) -> Self {
        Setting::new(key, label, Kind::Flag, help)
    }

    /// A number stepped by one within `min..=max`.
    pub fn number(
        key: &'static str,
        label: &'static str,
        (min, max): (u64, u64),
        unit: &'static str,
        help: &'static str,
    ) -> Self {
        let kind = Kind::Number {
            unit,
            min,
            max,
            step: 1,
            scale: 1,
            zero_is_null: false,
        };
        Setting::new(key, label, kind, help)
    }

    /// The overlay's field for the file's `values`.
    fn field(&self, values: &Value) -> SettingField {
        let value = self.key.split('.').fold(values, |value, key| &value[key]);
        let text = || value.as_str().unwrap_or_default().to_owned();
        let mut help = self.help.to_owned();
        let value = match self.kind {
            Kind::Flag => SettingValue::Bool(value.as_bool().unwrap_or_default()),
            Kind::Number {
                unit,
                min,
                max,
                step,
                scale,
                ..
            } => SettingValue::Number {
                value: value.as_u64().unwrap_or_default().div_ceil(scale),
                unit: unit.to_owned(),
                min,
                max,
                step,
            },
            Kind::Text | Kind::Secret => {
                help.push_str(TYPE);
                match self.kind {
                    Kind::Text => SettingValue::Text(text()),
                    _ => SettingValue::Secret(text()),
                }
            }
            Kind::Choice(options) => SettingValue::Choice {
                value: text(),
                options: options.iter().map(|option| (*option).to_owned()).collect(),
            },
        };
        SettingField {
            key: self.key.clone(),
            label: self.label.clone(),
            value,
            help,
        }
    }
}

/// The edited `fields` as the file's keys, nested as their dotted keys say; fields `settings`
/// does not declare are left out.
pub fn to_values(settings: &[Setting], fields: &[SettingField]) -> Value {
    let mut values = Value::Object(serde_json::Map::new());
    for field in fields {
        let Some(setting) = settings.iter().find(|setting| setting.key == field.key) else {
            continue;
        };
        let value = match (&field.value, setting.kind) {
            (
                SettingValue::Number { value: 0, .. },
                Kind::Number {
                    zero_is_null: true, ..
                },
            ) => Value::Null,
            (SettingValue::Number { value, .. }, Kind::Number { min, scale, .. }) => {
                Value::from((*value).max(min).saturating_mul(scale))
            }
            (SettingValue::Bool(on), _) => Value::Bool(*on),
            (SettingValue::Text(text) | SettingValue::Secret(text), _) => match text.trim() {
                "" => Value::Null,
                text => Value::from(text),
            },
            (SettingValue::Choice { value, .. }, _) => Value::from(value.as_str()),
            _ => continue,
        };
        let slot = setting
            .key
            .split('.')
            .fold(&mut values, |object, key| &mut object[key]);
        *slot = value;
    }
    values
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
        let settings = (page.settings)();
        self.ui.open(SettingsView::new(
            page.title,
            page.fields(&config),
            move |fields: &[SettingField]| to_values(&settings, fields),
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
        settings: || vec![Setting::flag("on", "On", "")],
        values: |on| json!({ "on": on }),
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
