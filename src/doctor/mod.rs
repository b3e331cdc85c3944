//! `unipi-tui doctor` and `/unipi:doctor`: is this machine set up for the workbench? Each check
//! is one row — ok, warning or broken, what was found, a one-line fix — over the same parts the
//! workbench uses: Pi as the workbench finds it (`--pi-bin` honoured) and its line, the Node
//! that runs it, the bridge extension loaded by that Pi (Pi started briefly in RPC mode, as a
//! helper is), every config file the workbench reads through its own loaders (`path:line:col`),
//! every configured MCP server started and listed, the desktop bus, the outer terminal
//! (keyboard protocol, clipboard, colours), and the private directories.
//!
//! Broken means something the user configured or needs does not work: the command exits 1.
//! What is merely unavailable here — no session bus on a server, no terminal — is a warning.

mod capability;
mod host;
mod pi_checks;
mod probes;
mod sources;
#[cfg(test)]
mod tests;
mod view;

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
pub use unipi_widgets::doctor::{DoctorRow, DoctorStatus};

pub use capability::REGISTRATION;

/// The word after `unipi-tui` that runs the doctor.
pub const SUBCOMMAND: &str = "doctor";

/// `unipi-tui doctor [--pi-bin PATH] [--json]`.
#[derive(Debug, Parser)]
#[command(
    name = "unipi-tui doctor",
    about = "Checks Pi, Node, the bridge, config files, MCP servers, the terminal and the \
             private directories; exits 1 when something is broken"
)]
pub struct DoctorArgs {
    /// The Pi executable to check (default: the one the workbench would run).
    #[arg(long, value_name = "PATH", env = "UNIPI_PI_BIN")]
    pub pi_bin: Option<PathBuf>,
    /// Print the report as JSON (`{"checks": [...], "broken": n, "warnings": n}`).
    #[arg(long)]
    pub json: bool,
}

/// How the outer terminal is examined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TerminalProbe {
    /// stdin and stdout are a terminal nobody else reads: query it.
    Query,
    /// Not a terminal: skipped.
    NotATerminal,
    /// Inside the workbench, which queried it at start: this protocol is in use.
    Workbench(Option<crate::term::tui::KeyboardProtocol>),
}

/// How the bridge is examined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BridgeProbe {
    /// Start Pi briefly with the extension and wait for it to connect.
    Run,
    /// The command came through it: it is loaded, in this Pi.
    Connected,
}

/// What the report is made from.
pub(crate) struct Inputs {
    pub home: Option<PathBuf>,
    pub workspace: PathBuf,
    pub pi_bin: Option<PathBuf>,
    /// The Pi the workbench runs (inside the workbench); located afresh when `None`.
    pub pi: Option<crate::pi::PiCommand>,
    pub terminal: TerminalProbe,
    pub bridge: BridgeProbe,
    /// Where the bridge extension is written.
    pub cache_dir: PathBuf,
}

/// Every check, in the order shown.
pub(crate) async fn examine(inputs: &Inputs) -> Vec<DoctorRow> {
    let mut rows = Vec::new();
    let pi = match &inputs.pi {
        Some(pi) => {
            rows.push(pi_checks::describe_pi(pi));
            Some(pi.clone())
        }
        None => {
            let (row, pi) = pi_checks::locate_pi(inputs.pi_bin.as_deref());
            rows.push(row);
            pi
        }
    };
    let (bridge, node) = match (&inputs.bridge, &pi) {
        (BridgeProbe::Connected, _) => (
            row(
                DoctorStatus::Ok,
                "bridge",
                "loaded in this Pi (this command came through it)",
                None,
            ),
            probes::main_pi_node(),
        ),
        (BridgeProbe::Run, Some(pi)) => {
            probes::bridge(pi, &inputs.workspace, &inputs.cache_dir).await
        }
        (BridgeProbe::Run, None) => (
            row(
                DoctorStatus::Warning,
                "bridge",
                "not checked: no Pi to load it",
                Some("fix Pi first (above)"),
            ),
            None,
        ),
    };
    if let Some(pi) = &pi {
        rows.push(pi_checks::node(pi, node));
    }
    rows.push(bridge);
    rows.extend(sources::config_files(
        inputs.home.as_deref(),
        &inputs.workspace,
    ));
    rows.extend(probes::mcp_servers(inputs.home.as_deref(), &inputs.workspace).await);
    rows.push(host::session_bus().await);
    rows.extend(host::terminal(inputs.terminal));
    rows.extend(host::directories(inputs.home.as_deref()));
    rows
}

