//! The command line: `unipi-tui [OPTIONS] [PI_ARGS]...`, `unipi-tui demo`, and the detachable
//! sessions' `--detachable NAME`, `ls`, `attach NAME` and `kill NAME` (`crate::detach`).
//!
//! unipi-tui is a drop-in for `pi`, so it owns only a few, prefixed or documented options and
//! hands every other argument to Pi unchanged and in order (`unipi-tui --model x -c "hi"` runs
//! `pi --model x -c "hi"`). Our options are picked out wherever they appear; everything after a
//! bare `--` goes to Pi verbatim. The exit code is Pi's.

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{CommandFactory, Parser};

use crate::app::{AppOptions, AppOutcome};
use crate::config;
use crate::config::module_file::ModuleConfig as _;
use crate::headless::RunMode;
use crate::pi;

/// A terminal workbench for the Pi coding agent.
#[derive(Debug, Parser)]
#[command(
    name = "unipi-tui",
    version,
    about = "A terminal workbench for the Pi coding agent: runs Pi in a pane with native widgets around it.",
    override_usage = "unipi-tui [OPTIONS] [PI_ARGS]...\n       unipi-tui demo [--scenario FILE] [OPTIONS] [PI_ARGS]...\n       unipi-tui --detachable NAME [demo] [OPTIONS] [PI_ARGS]...\n       unipi-tui ls | attach NAME | kill NAME\n       unipi-tui doctor [--pi-bin PATH] [--json] | completions bash|zsh|fish | man",
    disable_help_flag = true,
    disable_version_flag = true
)]
pub struct Cli {
    /// The Pi executable to run (default: `pi` on PATH, else the pinned Pi in the cache dir).
    #[arg(long, value_name = "PATH", env = "UNIPI_PI_BIN")]
    pub pi_bin: Option<PathBuf>,

    /// Log level for the log file (error, warn, info, debug, trace or a tracing filter).
    #[arg(long, value_name = "LEVEL", env = "UNIPI_LOG", default_value = "info")]
    pub log_level: String,

    /// With `demo`: a scenario file (TOML, below) for the scripted model instead of the built-in
    /// tour.
    #[arg(long, value_name = "FILE")]
    pub scenario: Option<PathBuf>,

    /// Run in a detachable session named NAME: it survives a lost terminal (a dropped SSH
    /// connection) and the detach key (Ctrl+Alt+D); `unipi-tui attach NAME` re-attaches.
    #[arg(long, value_name = "NAME")]
    pub detachable: Option<String>,

    /// Print help.
    #[arg(long, short = 'h', action = clap::ArgAction::Help)]
    pub help: Option<bool>,

    /// Print version (and the pinned Pi versions).
    #[arg(long, action = clap::ArgAction::SetTrue)]
    pub version: bool,
}

/// Our options that take a value, by flag name.
const VALUE_FLAGS: &[&str] = &["--pi-bin", "--log-level", "--scenario", "--detachable"];
/// Our options without a value.
const BARE_FLAGS: &[&str] = &["--help", "-h", "--version"];

/// The command line split into ours and Pi's.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct SplitArgs {
    pub demo: bool,
    pub ours: Vec<OsString>,
    pub pi: Vec<OsString>,
}

/// Splits `args` (without the program name) into our options and Pi's arguments.
pub fn split_args(args: impl IntoIterator<Item = OsString>) -> SplitArgs {
    let mut split = SplitArgs::default();
    let mut args = args.into_iter().peekable();
    // `--detachable NAME demo …`: the session's name may come before the subcommand.
    while let Some(first) = args.next_if(|a| a.to_string_lossy().starts_with("--detachable")) {
        let inline = first.to_string_lossy().contains('=');
        split.ours.push(first);
        if !inline && let Some(value) = args.next() {
            split.ours.push(value);
        }
    }
    if args.peek().is_some_and(|a| a == "demo") {
        split.demo = true;
        args.next();
    }
    while let Some(arg) = args.next() {
        let text = arg.to_string_lossy();
        if text == "--" {
            split.pi.extend(args.by_ref());
            break;
        }
        let name = text.split_once('=').map_or(text.as_ref(), |(n, _)| n);
        if VALUE_FLAGS.contains(&name) {
            let has_inline_value = text.contains('=');
            split.ours.push(arg.clone());
            if !has_inline_value && let Some(value) = args.next() {
                split.ours.push(value);
            }
        } else if BARE_FLAGS.contains(&text.as_ref()) {
            split.ours.push(arg.clone());
        } else {
            split.pi.push(arg.clone());
        }
    }
    split
}

