//! The engine against a fake main Pi (answers host calls from a table and records them), a
//! stand-in sidekick (a shell script speaking Pi's RPC) and a real event bus and database file.

#![allow(clippy::unwrap_used)] // test code: a failed step should panic

use std::path::Path;
use std::sync::Mutex;

use serde_json::json;

use super::*;
use crate::bridge::{BusMessage, MessageEnd, NotifyLevel, Refusal, SessionStart, UserInput};
use crate::capability::ChildPi;
use crate::config::keymap::Keymap;
use crate::config::module_file::ModuleConfig;
use crate::fusion::config::FusionConfig;
use crate::test_wait::{WAIT, eventually};

/// Answers host calls like a Pi with three models (no key for `anthropic/claude-opus`).
#[derive(Default)]
struct FakeMain {
    calls: Mutex<Vec<HostCall>>,
}

impl MainPi for FakeMain {
    fn call(&self, call: HostCall) -> BoxFuture<'static, Result<Value, Refusal>> {
        self.calls.lock().unwrap().push(call.clone());
        let answer = match call {
            HostCall::ListAllModels => json!([
                {"provider": "unipi-scripted", "id": "big", "has_auth": true,
                 "cost": {"input": 15.0, "output": 75.0, "cache_read": 1.5, "cache_write": 18.75}},
                {"provider": "unipi-scripted", "id": "small", "has_auth": true,
                 "cost": {"input": 0.25, "output": 1.25, "cache_read": 0.03, "cache_write": 0.3}},
                {"provider": "unipi-scripted", "id": "spare", "has_auth": true},
                {"provider": "anthropic", "id": "claude-opus", "has_auth": false},
            ]),
            _ => json!(true),
        };
        Box::pin(async move { Ok(answer) })
    }
}

impl FakeMain {
    fn set_models(&self) -> Vec<String> {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .filter_map(|call| match call {
                HostCall::SetModel { provider, id } => Some(format!("{provider}/{id}")),
                _ => None,
            })
            .collect()
    }
}

/// A stand-in sidekick: every question is answered "Fix the flaky test" with 1000/100 tokens.
const FAKE_SIDEKICK: &str = r#"
while IFS= read -r line; do
  case "$line" in
    *new_session*) echo '{"type":"response","id":"fresh","command":"new_session","success":true}' ;;
    *prompt*)
      echo '{"type":"response","id":"task","command":"prompt","success":true,"data":{"disposition":"started"}}'
      echo '{"type":"message_end","message":{"role":"assistant","provider":"unipi-scripted","model":"small","content":[{"type":"text","text":"\"Fix the flaky test.\""}],"stopReason":"stop","usage":{"input":1000,"output":100,"cacheRead":0,"cacheWrite":0,"totalTokens":1100,"cost":{"total":0.000375}}}}'
      echo '{"type":"agent_settled","aborted":false}' ;;
  esac
done
"#;

struct Rig {
    _dir: tempfile::TempDir,
    /// What the engine asked of the screen (footer notices).
    screen: Mutex<crate::capability::UiReceiver>,
    home: std::path::PathBuf,
    engine: Arc<Engine>,
    main: Arc<FakeMain>,
    bus: EventBus,
}

/// An engine (headless) over `<dir>/home` holding the presets file `preset_json` and the
/// workspace `<dir>/work`, whose sidekick is `sidekick`; nothing connected.
pub(crate) fn engine_in(dir: &Path, preset_json: &str, sidekick: ChildPi) -> Arc<Engine> {
    engine_with_ui(
        dir,
        preset_json,
        sidekick,
        Ui::headless(Arc::new(Keymap::defaults())),
    )
}

/// [`engine_in`] with `ui` as its screen.
fn engine_with_ui(dir: &Path, preset_json: &str, sidekick: ChildPi, ui: Ui) -> Arc<Engine> {
    let home = dir.join("home");
    let workspace = dir.join("work");
    std::fs::create_dir_all(&workspace).unwrap();
    let file = home.join(crate::fusion::config::FUSION_CONFIG_FILE);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, preset_json).unwrap();
    // Followed, as in the workbench: the engine's own saves and edits by hand meet in the file.
    let (config, errors) = crate::config::live::LiveConfig::module(
        Some(&home),
        &workspace,
        &[crate::fusion::config::FUSION_CONFIG_FILE],
        FusionConfig::load,
    );
    assert!(errors.is_empty(), "{errors:?}");
    let runtime = SidekickRuntime::new(sidekick, workspace.clone());
    Arc::new(Engine::new(
        ui,
        config,
        runtime,
        Ledger::for_project(Some(&home), &workspace),
    ))
}

