//! The workbench's own page of the dashboard — its modules, what each registered with Pi, the
//! versions on both sides of the bridge and where its files are — and the dashboard in words for
//! a run without a screen.

use std::path::Path;

use unipi_widgets::dashboard::DashboardTab;
use unipi_widgets::info::{InfoModel, InfoPaths, ModuleInfo, ModuleState};

use crate::bridge::{self, AgentId, BridgeHost, ModuleStatus, Registry};

/// The workbench's page, from the running bridge (none before it is up).
pub(crate) fn model(bridge: Option<(&Registry, &BridgeHost)>, log_path: &Path) -> InfoModel {
    let modules = bridge
        .map(|(registry, _)| registry.modules())
        .unwrap_or_default()
        .into_iter()
        .map(|m| ModuleInfo {
            name: m.name.to_string(),
            state: match m.status {
                ModuleStatus::Ready => ModuleState::Ready,
                ModuleStatus::Disabled { .. } => ModuleState::Disabled,
                ModuleStatus::Error { message } => ModuleState::Error(message),
            },
            tools: m.tools,
            commands: m.commands.iter().map(|c| format!("/{c}")).collect(),
        })
        .collect();
    let pi_version = bridge
        .and_then(|(_, host)| host.agent_info(&AgentId::main()))
        .map(|info| info.pi_version);
    let home = dirs::home_dir();
    InfoModel {
        modules,
        pi_version,
        bridge_protocol: bridge::protocol::PROTOCOL_VERSION.to_string(),
        workbench_version: env!("CARGO_PKG_VERSION").to_string(),
        paths: InfoPaths {
            config: home
                .as_ref()
                .map(|h| h.join(".unipi/config").display().to_string()),
            database: home
                .as_ref()
                .map(|h| h.join(".unipi/db").display().to_string()),
            logs: Some(log_path.display().to_string()),
            runtime: bridge.map(|(_, host)| host.runtime_dir().display().to_string()),
        },
        scroll: 0,
    }
}

/// The dashboard in words: each tab's title, then its rows (the workbench's page as versions and
/// modules).
pub(crate) fn text(tabs: &[DashboardTab]) -> String {
    let mut lines = Vec::new();
    for tab in tabs {
        lines.push(format!("{}:", tab.title()));
        match tab {
            DashboardTab::Workbench(model) => {
                lines.push(format!(
                    "  unipi-tui {} · Pi {} · bridge protocol {}",
                    model.workbench_version,
                    model.pi_version.as_deref().unwrap_or("unknown"),
                    model.bridge_protocol
                ));
                for module in &model.modules {
                    lines.push(format!(
                        "  {}: {} tools, commands {}",
                        module.name,
                        module.tools.len(),
                        module.commands.join(" ")
                    ));
                }
            }
            DashboardTab::Group(group) => {
                for row in &group.rows {
                    lines.push(format!("  {}: {}", row.label, row.value));
                }
            }
        }
    }
    lines.join("\n")
}
