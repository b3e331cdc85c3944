//! The `/unipi:mcp-status` overlay view: the MCP servers as `unipi_widgets::mcp` draws them, a
//! selection, and the keys that act on the selected server (restart, stop, close — from its own
//! `[mcp]` key table, so a user can rebind them). Acting is I/O, so the view hands the action to
//! its port ([`McpActions`]: the MCP module in the workbench, a recorder in tests), which runs it
//! in the background and leaves a notice; the view pulls fresh rows and that notice when the MCP
//! capability signals a change, keeping the selection on the same server.

use std::path::Path;
use std::sync::{Arc, Mutex};

use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use unipi_widgets::mcp::{McpServerRow, McpStatusModel, ServerState, render};
use unipi_widgets::theme::Theme;

use super::manager::ServerStatus;
use super::module::{McpModule, McpStatus};
use crate::config::keymap::{KeyTable, KeyTableSpec, Keymap, key_table};
use crate::views::{RefreshContext, View, ViewAction};

key_table! {
    /// The `[mcp]` key table.
    pub(crate) static MCP_KEYS,
    pub(crate) enum McpAction,
    table "mcp", title "The MCP servers overlay (/unipi:mcp-status)",
    defaults [
        ("up", "mcp.up"),
        ("k", "mcp.up"),
        ("down", "mcp.down"),
        ("j", "mcp.down"),
        ("home", "mcp.top"),
        ("g", "mcp.top"),
        ("end", "mcp.bottom"),
        ("G", "mcp.bottom"),
        ("enter", "mcp.restart"),
        ("r", "mcp.restart"),
        ("s", "mcp.stop"),
        ("esc", "mcp.close"),
        ("q", "mcp.close"),
    ],
    actions {
        Up => "mcp.up", "Select the server above";
        Down => "mcp.down", "Select the server below";
        Top => "mcp.top", "Select the first server";
        Bottom => "mcp.bottom", "Select the last server";
        Restart => "mcp.restart", "Restart the selected server";
        Stop => "mcp.stop", "Stop the selected server";
        Close => "mcp.close", "Close the overlay";
    }
}

/// What the overlay reads and acts on.
pub(crate) trait McpActions: Send + Sync {
    /// The servers' rows and the config problems, from memory.
    fn rows(&self) -> (Vec<McpServerRow>, Vec<String>);
    /// Starts restarting / stopping server `name` in the background.
    fn restart(&self, name: &str);
    fn stop(&self, name: &str);
    /// What the last finished action did, taken once.
    fn take_notice(&self) -> Option<String>;
}

pub(crate) struct McpView {
    model: McpStatusModel,
    keys: KeyTable<McpAction>,
    port: Arc<dyn McpActions>,
}

impl McpView {
    pub(crate) fn new(port: Arc<dyn McpActions>, keymap: &Keymap) -> Self {
        let keys = KeyTable::<McpAction>::from_keymap(keymap);
        let hint = keys.hint_line(&[
            (&[McpAction::Up, McpAction::Down], "select"),
            (&[McpAction::Restart], "restart"),
            (&[McpAction::Stop], "stop"),
            (&[McpAction::Close], "close"),
        ]);
        let (servers, config_errors) = port.rows();
        McpView {
            model: McpStatusModel {
                servers,
                selected: 0,
                config_errors,
                notice: None,
                keys: Some(hint),
            },
            keys,
            port,
        }
    }

    /// New rows (the servers changed); the selection stays on the same server when it is still
    /// listed.
    pub(crate) fn set_servers(&mut self, servers: Vec<McpServerRow>, config_errors: Vec<String>) {
        let selected_name = self.selected_name().map(str::to_owned);
        self.model.selected = selected_name
            .and_then(|name| servers.iter().position(|server| server.name == name))
            .unwrap_or(0)
            .min(servers.len().saturating_sub(1));
        self.model.servers = servers;
        self.model.config_errors = config_errors;
    }

    #[cfg(test)]
    pub(crate) fn model(&self) -> &McpStatusModel {
        &self.model
    }

    fn selected_name(&self) -> Option<&str> {
        self.model
            .servers
            .get(self.model.selected)
            .map(|server| server.name.as_str())
    }
}

impl View for McpView {
    fn title(&self) -> &str {
        "the MCP servers overlay"
    }

    fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        render(&self.model, theme, area, buf);
    }

    fn handle_key(&mut self, key: &KeyEvent) -> ViewAction {
        let last = self.model.servers.len().saturating_sub(1);
        let Some(action) = self.keys.action(key) else {
            return ViewAction::Unhandled;
        };
        match action {
            McpAction::Close => return ViewAction::Close,
            McpAction::Up => self.model.selected = self.model.selected.saturating_sub(1),
            McpAction::Down => self.model.selected = (self.model.selected + 1).min(last),
            McpAction::Top => self.model.selected = 0,
            McpAction::Bottom => self.model.selected = last,
            McpAction::Restart => {
                if let Some(name) = self.selected_name().map(str::to_owned) {
                    self.model.notice = Some(format!("Restarting `{name}`…"));
                    self.port.restart(&name);
                }
            }
            McpAction::Stop => {
                if let Some(name) = self.selected_name().map(str::to_owned) {
                    self.model.notice = Some(format!("Stopping `{name}`…"));
                    self.port.stop(&name);
                }
            }
        }
        ViewAction::Consumed
    }

    fn refresh(&mut self, _context: &RefreshContext<'_>) {
        let (servers, errors) = self.port.rows();
        self.set_servers(servers, errors);
        if let Some(notice) = self.port.take_notice() {
            self.model.notice = Some(notice);
        }
    }

    fn close_hint(&self) -> String {
        self.keys.close_key(McpAction::Close)
    }

    fn key_table(&self) -> Option<&'static KeyTableSpec> {
        Some(&MCP_KEYS)
    }
}

/// The overlay's port in the workbench: the MCP module, and the outcome of the last action.
#[derive(Clone)]
pub(crate) struct McpPort {
    module: McpModule,
    notice: Arc<Mutex<Option<String>>>,
}

impl McpPort {
    pub(crate) fn new(module: McpModule) -> Self {
        McpPort {
            module,
            notice: Arc::new(Mutex::new(None)),
        }
    }

    /// Runs `action` on the module in the background, then records its notice and signals the
    /// change (which refreshes the overlay).
    fn spawn<F>(&self, action: F)
    where
        F: FnOnce(McpModule) -> futures_util::future::BoxFuture<'static, String> + Send + 'static,
    {
        let module = self.module.clone();
        let notice = Arc::clone(&self.notice);
        tokio::spawn(async move {
            let text = action(module.clone()).await;
            *crate::sys::lock(&notice) = Some(text);
            module.changed();
        });
    }
}

impl McpActions for McpPort {
    fn rows(&self) -> (Vec<McpServerRow>, Vec<String>) {
        let status = self.module.status();
        (server_rows(&status), status.config_errors.clone())
    }

    fn restart(&self, name: &str) {
        let name = name.to_owned();
        self.spawn(move |module| {
            Box::pin(async move {
                let done = format!(
                    "Restarted `{name}`: once it runs, its tools are active again in every \
                     connected Pi."
                );
                outcome(module.restart(&name).await, "restart", &name, done)
            })
        });
    }

    fn stop(&self, name: &str) {
        let name = name.to_owned();
        self.spawn(move |module| {
            Box::pin(async move {
                let done = format!(
                    "Stopped `{name}`: its tools were withdrawn from every Pi's active tools \
                     (Pi keeps them registered, inactive, until it restarts)."
                );
                outcome(module.stop(&name).await, "stop", &name, done)
            })
        });
    }

    fn take_notice(&self) -> Option<String> {
        crate::sys::lock(&self.notice).take()
    }
}

/// The notice after a server action: `done`, or why `verb`ing `name` failed.
fn outcome(result: anyhow::Result<()>, verb: &str, name: &str, done: String) -> String {
    match result {
        Ok(()) => done,
        Err(err) => format!("Could not {verb} `{name}`: {err:#}"),
    }
}