/// Entry point of the binary.
pub fn run() -> ExitCode {
    // The delegate child (`bg_delegate`) and the watchdog: hidden, never mixed with Pi's
    // arguments.
    let raw: Vec<String> = std::env::args_os()
        .skip(1)
        .take(3)
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect();
    match raw.first().map(String::as_str) {
        Some(crate::delegate::CHILD_SUBCOMMAND) => return crate::delegate::child::main(&raw[1..]),
        Some(crate::sys::watchdog::SUBCOMMAND) => return crate::sys::sweep::main(&raw[1..]),
        Some(crate::detach::daemon::SUBCOMMAND) => return crate::detach::daemon::main(),
        Some(crate::migrate::SUBCOMMAND) => {
            let args: Vec<OsString> = std::env::args_os().skip(1).collect();
            return crate::migrate::main(&args);
        }
        Some(crate::doctor::SUBCOMMAND) => {
            return crate::doctor::main(&std::env::args_os().skip(2).collect::<Vec<_>>());
        }
        Some(word) if crate::manual::WORDS.contains(&word) => {
            return crate::manual::main(&std::env::args_os().skip(1).collect::<Vec<_>>());
        }
        Some(word) if crate::detach::commands::WORDS.contains(&word) => {
            let args: Vec<OsString> = std::env::args_os().skip(1).collect();
            return crate::detach::commands::main(&args);
        }
        _ => {}
    }
    let split = split_args(std::env::args_os().skip(1));
    let mut ours = vec![OsString::from("unipi-tui")];
    ours.extend(split.ours.iter().cloned());
    let cli = match Cli::try_parse_from(ours) {
        Ok(cli) => cli,
        Err(err) if err.kind() == clap::error::ErrorKind::DisplayHelp => {
            print_help();
            return ExitCode::SUCCESS;
        }
        Err(err) => {
            let _ = err.print();
            return ExitCode::from(2);
        }
    };
    if cli.version {
        print_version(cli.pi_bin.as_deref());
        return ExitCode::SUCCESS;
    }
    match crate::detach::launch::plan(cli.detachable.as_deref(), &split) {
        Ok(None) => {}
        Ok(Some(plan)) => {
            let _log_guard = init_logging(&log_file_path(), &cli.log_level);
            return match crate::detach::launch::run(&plan, &cli.log_level) {
                Ok(code) => ExitCode::from(u8::try_from(code.clamp(0, 255)).unwrap_or(1)),
                Err(err) => {
                    tracing::warn!("session {}: {err:#}", plan.name);
                    eprintln!("unipi-tui: {err:#}");
                    ExitCode::from(1)
                }
            };
        }
        Err(err) => {
            eprintln!("unipi-tui: {err:#}");
            return ExitCode::from(2);
        }
    }
    match run_workbench(cli, split) {
        Ok(code) => ExitCode::from(u8::try_from(code.clamp(0, 255)).unwrap_or(1)),
        Err(err) => {
            eprintln!("unipi-tui: {err:#}");
            ExitCode::from(1)
        }
    }
}

fn run_workbench(cli: Cli, split: SplitArgs) -> Result<i32> {
    let log_path = log_file_path();
    // Dropped last: flushes the non-blocking writer, so the exit line below reaches the file.
    let _log_guard = init_logging(&log_path, &cli.log_level);
    tracing::info!(version = env!("CARGO_PKG_VERSION"), "unipi-tui starting");
    // Before the first child: every process started from here on dies with us, however we end.
    if let Err(err) = crate::sys::watchdog::start(&log_path) {
        tracing::warn!("{err:#}; children may outlive a crash of the workbench");
    }
    let result = run_session(cli, split, log_path);
    match &result {
        Ok(code) => tracing::info!(code, "unipi-tui exiting"),
        Err(err) => tracing::error!("unipi-tui exiting: {err:#}"),
    }
    result
}

