//! Model fusion as a workbench capability: started from the presets file (always: the picker
//! and the commands work before any preset exists), its bridge module, the commands (with the
//! preset names as completions), the
//! footer segment, Alt+M for the picker, the views' ports over the engine, the bus follower
//! (the main Pi's events, the helpers' usage, status queries), and stopping the sidekick on every
//! exit path.

use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::watch;
use unipi_widgets::dashboard::{InfoGroup, InfoRow};
use unipi_widgets::footer::{Segment, format_cost, format_tokens};
use unipi_widgets::fusion::presets::PresetRow;
use unipi_widgets::fusion::saved_text;
use unipi_widgets::notice::NoticeModel;

use super::config::{FUSION_CONFIG_FILE, FusionConfig, ModelRef, Preset};
use super::engine::{BridgeMainPi, Engine, minutes, shown_path};
use super::ledger::Ledger;
use super::module::FusionModule;
use super::picker::{PICKER_KEYS, PickerPort, PickerView};
use super::presets_view::{NAME_KEYS, PRESETS_KEYS, PresetsPort, PresetsView};
use super::runtime::SidekickRuntime;
use crate::bridge::{
    Command, CommandCall, CommandReply, CommandSpec, Completion, Module, NotifyLevel, Refusal,
};
use crate::capability::settings::live_reporting;
use crate::capability::{
    BridgeLink, Capability, GlobalAction, Otherwise, Registration, StartContext,
};
use crate::config::module_file::ModuleConfig;
use crate::sessiondb::SidekickTotals;
use crate::sys::lock;
use crate::views::pager::PagedView;

pub const REGISTRATION: Registration = Registration {
    name: "fusion",
    start,
    key_tables: &[&PICKER_KEYS, &PRESETS_KEYS, &NAME_KEYS],
    actions: &[&PICKER_ACTION],
    dock: None,
};

/// Alt+M: the picker, as `/unipi:model` with no arguments opens it.
static PICKER_ACTION: GlobalAction = GlobalAction {
    name: "fusion.picker",
    description: "Pick the primary and sidekick models",
    keys: &["alt+m"],
    under_views: false,
    otherwise: Otherwise::Notice("Model fusion is off: no picker to open"),
    help_order: 40,
};

/// The preset a pair picked without one is saved as.
const DEFAULT_PRESET: &str = "default";

fn start(context: &mut StartContext<'_>) -> Option<Arc<dyn Capability>> {
    // Followed: presets edited by hand are taken at the next use; the active preset is applied
    // at start (switching it later is /unipi:fusion-preset's).
    let config = live_reporting(context, &[FUSION_CONFIG_FILE], FusionConfig::load);
    let runtime = SidekickRuntime::new(context.child_pi(), context.workspace.to_path_buf());
    let ledger = Ledger::for_project(context.home, context.workspace);
    let engine = Arc::new(Engine::new(context.ui.clone(), config, runtime, ledger));
    Some(Arc::new(FusionCapability { engine }))
}

struct FusionCapability {
    engine: Arc<Engine>,
}

impl Capability for FusionCapability {
    fn modules(&self) -> Vec<Arc<dyn Module>> {
        vec![Arc::new(FusionModule)]
    }

