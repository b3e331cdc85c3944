//! `/unipi:doctor`: the same report as `unipi-tui doctor`, made in the background (it starts
//! MCP servers, which takes longer than a command may) and shown in a native overlay when done;
//! in a run without the screen (`-p`), the report in words is the command's answer.
//! Inside the workbench the bridge is known to load (the command came through it) and the
//! terminal's keyboard protocol is the one the workbench set up.

use std::path::PathBuf;
use std::sync::Arc;

use super::{BridgeProbe, Inputs, TerminalProbe};
use crate::bridge::{Command, CommandCall, CommandReply, CommandSpec, Module, NotifyLevel};
use crate::capability::{Capability, Registration, StartContext, Ui};

pub const REGISTRATION: Registration = Registration {
    name: "doctor",
    start,
    key_tables: &[],
    actions: &[],
    dock: None,
};

fn start(context: &mut StartContext<'_>) -> Option<Arc<dyn Capability>> {
    Some(Arc::new(Doctor {
        home: context.home.map(PathBuf::from),
        workspace: context.workspace.to_path_buf(),
        pi: context.pi.clone(),
        ui: context.ui.clone(),
    }))
}

/// The bridge module `/unipi:doctor` is listed under (`/unipi:info`); it declares no tool.
struct DoctorModule;

impl Module for DoctorModule {
    fn name(&self) -> &'static str {
        "doctor"
    }
}

#[derive(Clone)]
struct Doctor {
    home: Option<PathBuf>,
    workspace: PathBuf,
    pi: crate::pi::PiCommand,
    ui: Ui,
}

impl Doctor {
    fn inputs(&self) -> Inputs {
        Inputs {
            home: self.home.clone(),
            workspace: self.workspace.clone(),
            pi_bin: None,
            pi: Some(self.pi.clone()),
            terminal: TerminalProbe::Workbench(crate::term::tui::keyboard_protocol()),
            bridge: BridgeProbe::Connected,
            cache_dir: crate::cli::bridge_cache_dir(),
        }
    }

    /// With a screen: starts the checks and answers at once; the overlay opens when they are
    /// done. Without one (`-p`, `--mode json`), the report is the answer, if it is done within
    /// [`HEADLESS_LIMIT`] (the command's own time limit is a little longer).
    async fn command(self, _call: CommandCall) -> CommandReply {
        let inputs = self.inputs();
        if !self.ui.has_screen() {
            return match tokio::time::timeout(HEADLESS_LIMIT, super::examine(&inputs)).await {
                Ok(rows) => CommandReply::Notify {
                    level: if super::is_broken(&rows) {
                        NotifyLevel::Warning
                    } else {
                        NotifyLevel::Info
                    },
                    message: super::to_text(&rows).trim_end().to_owned(),
                },
                Err(_) => CommandReply::Failed {
                    message: format!(
                        "the checks took longer than {} s (a slow MCP server?): run `unipi-tui \
                         doctor` in a shell for the whole report",
                        HEADLESS_LIMIT.as_secs()
                    ),
                },
            };
        }
        let ui = self.ui.clone();
        tokio::spawn(async move {
            let rows = super::examine(&inputs).await;
            show(&ui, rows);
        });
        CommandReply::Notify {
            message: "Checking the set-up: the report opens when it is done".to_owned(),
            level: NotifyLevel::Info,
        }
    }
}

/// How long a run without a screen waits for the report.
const HEADLESS_LIMIT: std::time::Duration = std::time::Duration::from_secs(8);

/// The report in the overlay (or, should the screen have gone meanwhile, its totals as a
/// notice, which the log keeps).
pub(super) fn show(ui: &Ui, rows: Vec<super::DoctorRow>) {
    if !ui.open(super::view::doctor_view(rows.clone(), ui.keymap())) {
        tracing::info!("doctor: {}", super::to_text(&rows));
    }
}

impl Capability for Doctor {
    fn modules(&self) -> Vec<Arc<dyn Module>> {
        vec![Arc::new(DoctorModule)]
    }

    fn commands(&self) -> Vec<Command> {
        let spec = CommandSpec::new(
            "unipi:doctor",
            "Check Pi, Node, config files, MCP servers, the terminal and the private directories",
        );
        vec![Command::new(spec, self.clone(), Self::command)]
    }
}