/// One row.
pub(crate) fn row(
    status: DoctorStatus,
    name: impl Into<String>,
    detail: impl Into<String>,
    fix: Option<&str>,
) -> DoctorRow {
    DoctorRow {
        status,
        name: name.into(),
        detail: detail.into(),
        fix: fix.map(str::to_owned),
    }
}

/// The report as `unipi-tui doctor` prints it: a row per check, the fix indented under it, the
/// totals last.
pub fn to_text(rows: &[DoctorRow]) -> String {
    let name_width = rows.iter().map(|r| r.name.len()).max().unwrap_or(0).min(20);
    let mut out = String::new();
    for check in rows {
        out.push_str(&format!(
            "{:<8} {:<name_width$}  {}\n",
            check.status.word(),
            check.name,
            check.detail
        ));
        if let Some(fix) = &check.fix {
            out.push_str(&format!("{:<8} {:<name_width$}  fix: {fix}\n", "", ""));
        }
    }
    let model = unipi_widgets::doctor::DoctorModel {
        rows: rows.to_vec(),
        ..Default::default()
    };
    out.push_str(&model.totals());
    out.push('\n');
    out
}

/// The report as JSON.
pub fn to_json(rows: &[DoctorRow]) -> serde_json::Value {
    let count = |status| rows.iter().filter(|r| r.status == status).count();
    serde_json::json!({
        "checks": rows.iter().map(|check| serde_json::json!({
            "status": check.status.word(),
            "name": check.name,
            "detail": check.detail,
            "fix": check.fix,
        })).collect::<Vec<_>>(),
        "broken": count(DoctorStatus::Broken),
        "warnings": count(DoctorStatus::Warning),
        "ok": count(DoctorStatus::Ok),
    })
}

/// Whether the report fails the command.
pub(crate) fn is_broken(rows: &[DoctorRow]) -> bool {
    rows.iter().any(|r| r.status == DoctorStatus::Broken)
}

/// `unipi-tui doctor …` (`args` after the word `doctor`).
pub fn main(args: &[OsString]) -> ExitCode {
    let argv = std::iter::once(OsString::from("unipi-tui doctor")).chain(args.iter().cloned());
    let parsed = match DoctorArgs::try_parse_from(argv) {
        Ok(parsed) => parsed,
        Err(err) => {
            let _ = err.print();
            return if err.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let workspace = match std::env::current_dir() {
        Ok(dir) => dir,
        Err(err) => {
            eprintln!("unipi-tui doctor: cannot read the working directory: {err}");
            return ExitCode::from(2);
        }
    };
    let terminal = if std::io::stdin().is_terminal() && std::io::stdout().is_terminal() {
        TerminalProbe::Query
    } else {
        TerminalProbe::NotATerminal
    };
    let inputs = Inputs {
        home: dirs::home_dir(),
        workspace,
        pi_bin: parsed.pi_bin,
        pi: None,
        terminal,
        bridge: BridgeProbe::Run,
        cache_dir: crate::cli::bridge_cache_dir(),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("unipi-tui doctor: cannot start the async runtime: {err}");
            return ExitCode::from(2);
        }
    };
    let rows = runtime.block_on(examine(&inputs));
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    let text = if parsed.json {
        format!("{:#}\n", to_json(&rows))
    } else {
        to_text(&rows)
    };
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    if is_broken(&rows) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