fn rig(preset_json: &str) -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("sidekick.sh");
    std::fs::write(&script, FAKE_SIDEKICK).unwrap();
    let sidekick = ChildPi {
        program: "/bin/sh".into(),
        leading_args: vec![script.display().to_string()],
        env: Vec::new(),
    };
    let (ui, screen) = Ui::channel(Arc::new(Keymap::defaults()));
    let engine = engine_with_ui(dir.path(), preset_json, sidekick, ui);
    let home = dir.path().join("home");
    let main = Arc::new(FakeMain::default());
    let bus = EventBus::new();
    engine.connect(main.clone(), bus.clone());
    Rig {
        _dir: dir,
        screen: Mutex::new(screen),
        home,
        engine,
        main,
        bus,
    }
}

/// A rig with big + small applied (not saved).
async fn rig_with_a_pair() -> Rig {
    let rig = rig("{}");
    rig.apply_default("unipi-scripted/big", "unipi-scripted/small", false)
        .await;
    rig
}

impl Rig {
    /// The footer notices the engine sent since the last look.
    fn footer_notices(&self) -> Vec<String> {
        let mut screen = self.screen.lock().unwrap();
        std::iter::from_fn(|| screen.try_recv().ok())
            .filter_map(|request| match request {
                crate::capability::UiRequest::Notice(text) => Some(text),
                _ => None,
            })
            .collect()
    }

    /// The messages of the notices Pi was asked to show, with their level.
    fn pi_notices(&self) -> Vec<(NotifyLevel, String)> {
        self.main
            .calls
            .lock()
            .unwrap()
            .iter()
            .filter_map(|call| match call {
                HostCall::Notify { message, level } => Some((*level, message.clone())),
                _ => None,
            })
            .collect()
    }

    /// Applies `primary` + `sidekick` as the preset `default` (recorded as the active preset when
    /// `persist`); what the engine says it did.
    async fn apply_default(&self, primary: &str, sidekick: &str, persist: bool) -> String {
        self.engine
            .apply(
                "default",
                Preset::new(model(primary), model(sidekick)),
                persist,
            )
            .await
            .unwrap()
    }
}

fn model(text: &str) -> ModelRef {
    ModelRef::parse(text).unwrap()
}

#[tokio::test]
async fn a_model_pi_does_not_know_or_has_no_key_for_is_refused_and_nothing_changes() {
    let rig = rig("{}");
    let cases = [
        (
            "anthropic/claude-opus",
            "unipi-scripted/small",
            "No API key for anthropic/claude-opus (the primary)",
        ),
        (
            "unipi-scripted/big",
            "anthropic/claude-opus",
            "No API key for anthropic/claude-opus (the sidekick)",
        ),
        (
            "unipi-scripted/nope",
            "unipi-scripted/small",
            "Pi knows no model unipi-scripted/nope",
        ),
    ];
    for (primary, sidekick, want) in cases {
        let err = rig
            .engine
            .apply("p", Preset::new(model(primary), model(sidekick)), true)
            .await
            .unwrap_err();
        assert!(
            err.starts_with(want) && err.ends_with("nothing changed"),
            "{err}"
        );
    }
    assert!(rig.main.set_models().is_empty(), "no set_model was sent");
    assert!(!rig.engine.state().is_on());
    assert!(rig.engine.runtime().model().is_none());
    assert_eq!(rig.engine.config().active, None, "nothing saved");
}