    fn info_group(&self) -> Option<BoxFuture<'static, InfoGroup>> {
        let group = info_group(&self.engine.status());
        Some(Box::pin(async move { group }))
    }

    fn commands(&self) -> Vec<Command> {
        let engine = &self.engine;
        let presets = Arc::clone(engine);
        vec![
            Command::new(
                CommandSpec::new(
                    "unipi:model",
                    "Pick the primary and sidekick models (or: /unipi:model <primary> <sidekick>)",
                ),
                Arc::clone(engine),
                model_command,
            ),
            Command::new(
                CommandSpec::new(
                    "unipi:fusion-preset",
                    "Edit the model-fusion presets (or: /unipi:fusion-preset <name> applies one)",
                ),
                Arc::clone(engine),
                preset_command,
            )
            .completer(move |prefix| preset_names(&presets, prefix)),
            Command::new(
                CommandSpec::new(
                    "unipi:fusion-status",
                    "Model fusion: the pair, the fallback and what the sidekick saved",
                ),
                Arc::clone(engine),
                status_command,
            ),
        ]
    }

    fn attach(&self, bridge: &BridgeLink) {
        let bus = bridge.bus();
        self.engine
            .connect(Arc::new(BridgeMainPi(bridge.host.clone())), bus.clone());
        let engine = self.engine.clone();
        let mut events = bus.subscribe();
        tokio::spawn(async move {
            loop {
                match events.recv().await {
                    Ok(event) => engine.on_bus(event),
                    Err(RecvError::Lagged(missed)) => {
                        tracing::debug!("fusion: {missed} bus events missed");
                    }
                    Err(RecvError::Closed) => break,
                }
            }
        });
        // Modules that follow the status learn that fusion is here (and off, until a pair).
        self.engine.publish();
    }

    fn changes(&self) -> Option<watch::Receiver<u64>> {
        Some(self.engine.changed().subscribe())
    }

    fn footer_segments(&self) -> Vec<Segment> {
        self.engine.segment().into_iter().collect()
    }

    fn action(&self, name: &str) -> bool {
        if name != PICKER_ACTION.name {
            return false;
        }
        let engine = self.engine.clone();
        tokio::spawn(async move {
            if let Err(err) = open_picker(&engine).await {
                engine.ui().notice(err);
            }
        });
        true
    }

    fn shutdown(&self) -> BoxFuture<'static, ()> {
        let engine = self.engine.clone();
        Box::pin(async move { engine.shutdown().await })
    }

    fn kill_now(&self) {
        self.engine.runtime().kill_now();
    }
}

/// `/unipi:model`: the picker; its words headless; `<primary> <sidekick>` applies that pair.
async fn model_command(engine: Arc<Engine>, call: CommandCall) -> CommandReply {
    let args = call.args.trim();
    reply(if !args.is_empty() {
        apply_pair_from_args(&engine, args).await.map(Some)
    } else if engine.ui().has_screen() {
        open_picker(&engine).await.map(|()| None)
    } else {
        Ok(Some(status_lines(&engine, None).join("\n")))
    })
}

/// `/unipi:fusion-preset`: the presets editor; the list headless; `<name>` applies that preset.
async fn preset_command(engine: Arc<Engine>, call: CommandCall) -> CommandReply {
    let args = call.args.trim();
    let ui = engine.ui().clone();
    reply(if !args.is_empty() {
        apply_preset(&engine, args).await.map(Some)
    } else if ui.has_screen() {
        let port = Arc::new(EnginePresets::new(engine.clone()));
        ui.open(PresetsView::new(port, ui.keymap()));
        Ok(None)
    } else {
        Ok(Some(preset_list(&engine)))
    })
}

/// `/unipi:fusion-preset <name>` completes the preset names.
fn preset_names(engine: &Engine, prefix: &str) -> Vec<Completion> {
    let config = engine.config();
    config
        .presets
        .iter()
        .filter(|(name, _)| name.starts_with(prefix.trim()))
        .map(|(name, preset)| {
            Completion::new(name.clone())
                .describe(format!("{} + {}", preset.primary, preset.sidekick))
        })
        .collect()
}

/// `/unipi:fusion-status`: the pair, the fallback and the savings, in a pager (words headless).
async fn status_command(engine: Arc<Engine>, _call: CommandCall) -> CommandReply {
    let ui = engine.ui().clone();
    let breakdown = engine.breakdown().await;
    let lines = status_lines(&engine, Some(breakdown));
    if ui.has_screen() {
        let model = NoticeModel {
            title: "Model fusion".to_owned(),
            messages: lines,
            hint: String::new(),
            scroll: 0,
        };
        ui.open(PagedView::new(model, ui.keymap()));
        reply(Ok(None))
    } else {
        reply(Ok(Some(lines.join("\n"))))
    }
}

/// A fusion command's outcome as Pi's answer: nothing to say, a notice, or the refusal.
fn reply(outcome: Result<Option<String>, Refusal>) -> CommandReply {
    match outcome {
        Ok(None) => CommandReply::Done,
        Ok(Some(message)) => CommandReply::Notify {
            message,
            level: NotifyLevel::Info,
        },
        Err(refusal) => refusal.into(),
    }
}

