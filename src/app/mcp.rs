//! The app's side of MCP: `/unipi:mcp-status` (the overlay) and `/unipi:mcp-reload`, the
//! overlay's restart/stop requests carried out on the module (in spawned tasks, never blocking
//! the loop), and the footer segment. The module (`crate::mcp::module`) owns the servers and
//! what is declared to Pi; this file reads its [`McpStatus`] and calls its API. Status changes
//! arrive as `AppEvent::McpChanged` (the module's version watch, coalesced).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use unipi_widgets::footer::Segment;
use unipi_widgets::mcp::{McpServerRow, ServerState, mcp_segment};

use crate::bridge::{CommandReply, NotifyLevel};
use crate::mcp::manager::ServerStatus;
use crate::mcp::module::{McpModule, McpStatus, RELOAD_COMMAND, STATUS_COMMAND};
use crate::sys::lock;
use crate::views::mcp::{McpRequest, McpView};

/// How long `/unipi:mcp-reload` waits before answering Pi (the bridge gives commands 10 s); a
/// slower reload goes on and the overlay shows where it got.
const RELOAD_ANSWER_WITHIN: Duration = Duration::from_secs(8);

/// The MCP module as the app holds it, with the footer's figures and the overlay's last notice.
pub struct Mcp {
    pub module: McpModule,
    counts: Counts,
    /// Set by the tasks that carry out the overlay's requests.
    notice: Arc<Mutex<Option<String>>>,
}

/// What the footer segment shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Counts {
    running: usize,
    configured: usize,
    tools: usize,
    failed: usize,
}

impl Mcp {
    pub fn new(module: McpModule) -> Self {
        let mut mcp = Mcp {
            module,
            counts: Counts::default(),
            notice: Arc::new(Mutex::new(None)),
        };
        mcp.counts = counts(&mcp.module.status());
        mcp
    }
}

/// The overlay's rows from the module's status. Agents: those that called the server, then —
/// when its tools are declared — every other connected Pi (each one has them).
pub fn server_rows(status: &McpStatus) -> Vec<McpServerRow> {
    let home = dirs::home_dir();
    status
        .servers
        .iter()
        .map(|server| {
            let snapshot = &server.snapshot;
            let mut agents: Vec<String> = server
                .callers
                .iter()
                .map(|agent| format!("{agent} (called)"))
                .collect();
            if server.declared {
                agents.extend(
                    status
                        .connected_agents
                        .iter()
                        .filter(|agent| !server.callers.contains(agent))
                        .map(ToString::to_string),
                );
            }
            let state = if !server.enabled {
                ServerState::Disabled
            } else if server.clashes.is_empty() {
                match snapshot.status {
                    ServerStatus::Starting => ServerState::Starting,
                    ServerStatus::Running => ServerState::Running,
                    ServerStatus::Stopped => ServerState::Stopped,
                    ServerStatus::Error => ServerState::Error,
                }
            } else {
                ServerState::Clash
            };
            McpServerRow {
                name: snapshot.name.clone(),
                state: Some(state),
                tools: snapshot.tools.len(),
                declared: server.declared,
                source: tilde(&snapshot.source, home.as_deref()),
                target: snapshot.target.clone(),
                pid: snapshot.pid,
                restarts: snapshot.restarts,
                agents,
                error: snapshot.error.clone(),
                clashes: server.clashes.iter().map(ToString::to_string).collect(),
                stderr_tail: snapshot.stderr_tail.clone(),
            }
        })
        .collect()
}

impl super::App {
    /// `/unipi:mcp-status` and `/unipi:mcp-reload`.
    pub(super) fn on_mcp_command(
        &mut self,
        _agent: crate::bridge::AgentId,
        name: &str,
        _args: &str,
        reply: tokio::sync::oneshot::Sender<CommandReply>,
    ) {
        let Some(mcp) = &self.mcp else {
            let _ = reply.send(CommandReply::Failed {
                message: "MCP is not managed by the workbench in this session (mcp.owner is \
                          \"pi\", or the bridge did not start)"
                    .to_owned(),
            });
            return;
        };
        match name {
            STATUS_COMMAND => {
                let _ = reply.send(CommandReply::Done);
                if self.views.find_mut::<McpView>().is_none() {
                    let status = mcp.module.status();
                    self.views.push(Box::new(McpView::new(
                        server_rows(&status),
                        status.config_errors.clone(),
                    )));
                }
            }
            RELOAD_COMMAND => {
                let module = mcp.module.clone();
                let workspace = self.workspace.clone();
                let home = dirs::home_dir();
                let reload =
                    tokio::spawn(async move { module.reload(home.as_deref(), &workspace).await });
                tokio::spawn(async move {
                    let answer = match tokio::time::timeout(RELOAD_ANSWER_WITHIN, reload).await {
                        Ok(Ok(summary)) => CommandReply::Notify {
                            message: summary,
                            level: NotifyLevel::Info,
                        },
                        Ok(Err(err)) => CommandReply::Failed {
                            message: format!("MCP reload failed: {err}"),
                        },
                        Err(_) => CommandReply::Notify {
                            message: format!(
                                "MCP reload is still starting servers; /{STATUS_COMMAND} shows \
                                 their state"
                            ),
                            level: NotifyLevel::Info,
                        },
                    };
                    let _ = reply.send(answer);
                });
            }
            other => {
                let _ = reply.send(CommandReply::Failed {
                    message: format!("unipi-tui has no command /{other}"),
                });
            }
        }
        self.request_draw();
    }