fn run_session(cli: Cli, split: SplitArgs, log_path: PathBuf) -> Result<i32> {
    let mut announce = |line: &str| {
        eprintln!("{line}");
        tracing::info!("{line}");
    };
    let policy = pi::InstallPolicy::from_environment(log_path.clone());
    let pi = pi::locate(cli.pi_bin.as_deref(), &policy, &mut announce)?;
    let run_mode = crate::headless::decide(
        &split.pi,
        std::io::stdin().is_terminal(),
        std::io::stdout().is_terminal(),
    );
    tracing::info!("run mode: {run_mode:?}");
    let workspace = std::env::current_dir().context("cannot read the working directory")?;
    let home = dirs::home_dir();
    let files = StartFiles::read(home.as_deref(), &workspace, &pi);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("failed to start the async runtime")?;
    let options = app_options(pi, split.pi, files, &workspace, run_mode, log_path);
    let plan = SessionPlan {
        run_mode,
        home: home.as_deref(),
        workspace: &workspace,
        demo: split.demo,
        scenario: cli.scenario.as_deref(),
    };
    let mut outcome: AppOutcome = runtime.block_on(plan.run(options))?;
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    // After the demo is gone: a session in the demo's deleted folder gets no resume command.
    print_ending(&mut outcome, &workspace);
    Ok(outcome.code)
}

/// The configuration read before the loop starts, and the problems the start-up box shows.
struct StartFiles {
    keymap: config::keymap::Keymap,
    theme: config::theme::Theme,
    footer: config::live::LiveConfig<config::footer::FooterConfig>,
    config_errors: Vec<String>,
}

impl StartFiles {
    fn read(home: Option<&Path>, workspace: &Path, pi: &pi::PiCommand) -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let (keymap, keymap_errors) = config::keymap::load_keymap(config::keymap_file().as_deref());
        let (theme, theme_errors) =
            config::theme::load_theme(config::theme_file().as_deref(), no_color);
        // Followed while the workbench runs (the footer reads it again on focus and when the
        // agent settles); the keymap and the theme are fixed at start.
        let (footer, footer_errors) = config::live::LiveConfig::module(
            home,
            workspace,
            &[config::footer::FOOTER_FILE],
            config::footer::FooterConfig::load,
        );
        // The keymap and the theme are fixed when the loop starts: a fix to either shows only
        // after a restart, which the box says (the other files are followed).
        let restart_hint = (!keymap_errors.is_empty() || !theme_errors.is_empty()).then(|| {
            "keymap.toml and theme.toml are read at start: restart the workbench after fixing them"
                .to_owned()
        });
        // `workbench.json`'s `detach` section was read before this workbench started (it
        // decides whether this run is a session); its problems are reported here, like every
        // file's.
        let (_, detach_errors) = crate::detach::config::DetachConfig::load(home, workspace);
        let config_errors: Vec<String> = keymap_errors
            .iter()
            .chain(theme_errors.iter())
            .chain(footer_errors.iter())
            .chain(detach_errors.iter())
            .map(|e| e.to_string())
            .chain(restart_hint)
            .chain(config::footer::FooterConfig::unipi_notice(home, workspace))
            .chain(runtime_root_notice())
            .chain(
                pi::compile_cache::prepare_for(workspace, &pi.env)
                    .into_iter()
                    .filter_map(|cache| cache.notice()),
            )
            .collect();
        for error in &config_errors {
            tracing::warn!("config: {error}");
        }
        StartFiles {
            keymap,
            theme,
            footer,
            config_errors,
        }
    }
}