/// Lists Pi's models and opens the picker over them, with the pair in force in its slots.
async fn open_picker(engine: &Arc<Engine>) -> Result<(), Refusal> {
    let models = engine.models().await?;
    let state = engine.state();
    let current = state.primary.clone().zip(state.sidekick.clone());
    let port = Arc::new(EnginePicker(engine.clone()));
    let ui = engine.ui();
    ui.open(PickerView::new(models, current, port, ui.keymap()));
    Ok(())
}

/// `/unipi:model <primary> <sidekick>`.
async fn apply_pair_from_args(engine: &Arc<Engine>, args: &str) -> Result<String, Refusal> {
    let parts: Vec<&str> = args.split_whitespace().collect();
    let [primary, sidekick] = parts.as_slice() else {
        return Err("Usage: /unipi:model <provider/primary> <provider/sidekick>".into());
    };
    let parse = |text: &str| {
        ModelRef::parse(text).ok_or_else(|| format!("`{text}` is not a model as provider/id"))
    };
    apply_picked(engine, parse(primary)?, parse(sidekick)?).await
}

/// A pair picked by hand becomes the active preset (keeping that preset's fallback).
async fn apply_picked(
    engine: &Arc<Engine>,
    primary: ModelRef,
    sidekick: ModelRef,
) -> Result<String, Refusal> {
    let config = engine.config();
    let name = config
        .active
        .clone()
        .unwrap_or_else(|| DEFAULT_PRESET.to_owned());
    let mut preset = Preset::new(primary, sidekick);
    if let Some(previous) = config.presets.get(&name) {
        preset.fallback.clone_from(&previous.fallback);
        preset.cooldown = previous.cooldown;
    }
    engine.apply(&name, preset, true).await
}

/// `/unipi:fusion-preset <name>`.
async fn apply_preset(engine: &Arc<Engine>, name: &str) -> Result<String, Refusal> {
    let preset = engine
        .config()
        .presets
        .get(name)
        .cloned()
        .ok_or_else(|| format!("No fusion preset named `{name}`: {}", preset_list(engine)))?;
    engine.apply(name, preset, true).await
}

fn preset_list(engine: &Engine) -> String {
    let config = engine.config();
    if config.presets.is_empty() {
        return format!(
            "No fusion presets yet ({}): /unipi:model picks a pair",
            shown_path(&config.target)
        );
    }
    let names: Vec<String> = config
        .presets
        .iter()
        .map(|(name, preset)| format!("{name} ({} + {})", preset.primary, preset.sidekick))
        .collect();
    format!("Fusion presets: {}", names.join(", "))
}

/// The status overlay's lines (and the headless answer).
fn status_lines(
    engine: &Engine,
    breakdown: Option<Result<super::ledger::Breakdown, Refusal>>,
) -> Vec<String> {
    let state = engine.state();
    let config = engine.config();
    let mut lines = Vec::new();
    match (&state.primary, &state.sidekick) {
        (Some(primary), Some(sidekick)) => {
            let preset = state.preset.as_deref().unwrap_or("none");
            lines.push(format!(
                "Pair: {} (primary) + {} (sidekick), preset {preset}",
                primary.qualified(),
                sidekick.qualified()
            ));
            lines.push(super::savings::ratio_line(
                primary.cost.as_ref(),
                sidekick.cost.as_ref(),
            ));
        }
        _ => lines
            .push("Model fusion is off: /unipi:model picks a primary and a sidekick".to_owned()),
    }
    lines.push(match (engine.active_fallback(), &state.fallback) {
        (Some((model, until)), _) => {
            let left = until.saturating_duration_since(std::time::Instant::now());
            format!(
                "Fallback active: {model} stands in for the primary for {} more min",
                minutes(left)
            )
        }
        (None, Some(fallback)) => format!(
            "Fallback: {fallback} when the primary is rate-limited (for {} min)",
            minutes(state.cooldown)
        ),
        (None, None) => "Fallback: none (a preset's \"fallback\" names one)".to_owned(),
    });
    if state.is_on() {
        lines.push(format!(
            "Sidekick runtime: {}; warm pool for helpers: up to {} idle Pis, stopped after {} min idle",
            match engine.runtime().group() {
                Some(group) => format!("running (process group {})", group.raw()),
                None => "not running".to_owned(),
            },
            config.pool.size,
            minutes(config.pool.idle)
        ));
    }
    lines.push(format!(
        "This session: {}",
        totals_text(&state.session_totals())
    ));
    lines.push(format!(
        "All time in this project: {}",
        totals_text(&state.all_totals())
    ));
    match breakdown {
        Some(Ok((session, all))) => {
            for (label, rows) in [
                ("This session by source", session),
                ("All time by source", all),
            ] {
                if rows.is_empty() {
                    continue;
                }
                let parts: Vec<String> = rows
                    .iter()
                    .map(|(source, totals)| format!("{source}: {}", totals_text(totals)))
                    .collect();
                lines.push(format!("{label}: {}", parts.join(" · ")));
            }
        }
        Some(Err(err)) => lines.push(format!("The stored totals could not be read: {err}")),
        None => {}
    }
    lines.push(format!("Presets: {}", shown_path(&config.target)));
    lines
}

