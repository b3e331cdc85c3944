//! The worked example run through the real pieces: hello starts only when its config file says
//! so; a keymap file binds its action by name and a real app hands it the key; the message it
//! publishes becomes an alert in the notifications' router, which knows no hello; its waves are
//! rows in the dock the app opens; its command, registered as the app registers every
//! capability's, is dispatched by name as the bridge does when Pi runs it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{HelloWaved, REGISTRATION};
use crate::app::App;
use crate::app::tests::{AppParts, new_app, screen, send, to_pi};
use crate::bridge::{AgentId, CommandCall, CommandReply, NotifyLevel};
use crate::capability::{BridgeLink, Capability, StartContext, Ui};
use crate::config::keymap::Keymap;
use crate::notify::config::{NotifyConfig, TerminalMethod};
use crate::notify::dispatch::Dispatcher;
use crate::notify::routing::Router;
use crate::pi::{PiCommand, PiSource};
use crate::views::test_keys::user_keymap;

/// Alt+H as a terminal with the kitty keyboard protocol sends it.
const ALT_H: &[u8] = b"\x1b[104;3u";

/// The keymap file that binds Alt+H to hello's action, by name.
const KEYMAP: &str = "[bindings]\n\"alt+h\" = \"hello.wave\"\n";

fn pi() -> PiCommand {
    PiCommand {
        program: PathBuf::from("pi"),
        args: Vec::new(),
        env: Vec::new(),
        source: PiSource::Path,
        version: Some("1.6.0".to_owned()),
    }
}

/// Hello started through its registration in `workspace`, whose `hello.json` is `config` (none:
/// no file); and what it reported.
fn start(workspace: &Path, config: Option<&str>) -> (Option<Arc<dyn Capability>>, Vec<String>) {
    if let Some(text) = config {
        let dir = workspace.join(".unipi/config");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("hello.json"), text).unwrap();
    }
    let mut pi = pi();
    let ui = Ui::headless(Arc::new(Keymap::defaults()));
    let mut context = StartContext::new(None, workspace, &mut pi, None, ui);
    let hello = (REGISTRATION.start)(&mut context);
    (hello, context.take_notices())
}

/// A real app over a 100x30 terminal with `keymap` and the capabilities that started.
fn app(keymap: Keymap, capabilities: Vec<Arc<dyn Capability>>) -> App {
    new_app(AppParts {
        keymap,
        capabilities,
        config_errors: Vec::new(),
        footer: crate::config::footer::FooterConfig::default().into(),
        commands: Vec::new(),
    })
}