/// What the app (or the headless run) starts from, before the capabilities and the bridge.
fn app_options(
    pi: pi::PiCommand,
    pi_args: Vec<OsString>,
    files: StartFiles,
    workspace: &Path,
    run_mode: RunMode,
    log_path: PathBuf,
) -> AppOptions {
    let keymap = std::sync::Arc::new(files.keymap);
    // Without the pane there is no screen: commands that would open a view answer in words.
    let (ui, ui_requests) = match run_mode {
        RunMode::Interactive => {
            let (ui, requests) = crate::capability::Ui::channel(std::sync::Arc::clone(&keymap));
            (ui, Some(requests))
        }
        RunMode::Headless | RunMode::Direct => (
            crate::capability::Ui::headless(std::sync::Arc::clone(&keymap)),
            None,
        ),
    };
    let footer = {
        let ui = ui.clone();
        files.footer.reporting(move |errors| {
            for error in errors {
                ui.notice(error.to_string());
            }
        })
    };
    AppOptions {
        pi,
        pi_args,
        pi_env: vec![],
        workspace: workspace.to_path_buf(),
        keymap,
        theme: files.theme,
        footer,
        config_errors: files.config_errors,
        welcome: None,
        log_path,
        keyboard_enhancement: std::env::var_os("UNIPI_TUI_DISABLE_KEYBOARD_ENHANCEMENT")
            .is_none_or(|v| v.is_empty() || v == "0"),
        scrollback: crate::pane::history::DEFAULT_CAPACITY,
        bridge: None,
        capabilities: Vec::new(),
        ui,
        ui_requests,
        commands: Vec::new(),
    }
}

/// How this session runs, for the part of it on the async runtime.
struct SessionPlan<'a> {
    run_mode: RunMode,
    home: Option<&'a Path>,
    workspace: &'a Path,
    /// `unipi-tui demo`, with its scenario file if one was given.
    demo: bool,
    scenario: Option<&'a Path>,
}

impl SessionPlan<'_> {
    /// Starts the demo (if asked for), the capabilities and the bridge, then runs the app or the
    /// headless loop until Pi exits.
    async fn run(&self, mut options: AppOptions) -> Result<AppOutcome> {
        // The demo's server and agent dir live exactly as long as the session. It comes first:
        // helpers launch Pi the way the main Pi is launched, demo settings included.
        let demo = if self.demo {
            Some(crate::demo::prepare(&mut options, self.scenario).await?)
        } else {
            None
        };
        if self.run_mode == RunMode::Direct {
            return crate::headless::run_direct(&options).await;
        }
        let capabilities = self.start_capabilities(&mut options, demo.as_ref());
        start_bridge(&mut options, &capabilities).await;
        options.capabilities = capabilities;
        let outcome = match self.run_mode {
            RunMode::Interactive => crate::app::run(options).await,
            RunMode::Headless | RunMode::Direct => crate::headless::run(options).await,
        };
        drop(demo);
        outcome
    }

    /// Starts every capability from its config; the problems they report join the box's.
    fn start_capabilities(
        &self,
        options: &mut AppOptions,
        demo: Option<&crate::demo::DemoSession>,
    ) -> Vec<std::sync::Arc<dyn crate::capability::Capability>> {
        let mut context = crate::capability::StartContext::new(
            self.home,
            self.workspace,
            &mut options.pi,
            demo,
            options.ui.clone(),
        );
        let mut capabilities = crate::capability::start_all(&mut context);
        // The dashboard holds the others (it asks each for its group) and goes first, so its
        // `unipi_info` module heads `/unipi:info`'s list as it always did.
        let dashboard = crate::info::start(&capabilities, &context, options.log_path.clone());
        capabilities.insert(0, dashboard);
        // A file two readers share (`workbench.json`: detach above, MCP here) is broken once.
        for notice in context.take_notices() {
            if !options.config_errors.contains(&notice) {
                options.config_errors.push(notice);
            }
        }
        capabilities
    }
}

/// Starts the bridge with the capabilities' modules and attaches them to it. Without the bridge
/// the workbench still runs Pi, with a plainer footer.
async fn start_bridge(
    options: &mut AppOptions,
    capabilities: &[std::sync::Arc<dyn crate::capability::Capability>],
) {
    let mut modules = crate::capability::modules(capabilities);
    // The footer is the workbench's own: its commands sit beside the capabilities'.
    let home = crate::capability::settings::SettingsHome {
        ui: options.ui.clone(),
        home: dirs::home_dir(),
        workspace: options.workspace.clone(),
        changed: crate::capability::Changed::default(),
    };
    modules.push(crate::app::footer_commands::module(
        options.footer.clone(),
        home,
        capabilities,
    ));
    options.commands = command_help(&modules);
    match crate::app::bridge::start(&bridge_cache_dir(), modules, &options.theme.widgets).await {
        Ok(started) => {
            for capability in capabilities {
                capability.attach(&started.link);
            }
            options.bridge = Some(started);
        }
        Err(err) => {
            tracing::error!("bridge unavailable: {err:#}");
            options
                .config_errors
                .push(format!("The bridge to Pi could not start: {err:#}"));
        }
    }
}