fn totals_text(totals: &SidekickTotals) -> String {
    let calls = if totals.calls == 1 { "call" } else { "calls" };
    format!(
        "{} {calls}, {} tokens, {} on the sidekick against {} on the primary, {}",
        totals.calls,
        format_tokens(totals.tokens),
        format_cost(totals.sidekick_cost),
        format_cost(totals.primary_cost),
        saved_text(totals.saved())
    )
}

/// The picker's port: applying runs in the background and ends in a footer notice.
struct EnginePicker(Arc<Engine>);

impl PickerPort for EnginePicker {
    fn apply(&self, primary: ModelRef, sidekick: ModelRef) {
        let engine = self.0.clone();
        tokio::spawn(async move {
            let notice = match apply_picked(&engine, primary, sidekick).await {
                Ok(message) => message,
                Err(refusal) => refusal.into_text(),
            };
            engine.ui().notice(notice);
        });
    }
}

/// The preset editor's port.
struct EnginePresets {
    engine: Arc<Engine>,
    notice: Arc<Mutex<Option<String>>>,
    /// Fires when the last background job's notice is out. The next job waits for it before
    /// giving its own, so notices come in the order of the edits even when a later write ends
    /// first (the last notice is the last edit's outcome).
    previous: Mutex<Option<tokio::sync::oneshot::Receiver<()>>>,
}

impl EnginePresets {
    fn new(engine: Arc<Engine>) -> Self {
        EnginePresets {
            engine,
            notice: Arc::new(Mutex::new(None)),
            previous: Mutex::new(None),
        }
    }

    /// Edits the config now (a refused edit changes nothing) and writes it in the background;
    /// the write's outcome is the next notice.
    fn edit(
        &self,
        edit: impl FnOnce(&mut super::config::FusionConfig) -> Result<(), Refusal>,
        done: String,
    ) -> Result<(), Refusal> {
        let write = self.engine.edit_config(edit)?;
        self.spawn(async move { write.finish().await.map(|()| done) });
        Ok(())
    }

    /// Runs `work` in the background; its message is the next notice.
    fn spawn(
        &self,
        work: impl std::future::Future<Output = Result<String, Refusal>> + Send + 'static,
    ) {
        let (engine, notice) = (self.engine.clone(), self.notice.clone());
        let (done, next) = tokio::sync::oneshot::channel();
        let previous = lock(&self.previous).replace(next);
        tokio::spawn(async move {
            let text = match work.await {
                Ok(message) => message,
                Err(refusal) => refusal.into_text(),
            };
            if let Some(previous) = previous {
                // A job that panicked drops its sender: its turn is over too.
                let _ = previous.await;
            }
            *lock(&notice) = Some(text);
            engine.changed().bump();
            let _ = done.send(());
        });
    }
}

fn check_name(name: &str) -> Result<(), Refusal> {
    if name.trim().is_empty() {
        return Err("A preset needs a name".into());
    }
    if name.chars().any(char::is_control) {
        return Err("A preset's name cannot hold control characters".into());
    }
    Ok(())
}

impl PresetsPort for EnginePresets {
    fn rows(&self) -> (Vec<PresetRow>, String) {
        let config = self.engine.config();
        let state = self.engine.state();
        let rows = config
            .presets
            .iter()
            .map(|(name, preset)| PresetRow {
                name: name.clone(),
                primary: preset.primary.to_string(),
                sidekick: preset.sidekick.to_string(),
                fallback: preset.fallback.as_ref().map(ToString::to_string),
                active: config.active.as_deref() == Some(name) && state.is_on(),
            })
            .collect();
        let current = match (&state.primary, &state.sidekick) {
            (Some(primary), Some(sidekick)) => format!(
                "Now: {} + {} (preset {})",
                primary.qualified(),
                sidekick.qualified(),
                state.preset.as_deref().unwrap_or("none")
            ),
            _ => "Model fusion is off".to_owned(),
        };
        (rows, current)
    }