    /// The servers changed: new footer figures, fresh rows in an open overlay.
    pub(super) fn refresh_mcp(&mut self) {
        let Some(mcp) = &mut self.mcp else {
            return;
        };
        let status = mcp.module.status();
        mcp.counts = counts(&status);
        let notice = lock(&mcp.notice).take();
        if let Some(view) = self.views.find_mut::<McpView>() {
            view.set_servers(server_rows(&status), status.config_errors.clone());
            if let Some(notice) = notice {
                view.set_notice(notice);
            }
        }
        self.request_draw();
    }

    /// Carries out the overlay's restart/stop requests, each in its own task; the outcome comes
    /// back as a notice with the next status change.
    pub(super) fn carry_out_mcp_requests(&mut self) {
        let Some(view) = self.views.find_mut::<McpView>() else {
            return;
        };
        let requests = view.take_requests();
        let Some(mcp) = &self.mcp else {
            return;
        };
        for request in requests {
            let module = mcp.module.clone();
            let notice = Arc::clone(&mcp.notice);
            tokio::spawn(async move {
                let text = match &request {
                    McpRequest::Restart(name) => match module.restart(name).await {
                        Ok(()) => format!(
                            "Restarted `{name}`: once it runs, its tools are active again in \
                             every connected Pi."
                        ),
                        Err(err) => format!("Could not restart `{name}`: {err:#}"),
                    },
                    McpRequest::Stop(name) => match module.stop(name).await {
                        Ok(()) => format!(
                            "Stopped `{name}`: its tools were withdrawn from every Pi's active \
                             tools (Pi keeps them registered, inactive, until it restarts)."
                        ),
                        Err(err) => format!("Could not stop `{name}`: {err:#}"),
                    },
                };
                *lock(&notice) = Some(text);
                module.changed();
            });
        }
    }

    /// `MCP 2/3 · 14 tools`, when servers are configured.
    pub(super) fn mcp_segment(&self) -> Option<Segment> {
        let counts = self.mcp.as_ref()?.counts;
        mcp_segment(
            counts.running,
            counts.configured,
            counts.tools,
            counts.failed,
        )
    }
}

fn counts(status: &McpStatus) -> Counts {
    Counts {
        running: status.running(),
        configured: status.configured(),
        tools: status.tools(),
        failed: status.failed(),
    }
}

/// `path` with the home directory shown as `~`.
fn tilde(path: &std::path::Path, home: Option<&std::path::Path>) -> String {
    match home.and_then(|home| path.strip_prefix(home).ok()) {
        Some(rest) => format!("~/{}", rest.display()),
        None => path.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;
    use crate::bridge::AgentId;
    use crate::mcp::manager::{McpToolInfo, ServerSnapshot};
    use crate::mcp::module::{Clash, ClashWith, ServerView};

    fn make_view(name: &str, status: ServerStatus, declared: bool, callers: &[&str]) -> ServerView {
        ServerView {
            snapshot: ServerSnapshot {
                name: name.to_owned(),
                source: PathBuf::from("/w/.unipi/config/mcp.json"),
                status,
                tools: vec![McpToolInfo {
                    server: name.to_owned(),
                    name: "echo".into(),
                    bridged_name: format!("mcp__{name}__echo"),
                    description: String::new(),
                    input_schema: serde_json::json!({}),
                }],
                error: None,
                stderr_tail: String::new(),
                pid: None,
                target: "x".into(),
                restarts: 0,
            },
            enabled: true,
            declared,
            clashes: vec![],
            callers: callers.iter().map(|agent| AgentId::new(*agent)).collect(),
        }
    }

    #[test]
    fn rows_list_callers_then_connected_agents_of_declared_servers() {
        let mut clashed = make_view("c", ServerStatus::Stopped, false, &[]);
        let mut disabled = make_view("e", ServerStatus::Stopped, false, &[]);
        disabled.enabled = false;
        clashed.clashes = vec![Clash {
            name: "mcp__c__echo".into(),
            with: ClashWith::Server("b".into()),
        }];
        let status = McpStatus {
            servers: vec![
                make_view("a", ServerStatus::Running, true, &["helper:h1"]),
                make_view("b", ServerStatus::Starting, false, &[]),
                clashed,
                make_view("d", ServerStatus::Error, false, &[]),
                disabled,
            ],
            connected_agents: vec![AgentId::main(), AgentId::new("helper:h1")],
            config_errors: vec![],
        };
        let rows = server_rows(&status);
        let summary: Vec<(Option<ServerState>, Vec<String>)> = rows
            .iter()
            .map(|row| (row.state, row.agents.clone()))
            .collect();
        assert_eq!(
            summary,
            vec![
                (
                    Some(ServerState::Running),
                    vec!["helper:h1 (called)".to_owned(), "main".to_owned()]
                ),
                (Some(ServerState::Starting), vec![]),
                (Some(ServerState::Clash), vec![]),
                (Some(ServerState::Error), vec![]),
                (Some(ServerState::Disabled), vec![]),
            ]
        );
        assert!(rows[2].clashes[0].contains("already bridged from MCP server `b`"));
        let figures = counts(&status);
        assert_eq!(
            figures,
            Counts {
                running: 1,
                configured: 4,
                tools: 1,
                failed: 2
            }
        );
    }

    #[test]
    fn sources_under_home_read_with_a_tilde() {
        let home = Path::new("/home/u");
        assert_eq!(
            tilde(Path::new("/home/u/.unipi/config/mcp.json"), Some(home)),
            "~/.unipi/config/mcp.json"
        );
        assert_eq!(
            tilde(Path::new("/w/.pi/mcp.json"), Some(home)),
            "/w/.pi/mcp.json"
        );
        assert_eq!(tilde(Path::new("/w/x"), None), "/w/x");
    }
}
