//! Starting the real `unipi-tui` in a PTY for end-to-end tests: the pinned Pi of a line, started
//! in the sandbox's project with HOME, the XDG directories and TMPDIR in the sandbox (three
//! different directories), so nothing of the machine's user is read or written and a child in
//! the wrong directory shows; `demo` runs it against a scenario of the scripted model, and
//! [`OfflineModel`] runs the scripted model in the test instead, for tests that read its request
//! log.

use std::path::{Path, PathBuf};
use std::time::Duration;

use unipi_tui::pi::offline::{OfflineAgent, write_priced_agent_dir};
use unipi_tui::scripted::{Scenario, ServerHandle};

use super::pi::{PiLine, pi_install};
use super::sandbox::Sandbox;
use super::term::{OuterOptions, Session};

/// How long the workbench with a real Pi may take to be ready (Node's start on a busy 2-core
/// machine is most of it).
pub const START: Duration = Duration::from_secs(90);

/// Spawns `unipi-tui demo --scenario <scenario>` with `line`'s Pi in the sandbox, passing
/// `pi_args` on to Pi and `extra_env` into the workbench's environment.
pub fn spawn_demo(
    line: PiLine,
    scenario: &Path,
    sandbox: &Sandbox,
    pi_args: &[&str],
    extra_env: &[(&str, &str)],
    outer: OuterOptions,
) -> Session {
    let scenario = scenario.display().to_string();
    let demo = ["demo", "--scenario", scenario.as_str()];
    spawn_workbench(line, &demo, pi_args, sandbox, extra_env, outer)
}

/// Spawns `unipi-tui <before…> --pi-bin <line's Pi> --log-level debug <after…>` in the sandbox's
/// project with its HOME and TMPDIR and `extra_env` added.
pub fn spawn_workbench(
    line: PiLine,
    before: &[&str],
    after: &[&str],
    sandbox: &Sandbox,
    extra_env: &[(&str, &str)],
    outer: OuterOptions,
) -> Session {
    let command = workbench_command(line, before, after, sandbox, extra_env);
    let args: Vec<&str> = command.args.iter().map(String::as_str).collect();
    Session::spawn(
        &command.program,
        &args,
        &command.env(),
        &sandbox.project,
        outer,
    )
    .unwrap()
}

/// What [`spawn_workbench`] runs, for a test that wraps it (e.g. to keep its stderr).
pub struct WorkbenchCommand {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
}

impl WorkbenchCommand {
    /// The environment in [`Session::spawn`]'s form.
    pub fn env(&self) -> Vec<(&str, String)> {
        self.env
            .iter()
            .map(|(key, value)| (key.as_str(), value.clone()))
            .collect()
    }
}

/// The command line and environment of [`spawn_workbench`].
pub fn workbench_command(
    line: PiLine,
    before: &[&str],
    after: &[&str],
    sandbox: &Sandbox,
    extra_env: &[(&str, &str)],
) -> WorkbenchCommand {
    let pi = pi_install(line).unwrap_or_else(|err| panic!("{err:#}"));
    let mut path = std::env::var("PATH").unwrap_or_default();
    if let Some(node) = &pi.node_bin_dir {
        path = format!("{}:{path}", node.display());
    }
    let mut args: Vec<String> = before.iter().map(|arg| arg.to_string()).collect();
    args.extend([
        "--pi-bin".to_owned(),
        pi.bin.display().to_string(),
        "--log-level".to_owned(),
        "debug".to_owned(),
    ]);
    args.extend(after.iter().map(|arg| arg.to_string()));
    let mut env = vec![("PATH".to_owned(), path)];
    env.extend(sandbox.env().into_iter().map(|(k, v)| (k.to_owned(), v)));
    env.extend(
        extra_env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    WorkbenchCommand {
        program: PathBuf::from(env!("CARGO_BIN_EXE_unipi-tui")),
        args,
        env,
    }
}

/// The scripted model served from the test (its request log readable with `server.requests()`),
/// and a Pi agent directory pointing at it.
pub struct OfflineModel {
    pub server: ServerHandle,
    pub agent: OfflineAgent,
    _runtime: tokio::runtime::Runtime,
}

impl OfflineModel {
    /// Serves `tests/fixtures/scenarios/<name>`, with Pi's agent directory in the sandbox's HOME
    /// (`~/.pi/agent`), where a user's would be.
    pub fn scenario(name: &str, sandbox: &Sandbox) -> OfflineModel {
        let scenario = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/scenarios")
            .join(name);
        OfflineModel::start(&scenario, &sandbox.home.join(".pi/agent"))
    }

    /// The workbench with `line`'s Pi on this model in `sandbox`: Pi gets the model's arguments
    /// and then `pi_args`; the workbench the model's environment and then `extra_env`.
    pub fn spawn(
        &self,
        line: PiLine,
        sandbox: &Sandbox,
        pi_args: &[&str],
        extra_env: &[(&str, &str)],
        outer: OuterOptions,
    ) -> Session {
        let mut args = self.pi_args();
        args.extend_from_slice(pi_args);
        let mut env = self.env();
        env.extend_from_slice(extra_env);
        spawn_workbench(line, &[], &args, sandbox, &env, outer)
    }

    /// Serves `scenario` and writes the agent directory `agent_dir` for it.
    pub fn start(scenario: &Path, agent_dir: &Path) -> OfflineModel {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let scenario = Scenario::from_file(scenario).unwrap();
        let server = runtime
            .block_on(unipi_tui::scripted::start(scenario))
            .unwrap();
        let agent =
            write_priced_agent_dir(agent_dir, &server.base_url(), &server.served_models()).unwrap();
        OfflineModel {
            server,
            agent,
            _runtime: runtime,
        }
    }

    /// The agent directory's environment, for the workbench (and so for every Pi it starts).
    pub fn env(&self) -> Vec<(&str, &str)> {
        self.agent
            .env
            .iter()
            .map(|(key, value)| (key.as_str(), value.as_str()))
            .collect()
    }

    /// The arguments selecting the scripted model.
    pub fn pi_args(&self) -> Vec<&str> {
        self.agent.pi_args.iter().map(String::as_str).collect()
    }
}

/// A kitty-keyboard outer terminal of 40 rows and `cols` columns, the size most end-to-end
/// tests draw the workbench in.
pub fn outer_40_rows(cols: u16) -> OuterOptions {
    OuterOptions {
        rows: 40,
        cols,
        kitty: true,
    }
}

/// Waits until Pi shows its idle prompt with the scripted model `model` (`scripted-ask`, …),
/// failing with the workbench log's tail.
pub fn wait_for_idle_prompt(session: &Session, sandbox: &Sandbox, model: &str) {
    session
        .wait_for("Pi's prompt with the scripted model", START, |s| {
            let text = s.contents();
            text.contains(model) && text.contains("○ idle")
        })
        .unwrap_or_else(|err| panic!("{err:#}\n{}", sandbox.log_tail(40)));
}