/// What Pi would have left in the terminal (its inline output, and how to resume its session),
/// and on stderr why it failed when it did.
fn print_ending(outcome: &mut AppOutcome, workspace: &Path) {
    let ending = pi::resume::exit_output(
        std::mem::take(&mut outcome.transcript),
        outcome.session.as_ref(),
        workspace,
    );
    {
        let mut out = std::io::stdout().lock();
        let _ = out
            .write_all(&ending.transcript)
            .and_then(|()| {
                ending
                    .resume
                    .iter()
                    .try_for_each(|line| writeln!(out, "{line}"))
            })
            .and_then(|()| out.flush());
    }
    if let Some(exit) = outcome.pi_exit
        && !exit.success()
    {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "unipi-tui: Pi exited with {}", describe_exit(exit));
        // Without a transcript (Pi died on its fullscreen), its last lines say what happened.
        if ending.transcript.is_empty() {
            for line in &outcome.last_lines {
                let _ = writeln!(err, "  {line}");
            }
        }
    }
}

/// Every `/unipi:*` command listed under the modules, for the help overlay.
fn command_help(
    modules: &[(
        std::sync::Arc<dyn crate::bridge::Module>,
        Vec<crate::bridge::Command>,
    )],
) -> Vec<(String, String)> {
    modules
        .iter()
        .flat_map(|(_, commands)| commands.iter().map(|command| command.spec.clone()))
        .map(|spec| (spec.name, spec.description))
        .collect()
}

/// Where the bridge extension is written (next to the pinned Pi); never a shared temporary
/// directory, where another user could put their own extension in its place.
pub(crate) fn bridge_cache_dir() -> PathBuf {
    pi::cache_dir()
        .or_else(|| {
            crate::sys::private_dir::runtime_root()
                .ok()
                .map(|root| root.path.clone())
        })
        .unwrap_or_else(|| std::env::temp_dir().join("unipi-tui"))
}

/// What the user must hear about the private runtime directory: the usual one was refused and
/// a fresh one is used, or none could be made.
fn runtime_root_notice() -> Option<String> {
    match crate::sys::private_dir::runtime_root() {
        Ok(root) => {
            tracing::info!("runtime directory: {}", root.path.display());
            root.notice.clone()
        }
        Err(err) => Some(format!("No private runtime directory could be made: {err}")),
    }
}

fn describe_exit(exit: crate::pane::pty::ChildExit) -> String {
    match exit {
        crate::pane::pty::ChildExit::Code(code) => format!("status {code}"),
        crate::pane::pty::ChildExit::Signal(sig) => {
            let name = nix::sys::signal::Signal::try_from(sig)
                .map(|s| s.as_str().to_string())
                .unwrap_or_else(|_| format!("signal {sig}"));
            format!("{name} (status {})", 128 + sig)
        }
    }
}

fn print_help() {
    let _ = help_command().print_help();
}