    fn apply(&self, name: &str) {
        let (engine, name) = (self.engine.clone(), name.to_owned());
        self.spawn(async move { apply_preset(&engine, &name).await });
    }

    fn save_current(&self, name: &str) -> Result<(), Refusal> {
        check_name(name)?;
        let state = self.engine.state();
        let (Some(primary), Some(sidekick)) = (&state.primary, &state.sidekick) else {
            return Err("No pair is in force to save: /unipi:model picks one".into());
        };
        let mut preset = Preset::new(
            super::engine::model_ref(primary),
            super::engine::model_ref(sidekick),
        );
        preset.fallback.clone_from(&state.fallback);
        preset.cooldown = state.cooldown;
        self.edit(
            |config| {
                if config.presets.contains_key(name) {
                    return Err(
                        format!("A preset named {name} exists: rename or delete it first").into(),
                    );
                }
                config.presets.insert(name.to_owned(), preset);
                Ok(())
            },
            format!("Saved the pair in force as {name}"),
        )
    }

    fn rename(&self, from: &str, to: &str) -> Result<(), Refusal> {
        check_name(to)?;
        if from == to {
            return Ok(());
        }
        self.edit(
            |config| {
                if config.presets.contains_key(to) {
                    return Err(format!("A preset named {to} exists").into());
                }
                let preset = config
                    .presets
                    .remove(from)
                    .ok_or_else(|| format!("No preset named {from}"))?;
                config.presets.insert(to.to_owned(), preset);
                if config.active.as_deref() == Some(from) {
                    config.active = Some(to.to_owned());
                }
                Ok(())
            },
            format!("Renamed {from} to {to}"),
        )?;
        // Outside the config's lock: the engine takes its state's lock before the config's.
        self.engine.renamed_preset(from, to);
        Ok(())
    }

    fn delete(&self, name: &str) -> Result<(), Refusal> {
        self.edit(
            |config| {
                if config.active.as_deref() == Some(name) {
                    return Err(format!(
                        "{name} is the active preset: apply another or turn fusion off first"
                    )
                    .into());
                }
                config
                    .presets
                    .remove(name)
                    .ok_or_else(|| format!("No preset named {name}"))?;
                Ok(())
            },
            format!("Deleted {name}"),
        )
    }

    fn off(&self) {
        let engine = self.engine.clone();
        self.spawn(async move { engine.turn_off().await });
    }

    fn take_notice(&self) -> Option<String> {
        lock(&self.notice).take()
    }
}