#[test]
fn it_starts_only_when_its_config_enables_it() {
    let dir = tempfile::tempdir().unwrap();
    let (hello, problems) = start(dir.path(), None);
    assert!(hello.is_none() && problems.is_empty());
    // Off, its bound key only says so (it is declared whether it started or not).
    let mut app = app(user_keymap(KEYMAP), Vec::new());
    assert!(to_pi(&send(&mut app, ALT_H)).is_empty());
    assert!(screen(&mut app).contains("Hello is off."));

    let (hello, problems) = start(dir.path(), Some(r#"{ "enabled": true }"#));
    assert!(hello.is_some() && problems.is_empty());

    let (hello, problems) = start(
        dir.path(),
        Some("{\n  \"enabled\": 1,\n  \"loud\": true\n}"),
    );
    assert!(hello.is_none());
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems[0].contains("hello.json:2:"), "{problems:?}");
}

#[tokio::test]
async fn its_key_bound_by_name_waves_and_the_wave_alerts() {
    let dir = tempfile::tempdir().unwrap();
    let (hello, _) = start(dir.path(), Some(r#"{ "enabled": true }"#));
    let hello = hello.unwrap();
    let (link, _) = BridgeLink::idle(dir.path()).await;
    hello.attach(&link);
    let mut bus = link.bus().subscribe();
    let mut app = app(user_keymap(KEYMAP), vec![hello]);

    // Hello takes the key: nothing for Pi, and its message is on the bus.
    assert!(to_pi(&send(&mut app, ALT_H)).is_empty());
    let event = bus.try_recv().unwrap();
    assert_eq!(event.decode::<HelloWaved>(), Some(HelloWaved { waves: 1 }));

    // The notifications' router makes the alert the message asks for, knowing no hello.
    let (ui, _requests) = Ui::channel(Arc::new(Keymap::defaults()));
    let dispatcher = Dispatcher::new(NotifyConfig::default(), ui, false, TerminalMethod::Osc9);
    let alert = Router::new(dispatcher).route(&event).unwrap();
    assert_eq!(alert.event, "hello_waved");
    assert_eq!(alert.notice.title, "Pi — Hello");
    assert_eq!(alert.notice.message, "Hello waved (1 so far)");
}

#[test]
fn its_waves_are_rows_in_the_dock() {
    let dir = tempfile::tempdir().unwrap();
    let (hello, _) = start(dir.path(), Some(r#"{ "enabled": true }"#));
    let mut app = app(user_keymap(KEYMAP), hello.into_iter().collect());
    send(&mut app, ALT_H);
    send(&mut app, ALT_H);
    // Shift+Down opens the dock over every capability's section: here, hello's.
    assert!(to_pi(&send(&mut app, b"\x1b[1;2B")).is_empty());
    crate::assert_ui_snapshot!("hello_waves_in_the_dock", screen(&mut app));
}

#[test]
fn the_worked_example_in_the_docs_quotes_this_code() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let mut quoted = 0;
    // Each Rust block headed by one of hello's files: every part between `// …` is in it as is.
    for block in doc.split("```rust\n").skip(1) {
        let block = &block[..block.find("```").unwrap()];
        let Some(path) = block.lines().next().and_then(|l| l.strip_prefix("// ")) else {
            continue;
        };
        if !path.starts_with("src/hello/") {
            continue;
        }
        let code = std::fs::read_to_string(root.join(path)).unwrap();
        for part in block.split_once('\n').unwrap().1.split("// …\n") {
            let part = part.trim_matches('\n');
            assert!(code.contains(part), "{path} no longer has:\n{part}");
            quoted += 1;
        }
    }
    assert!(
        quoted >= 4,
        "the worked example quotes {quoted} parts of src/hello/"
    );
}

#[tokio::test]
async fn its_command_registered_through_the_seam_waves() {
    let dir = tempfile::tempdir().unwrap();
    let (hello, _) = start(dir.path(), Some(r#"{ "enabled": true }"#));
    let hello = hello.unwrap();
    let (link, _) = BridgeLink::idle(dir.path()).await;
    hello.attach(&link);
    // As the app starts the bridge: each capability's modules, its commands under the first.
    for (module, commands) in crate::capability::modules(std::slice::from_ref(&hello)) {
        link.registry
            .register_with_commands(module, commands)
            .unwrap();
    }
    let mut bus = link.bus().subscribe();

    // Pi is told of the command, and the host finds its handler by name.
    let declared = link
        .registry
        .declarations(std::time::Duration::from_secs(1));
    let names: Vec<&str> = declared.commands.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["unipi:hello"]);
    let (module, command) = link.registry.command("unipi:hello").unwrap();
    assert_eq!(module, "hello");
    let call = CommandCall {
        agent: AgentId::main(),
        name: "unipi:hello".to_owned(),
        args: String::new(),
    };
    let reply = command.run(call).await;
    assert_eq!(
        reply,
        CommandReply::Notify {
            message: "Hello waved (1 so far)".to_owned(),
            level: NotifyLevel::Info,
        }
    );
    // It waved as its key does: the message is on the bus, and the dock counts it.
    let event = bus.try_recv().unwrap();
    assert_eq!(event.decode::<HelloWaved>(), Some(HelloWaved { waves: 1 }));
    let mut app = app(user_keymap(KEYMAP), vec![hello]);
    assert!(to_pi(&send(&mut app, b"\x1b[1;2B")).is_empty());
    let shown = screen(&mut app);
    assert!(shown.contains("wave 1"), "{shown}");
}