#[tokio::test]
async fn applying_sets_the_primary_starts_the_sidekick_saves_and_publishes_the_status() {
    let rig = rig("{}");
    let mut events = rig.bus.subscribe();
    let message = rig
        .apply_default("unipi-scripted/big", "unipi-scripted/small", true)
        .await;
    assert!(
        message.contains("unipi-scripted/big is the primary"),
        "{message}"
    );
    assert_eq!(rig.main.set_models(), ["unipi-scripted/big"]);
    assert_eq!(
        rig.engine.runtime().model(),
        Some(model("unipi-scripted/small"))
    );
    let saved =
        std::fs::read_to_string(rig.home.join(crate::fusion::config::FUSION_CONFIG_FILE)).unwrap();
    assert!(saved.contains("\"active\": \"default\""), "{saved}");
    let status = loop {
        if let BusEvent::Module { name, data, .. } = events.recv().await.unwrap()
            && name == FusionStatus::NAME
        {
            break data;
        }
    };
    assert_eq!(status["active"], true);
    assert_eq!(status["sidekick"], "unipi-scripted/small");
    assert_eq!(status["pool"]["size"], 2);
    // The previous sidekick stops when another pair is applied.
    let first = rig.engine.runtime().group().unwrap();
    rig.apply_default("unipi-scripted/small", "unipi-scripted/big", false)
        .await;
    assert!(!first.alive(), "the previous sidekick runtime stopped");
    rig.engine.shutdown().await;
}

#[tokio::test]
async fn calls_the_sidekick_served_are_priced_summed_and_stored_and_others_are_not() {
    let rig = rig_with_a_pair().await;
    rig.engine
        .on_bus(BusEvent::main_pi(PiEvent::SessionStart(Box::new(
            SessionStart {
                session_id: Some("s1".into()),
                ..SessionStart::default()
            },
        ))));
    let used = |source: &str, model: &str| BusEvent::Module {
        module: source.into(),
        name: ModelUsage::NAME.into(),
        data: json!({"source": source, "id": "h1", "model": model,
                     "usage": {"input": 100_000, "output": 10_000, "cacheRead": 0, "cacheWrite": 0, "cost": 0.0375}}),
        alerting: None,
        pi_event: None,
    };
    rig.engine.on_bus(used("helper", "unipi-scripted/small"));
    rig.engine.on_bus(used("helper", "unipi-scripted/big"));
    let state = rig.engine.state();
    let session = state.session_totals();
    assert_eq!(session.calls, 1, "only the sidekick's call counts");
    assert!((session.sidekick_cost - 0.0375).abs() < 1e-12);
    assert!((session.primary_cost - 2.25).abs() < 1e-12);
    let segment = rig.engine.segment().unwrap();
    assert_eq!(segment.forms[0].text(), "⚭ big+small · saved $2.21");
    // A /btw answer on the sidekick is reported the same way (the btw capability's side Pi).
    rig.engine.on_bus(used("btw", "unipi-scripted/small"));
    assert_eq!(rig.engine.state().session_totals().calls, 2);
    // The database has both: a new session start reads them back (in order after the writes).
    rig.engine
        .on_bus(BusEvent::main_pi(PiEvent::SessionStart(Box::new(
            SessionStart {
                session_id: Some("s1".into()),
                ..SessionStart::default()
            },
        ))));
    eventually("both calls read back", WAIT, || {
        rig.engine.state().session_totals().calls == 2
    })
    .await;
    assert_eq!(rig.engine.state().all_totals().calls, 2);
    rig.engine.shutdown().await;
}