/// What `demo --scenario FILE` reads, for `--help`: every key of the format (the README has the
/// full reference and an example; a test checks that both name every key the parser takes).
const SCENARIO_HELP: &str = "\
Scenario files (`demo --scenario FILE`): TOML that scripts the demo's model. The first [[rule]]
  that matches a request's last message answers it; [fallback] answers when none does. The
  README's \"Scenario files\" has the details and an example.
  `model` = \"id\" or [\"id\", …]      served as unipi-scripted/<id>; Pi starts on the first
  `chunk_chars` = 8, `chunk_delay_ms` = 0   how replies stream (a rule may override both)
  [price.<id>] `input`, `output`, `cache_read`, `cache_write`   dollars per million tokens
  [[rule]] matching: `when` = '<regex>' (searched in the last message), `role` = \"user\" (system,
    developer, user, assistant or tool), `model` = \"<id>\", `times` = 1 (answers at most so often)
  answering: `reply` = \"…\" and/or `tool_calls` = [{ name = \"bash\", arguments = { … }, id = \"c1\" }]
    (${1} or ${name} in arguments: a group of `when`), or `error` = { status = 429, message = \"…\" };
    `delay_ms` = 0, `usage` = { prompt_tokens = 10, completion_tokens = 5 } (default: chars / 4)
  [fallback] the answering keys only";

/// The command as `--help` shows it: our options, then how the rest goes to Pi, sessions, the
/// scenario format, files and environment.
pub(crate) fn help_command() -> clap::Command {
    let cmd = Cli::command();
    let paths = format!(
        "Every other argument goes to Pi unchanged (run `unipi-tui -- --help` for Pi's own help);\n\
         after a bare `--` everything goes to Pi. The exit code is Pi's.\n\n\
         Sessions: `unipi-tui --detachable NAME` (or {{\"detach\": {{\"enabled\": true}}}} in\n  \
         ~/.unipi/config/workbench.json) runs Pi in a session that outlives the terminal; Ctrl+Alt+D\n  \
         detaches. `unipi-tui ls` lists sessions, `unipi-tui attach NAME` re-attaches, `unipi-tui\n  \
         kill NAME` ends one.\n\n\
         {SCENARIO_HELP}\n\n\
         Files:\n  log file     {}\n  session log  {}\n  keymap       {}\n  theme        {}\n\n\
         Environment: UNIPI_PI_BIN, UNIPI_LOG, NO_COLOR, UNIPI_TUI_DISABLE_KEYBOARD_ENHANCEMENT=1,\n  UNIPI_TUI_NO_INSTALL=1 (never install Pi; without it a missing Pi is installed after asking)\n\
         Pinned Pi: {} {} (Node >= {}), legacy {} {}",
        log_file_path().display(),
        crate::detach::daemon::log_path().display(),
        config_path("keymap.toml"),
        config_path("theme.toml"),
        pi::versions().current_package,
        pi::versions().current_version,
        pi::versions().current_min_node,
        pi::versions().legacy_package,
        pi::versions().legacy_version,
    );
    cmd.after_help(paths)
}

fn config_path(name: &str) -> String {
    config::config_dir()
        .map(|d| d.join(name).display().to_string())
        .unwrap_or_else(|| format!("~/.config/unipi-tui/{name}"))
}

fn print_version(pi_bin: Option<&Path>) {
    let v = pi::versions();
    println!("unipi-tui {}", env!("CARGO_PKG_VERSION"));
    println!(
        "pinned Pi: {}@{} (current), {}@{} (legacy)",
        v.current_package, v.current_version, v.legacy_package, v.legacy_version
    );
    let found = pi::find_installed(pi_bin)
        .map(|(program, version)| {
            let version = version.unwrap_or_else(|| "unknown version".into());
            format!("{} ({version})", program.display())
        })
        .unwrap_or_else(|| match pi_bin {
            Some(path) => format!("{} is not an executable file", path.display()),
            None => format!(
                "not found (it will be installed into {} on first run, after asking)",
                pi::cache_dir()
                    .map_or_else(|| "the cache directory".into(), |d| d.display().to_string())
            ),
        });
    println!("Pi in use: {found}");
}

/// `~/.local/state/unipi-tui/unipi-tui.log` (or the cache dir where there is no state dir).
pub fn log_file_path() -> PathBuf {
    dirs::state_dir()
        .or_else(dirs::cache_dir)
        .unwrap_or_else(std::env::temp_dir)
        .join("unipi-tui")
        .join("unipi-tui.log")
}

/// Logs go to a file only: the terminal belongs to the TUI. The file is rotated once at 8 MB.
/// It quotes what the user and the agent said, so it is private: mode 0600 in a 0700 directory,
/// and the files older versions left readable there are tightened.
pub(crate) fn init_logging(
    path: &Path,
    level: &str,
) -> Option<tracing_appender::non_blocking::WorkerGuard> {
    let dir = path.parent()?;
    crate::sys::private_dir::make_private_dir(dir).ok()?;
    crate::sys::private_dir::tighten_files(dir);
    if std::fs::metadata(path).is_ok_and(|m| m.len() > 8 * 1024 * 1024) {
        let _ = std::fs::rename(path, path.with_extension("log.1"));
    }
    let file = crate::sys::private_dir::open_private_append(path).ok()?;
    let (writer, guard) = tracing_appender::non_blocking(file);
    let filter = tracing_subscriber::EnvFilter::try_new(level)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(false)
        .try_init()
        .ok()?;
    Some(guard)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(args: &[&str]) -> SplitArgs {
        split_args(args.iter().map(OsString::from))
    }

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn help_documents_every_key_of_the_scenario_format() {
        let help = help_command().render_help().to_string();
        assert!(help.contains("unipi-tui demo [--scenario FILE]"), "{help}");
        assert!(
            help.contains("Scenario files (`demo --scenario FILE`): TOML"),
            "{help}"
        );
        assert_eq!(
            crate::scripted::undocumented_keys(&help),
            Vec::<String>::new(),
            "{help}"
        );
        // No line of it is wider than a 100-column terminal.
        for line in SCENARIO_HELP.lines() {
            assert!(line.chars().count() <= 100, "{line:?}");
        }
    }

    #[test]
    fn pi_arguments_pass_through_unchanged_and_in_order() {
        let s = split(&["--model", "x", "-c", "fix the --help text", "-p"]);
        assert!(!s.demo);
        assert!(s.ours.is_empty());
        assert_eq!(
            s.pi,
            os(&["--model", "x", "-c", "fix the --help text", "-p"])
        );
    }

    #[test]
    fn our_options_are_picked_out_anywhere() {
        let s = split(&[
            "--model",
            "x",
            "--pi-bin",
            "/opt/pi",
            "-c",
            "--log-level=debug",
            "hi",
        ]);
        assert_eq!(s.ours, os(&["--pi-bin", "/opt/pi", "--log-level=debug"]));
        assert_eq!(s.pi, os(&["--model", "x", "-c", "hi"]));
    }

    #[test]
    fn everything_after_double_dash_goes_to_pi() {
        let s = split(&["--pi-bin", "p", "--", "--help", "--pi-bin", "q"]);
        assert_eq!(s.ours, os(&["--pi-bin", "p"]));
        assert_eq!(s.pi, os(&["--help", "--pi-bin", "q"]));
    }

    #[test]
    fn demo_is_a_subcommand_only_in_first_position() {
        let s = split(&["demo", "--scenario", "s.toml", "--tui-mode", "regular"]);
        assert!(s.demo);
        assert_eq!(s.ours, os(&["--scenario", "s.toml"]));
        assert_eq!(s.pi, os(&["--tui-mode", "regular"]));
        let s = split(&["-c", "demo"]);
        assert!(!s.demo);
        assert_eq!(s.pi, os(&["-c", "demo"]));
    }

    #[test]
    fn a_detachable_name_may_come_before_demo() {
        let s = split(&["--detachable", "d1", "demo", "--scenario", "s.toml", "-c"]);
        assert!(s.demo);
        assert_eq!(s.ours, os(&["--detachable", "d1", "--scenario", "s.toml"]));
        assert_eq!(s.pi, os(&["-c"]));
        let s = split(&["--detachable=d1", "--model", "x"]);
        assert!(!s.demo);
        assert_eq!(s.ours, os(&["--detachable=d1"]));
        assert_eq!(s.pi, os(&["--model", "x"]));
        let cli = Cli::try_parse_from(["unipi-tui", "--detachable=d1"]).unwrap();
        assert_eq!(cli.detachable.as_deref(), Some("d1"));
        // Pi's own `--session` keeps its meaning: Pi's argument, not the session's name.
        let s = split(&["--detachable", "d1", "--session", "a.jsonl"]);
        assert_eq!(s.ours, os(&["--detachable", "d1"]));
        assert_eq!(s.pi, os(&["--session", "a.jsonl"]));
    }

    #[test]
    fn our_flags_parse_with_clap() {
        let cli = Cli::try_parse_from(["unipi-tui", "--pi-bin", "/x/pi", "--log-level", "debug"])
            .unwrap();
        assert_eq!(cli.pi_bin.as_deref(), Some(Path::new("/x/pi")));
        assert_eq!(cli.log_level, "debug");
    }
}
