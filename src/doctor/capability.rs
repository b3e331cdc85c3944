//! `/unipi:doctor`: the same report as `unipi-tui doctor`, made in the background (it starts
//! MCP servers, which takes longer than a command may) and shown in a native overlay when done.
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

    /// Starts the checks and answers at once; the overlay opens when they are done (without a
    /// screen, the totals and every row that is not ok come as a notice).
    async fn command(self, _call: CommandCall) -> CommandReply {
        let inputs = self.inputs();
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

/// The report in the overlay, or in words where there is no screen.
pub(super) fn show(ui: &Ui, rows: Vec<super::DoctorRow>) {
    if ui.has_screen() {
        ui.open(super::view::doctor_view(rows, ui.keymap()));
    } else {
        ui.notice(super::to_text(&rows));
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