#[tokio::test]
async fn a_rate_limit_moves_the_primary_to_its_fallback_and_back_after_the_cooldown() {
    let rig = rig(
        r#"{"active": "daily", "presets": {"daily": {"primary": "unipi-scripted/big",
            "sidekick": "unipi-scripted/small", "fallback": "unipi-scripted/spare",
            "cooldownSeconds": 1}}}"#,
    );
    rig.engine.on_bus(BusEvent::AgentConnected {
        agent: AgentId::main(),
        pi_version: "1.6.0".into(),
    });
    eventually(
        "the active preset applied at the first connection",
        WAIT,
        || rig.engine.state().is_on(),
    )
    .await;
    let error = |message: &str| {
        BusEvent::main_pi(PiEvent::MessageEnd(MessageEnd {
            stop_reason: Some("error".into()),
            error_message: Some(message.into()),
            ..MessageEnd::default()
        }))
    };
    rig.engine.on_bus(error("500 upstream broke"));
    rig.engine
        .on_bus(error("429 Too Many Requests: rate limit"));
    eventually("the fallback set", WAIT, || {
        rig.main.set_models().len() == 2
    })
    .await;
    assert_eq!(rig.main.set_models()[1], "unipi-scripted/spare");
    let segment = rig.engine.segment().unwrap();
    assert!(
        segment.forms[0]
            .text()
            .starts_with("⚭ fallback spare (1m)+small"),
        "{segment:?}"
    );
    // A notice names both models: in full in Pi's conversation, short in the footer.
    eventually("the fallback's notice", WAIT, || {
        rig.pi_notices().len() == 1
    })
    .await;
    assert_eq!(
        rig.pi_notices(),
        [(
            NotifyLevel::Warning,
            "Model fusion: unipi-scripted/big is rate-limited; the main agent uses the fallback \
             unipi-scripted/spare for 1 min"
                .to_owned()
        )]
    );
    assert!(
        rig.footer_notices()
            .contains(&"big rate-limited: on spare".to_owned())
    );
    eventually("back on the primary", WAIT, || {
        rig.main.set_models().len() == 3
    })
    .await;
    assert_eq!(rig.main.set_models()[2], "unipi-scripted/big");
    eventually("the return's notice", WAIT, || rig.pi_notices().len() == 2).await;
    assert_eq!(
        rig.pi_notices()[1],
        (
            NotifyLevel::Info,
            "Model fusion: the main agent is back on the primary unipi-scripted/big after 1 min \
             on the fallback unipi-scripted/spare"
                .to_owned()
        )
    );
    assert!(rig.engine.active_fallback().is_none());
    rig.engine.shutdown().await;
}

#[tokio::test]
async fn the_sidekick_names_a_session_without_a_name_after_its_first_turn() {
    let rig = rig_with_a_pair().await;
    rig.engine
        .on_bus(BusEvent::main_pi(PiEvent::SessionStart(Box::default())));
    rig.engine
        .on_bus(BusEvent::main_pi(PiEvent::UserInput(UserInput {
            text: "the retry test fails now and then".into(),
            ..UserInput::default()
        })));
    rig.engine.on_bus(BusEvent::main_pi(PiEvent::AgentSettled {
        aborted: false,
        synthetic: false,
    }));
    let named = || {
        rig.main
            .calls
            .lock()
            .unwrap()
            .iter()
            .find_map(|call| match call {
                HostCall::SetSessionName { name } => Some(name.clone()),
                _ => None,
            })
    };
    eventually("the session named", WAIT, || named().is_some()).await;
    assert_eq!(named().as_deref(), Some("Fix the flaky test"));
    // Once only.
    rig.engine.on_bus(BusEvent::main_pi(PiEvent::AgentSettled {
        aborted: false,
        synthetic: false,
    }));
    assert_eq!(rig.engine.state().session_totals().calls, 1);
    rig.engine.shutdown().await;
}

/// `fusion.json` is followed: a preset added by hand while the workbench runs is there at the
/// next use, and the engine's own edits after it keep it.
#[tokio::test]
async fn presets_edited_by_hand_are_taken_at_the_next_use() {
    let rig = rig("{}");
    assert!(rig.engine.config().presets.is_empty());
    let file = rig.home.join(crate::fusion::config::FUSION_CONFIG_FILE);
    std::fs::write(
        &file,
        r#"{"presets": {"cheap": {"primary": "p/big", "sidekick": "p/small"}}}"#,
    )
    .unwrap();
    let names = |rig: &Rig| {
        rig.engine
            .config()
            .presets
            .keys()
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&rig), ["cheap"]);
    rig.engine
        .edit_config(|config| {
            config.active = Some("cheap".to_owned());
            Ok(())
        })
        .unwrap()
        .finish()
        .await
        .unwrap();
    assert_eq!(
        names(&rig),
        ["cheap"],
        "an edit here starts from the file's"
    );
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(written.contains("\"active\": \"cheap\""), "{written}");
    assert!(written.contains("\"primary\": \"p/big\""), "{written}");
}