/// Fusion's tab in `/unipi:info`: the pair in force and what the sidekick saved, this session
/// and in all.
fn info_group(status: &super::bus::FusionStatus) -> InfoGroup {
    let pair = match (&status.primary, &status.sidekick) {
        (Some(primary), Some(sidekick)) if status.active => format!("{primary} + {sidekick}"),
        _ => "off".to_owned(),
    };
    let mut rows = vec![InfoRow::new("Pair", pair)];
    if let Some(fallback) = &status.fallback {
        rows.push(InfoRow::new("Fallback", fallback.model.clone()));
    }
    for (label, totals) in [
        ("Saved this session", &status.savings.session),
        ("Saved in all", &status.savings.all_time),
    ] {
        rows.push(
            InfoRow::new(label, format_cost(totals.saved)).detail(format!(
                "{} sidekick calls · {} tokens · sidekick {} instead of {}",
                totals.calls,
                format_tokens(totals.tokens),
                format_cost(totals.sidekick_cost),
                format_cost(totals.primary_cost)
            )),
        );
    }
    InfoGroup {
        id: "fusion".to_owned(),
        title: "Fusion".to_owned(),
        rows,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use super::*;
    use crate::capability::ChildPi;
    use crate::fusion::config::{FUSION_CONFIG_FILE, FusionConfig};
    use std::time::Duration;

    /// The preset editor's port over a real engine and presets file (no Pi: nothing is applied).
    fn presets_port(dir: &std::path::Path, json: &str) -> (EnginePresets, std::path::PathBuf) {
        let sidekick = ChildPi {
            program: "/bin/false".into(),
            leading_args: Vec::new(),
            env: Vec::new(),
        };
        let engine = crate::fusion::engine::tests::engine_in(dir, json, sidekick);
        (
            EnginePresets::new(engine),
            dir.join("home").join(FUSION_CONFIG_FILE),
        )
    }

    /// Waits (bounded, on the engine's change signal) until the port's writes are done — its
    /// last notice is `last` — and returns the presets file as it is then.
    async fn written(port: &EnginePresets, dir: &std::path::Path, last: &str) -> FusionConfig {
        let mut changes = port.engine.changed().subscribe();
        let done = async {
            while port.take_notice().as_deref() != Some(last) {
                changes.changed().await.unwrap();
            }
        };
        tokio::time::timeout(Duration::from_secs(10), done)
            .await
            .expect("the edits end within 10 s");
        FusionConfig::load(Some(&dir.join("home")), &dir.join("work")).0
    }

    /// A later job whose work ends first still gives its notice after the earlier job's, so
    /// the last notice is the last job's outcome (two edits' writes can end in either order).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_later_job_that_ends_first_still_gives_the_last_notice() {
        let dir = tempfile::tempdir().unwrap();
        let (port, _file) = presets_port(dir.path(), r#"{"presets": {}}"#);
        let mut changes = port.engine.changed().subscribe();
        let start = *changes.borrow_and_update();
        let (open, gate) = tokio::sync::oneshot::channel::<()>();
        let (ran, second_ran) = tokio::sync::oneshot::channel::<()>();
        port.spawn(async move {
            let _ = gate.await;
            Ok("first".to_owned())
        });
        port.spawn(async move {
            let _ = ran.send(());
            Ok("second".to_owned())
        });
        // The second job's work is over before the first one's starts to end.
        second_ran.await.unwrap();
        open.send(()).unwrap();
        tokio::time::timeout(
            Duration::from_secs(10),
            changes.wait_for(|version| version.wrapping_sub(start) >= 2),
        )
        .await
        .expect("both notices within 10 s")
        .unwrap();
        assert_eq!(port.take_notice().as_deref(), Some("second"));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn edits_in_quick_succession_all_reach_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let (port, file) = presets_port(
            dir.path(),
            r#"{"presets": {"a": {"primary": "p/1", "sidekick": "p/2"},
                "c": {"primary": "p/3", "sidekick": "p/4"},
                "d": {"primary": "p/5", "sidekick": "p/6"}}}"#,
        );
        // Each edit is seen by the next at once, whether or not its write has finished.
        port.rename("a", "b").unwrap();
        assert_eq!(
            port.rename("d", "b").unwrap_err(),
            "A preset named b exists"
        );
        port.delete("c").unwrap();
        let rows: Vec<String> = port.rows().0.into_iter().map(|row| row.name).collect();
        assert_eq!(rows, ["b", "d"]);
        let saved = written(&port, dir.path(), "Deleted c").await;
        assert_eq!(
            saved.presets.keys().collect::<Vec<_>>(),
            ["b", "d"],
            "{}",
            std::fs::read_to_string(&file).unwrap()
        );
        assert_eq!(saved.presets["b"].primary.to_string(), "p/1");
    }

    #[tokio::test]
    async fn the_active_preset_cannot_be_deleted_and_a_rename_follows_it() {
        let dir = tempfile::tempdir().unwrap();
        let (port, _file) = presets_port(
            dir.path(),
            r#"{"active": "a", "presets": {"a": {"primary": "p/1", "sidekick": "p/2"}}}"#,
        );
        let refused = port.delete("a").unwrap_err();
        assert!(refused.starts_with("a is the active preset"), "{refused}");
        assert_eq!(port.rename("a", " ").unwrap_err(), "A preset needs a name");
        port.rename("a", "z").unwrap();
        let saved = written(&port, dir.path(), "Renamed a to z").await;
        assert_eq!(saved.active.as_deref(), Some("z"));
        assert_eq!(
            port.save_current("x").unwrap_err(),
            "No pair is in force to save: /unipi:model picks one"
        );
    }
}