/// The overlay's rows from the module's status. Agents: those that called the server, then —
/// when its tools are declared — every other connected Pi (each one has them).
pub(crate) fn server_rows(status: &McpStatus) -> Vec<McpServerRow> {
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

/// `path` with the home directory written as `~`.
fn tilde(path: &Path, home: Option<&Path>) -> String {
    match home.and_then(|home| path.strip_prefix(home).ok()) {
        Some(rest) => format!("~/{}", rest.display()),
        None => path.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use crossterm::event::KeyCode;

    use super::*;
    use crate::bridge::AgentId;
    use crate::mcp::manager::{McpToolInfo, ServerSnapshot};
    use crate::mcp::module::{Clash, ClashWith, ServerView};
    use crate::views::test_keys::key;

    /// A port listing fixed rows and recording the actions asked of it.
    #[derive(Default)]
    struct Recorder {
        rows: Mutex<Vec<McpServerRow>>,
        actions: Mutex<Vec<String>>,
        notice: Mutex<Option<String>>,
    }

    impl McpActions for Recorder {
        fn rows(&self) -> (Vec<McpServerRow>, Vec<String>) {
            (self.rows.lock().unwrap().clone(), Vec::new())
        }
        fn restart(&self, name: &str) {
            self.actions.lock().unwrap().push(format!("restart {name}"));
        }
        fn stop(&self, name: &str) {
            self.actions.lock().unwrap().push(format!("stop {name}"));
        }
        fn take_notice(&self) -> Option<String> {
            self.notice.lock().unwrap().take()
        }
    }

    impl Recorder {
        fn take(&self) -> Vec<String> {
            std::mem::take(&mut *self.actions.lock().unwrap())
        }
    }

    fn make_rows(names: &[&str]) -> Vec<McpServerRow> {
        names
            .iter()
            .map(|name| McpServerRow {
                name: (*name).to_owned(),
                state: Some(ServerState::Running),
                ..McpServerRow::default()
            })
            .collect()
    }

    fn make_port(names: &[&str]) -> Arc<Recorder> {
        let port = Arc::new(Recorder::default());
        *port.rows.lock().unwrap() = make_rows(names);
        port
    }

    #[test]
    fn keys_select_and_hand_actions_on_the_selected_server_to_the_port() {
        let port = make_port(&["a", "b", "c"]);
        let mut view = McpView::new(port.clone(), &Keymap::defaults());
        let steps: Vec<(KeyCode, ViewAction, Vec<&str>)> = vec![
            (KeyCode::Enter, ViewAction::Consumed, vec!["restart a"]),
            (KeyCode::Down, ViewAction::Consumed, vec![]),
            (KeyCode::Char('s'), ViewAction::Consumed, vec!["stop b"]),
            (KeyCode::Char('G'), ViewAction::Consumed, vec![]),
            (KeyCode::Down, ViewAction::Consumed, vec![]),
            (KeyCode::Char('r'), ViewAction::Consumed, vec!["restart c"]),
            (KeyCode::Char('k'), ViewAction::Consumed, vec![]),
            (KeyCode::Char('x'), ViewAction::Unhandled, vec![]),
            (KeyCode::Esc, ViewAction::Close, vec![]),
        ];
        for (code, want_action, want) in steps {
            assert_eq!(view.handle_key(&key(code)), want_action, "{code:?}");
            assert_eq!(port.take(), want, "{code:?}");
        }
        assert_eq!(view.model().selected, 1);
        assert_eq!(view.model().notice.as_deref(), Some("Restarting `c`…"));
        assert_eq!(
            view.model().keys.as_deref(),
            Some("↑↓ select · Enter restart · s stop · Esc close")
        );
        // The outcome arrives with the next refresh.
        *port.notice.lock().unwrap() = Some("Restarted `c`".to_owned());
        view.refresh(&RefreshContext {
            pi: &unipi_widgets::footer::FooterData::default(),
        });
        assert_eq!(view.model().notice.as_deref(), Some("Restarted `c`"));
    }

    #[test]
    fn new_rows_keep_the_selection_on_the_same_server() {
        let mut view = McpView::new(make_port(&["a", "b", "c"]), &Keymap::defaults());
        view.handle_key(&key(KeyCode::Down));
        view.set_servers(make_rows(&["0", "a", "b"]), vec![]);
        assert_eq!(view.model().selected, 2);
        view.set_servers(make_rows(&["x"]), vec!["bad file".into()]);
        assert_eq!(view.model().selected, 0);
        assert_eq!(view.model().config_errors, vec!["bad file".to_owned()]);
        let port = make_port(&[]);
        let mut empty = McpView::new(port.clone(), &Keymap::defaults());
        assert_eq!(empty.handle_key(&key(KeyCode::Enter)), ViewAction::Consumed);
        assert!(port.take().is_empty());
    }

    pub(crate) fn make_server_view(
        name: &str,
        status: ServerStatus,
        declared: bool,
        callers: &[&str],
    ) -> ServerView {
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
        let mut clashed = make_server_view("c", ServerStatus::Stopped, false, &[]);
        let mut disabled = make_server_view("e", ServerStatus::Stopped, false, &[]);
        disabled.enabled = false;
        clashed.clashes = vec![Clash {
            name: "mcp__c__echo".into(),
            with: ClashWith::Server("b".into()),
        }];
        let status = McpStatus {
            servers: vec![
                make_server_view("a", ServerStatus::Running, true, &["helper:h1"]),
                make_server_view("b", ServerStatus::Starting, false, &[]),
                clashed,
                make_server_view("d", ServerStatus::Error, false, &[]),
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
