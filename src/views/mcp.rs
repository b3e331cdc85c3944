//! The `/unipi:mcp-status` overlay view: the MCP servers as `unipi_widgets::mcp` draws them, a
//! selection, and the keys that act on the selected server (Enter or `r` restarts it, `s` stops
//! it; Esc or `q` closes). Acting is I/O, so the view only queues an [`McpRequest`] that the app
//! drains after the key (`App::carry_out_mcp_requests`) and answers with a notice; the app also
//! replaces the rows whenever the servers change, keeping the selection on the same server.

use std::any::Any;

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use unipi_widgets::mcp::{McpServerRow, McpStatusModel, render};
use unipi_widgets::theme::Theme;

use super::{View, ViewAction};

/// What the user asked for on a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpRequest {
    Restart(String),
    Stop(String),
}

pub struct McpView {
    model: McpStatusModel,
    requests: Vec<McpRequest>,
}

impl McpView {
    pub fn new(servers: Vec<McpServerRow>, config_errors: Vec<String>) -> Self {
        McpView {
            model: McpStatusModel {
                servers,
                selected: 0,
                config_errors,
                notice: None,
            },
            requests: Vec::new(),
        }
    }

    /// New rows (the servers changed); the selection stays on the same server when it is still
    /// listed.
    pub fn set_servers(&mut self, servers: Vec<McpServerRow>, config_errors: Vec<String>) {
        let selected_name = self.selected_name().map(str::to_owned);
        self.model.selected = selected_name
            .and_then(|name| servers.iter().position(|server| server.name == name))
            .unwrap_or(0)
            .min(servers.len().saturating_sub(1));
        self.model.servers = servers;
        self.model.config_errors = config_errors;
    }

    pub fn set_notice(&mut self, notice: impl Into<String>) {
        self.model.notice = Some(notice.into());
    }

    /// The requests queued since the last call.
    pub fn take_requests(&mut self) -> Vec<McpRequest> {
        std::mem::take(&mut self.requests)
    }

    pub fn model(&self) -> &McpStatusModel {
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
    fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        render(&self.model, theme, area, buf);
    }

    fn handle_key(&mut self, key: &KeyEvent) -> ViewAction {
        let last = self.model.servers.len().saturating_sub(1);
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => return ViewAction::Close,
            KeyCode::Up | KeyCode::Char('k') => {
                self.model.selected = self.model.selected.saturating_sub(1);
            }
            KeyCode::Down | KeyCode::Char('j') => {
                self.model.selected = (self.model.selected + 1).min(last);
            }
            KeyCode::Home | KeyCode::Char('g') => self.model.selected = 0,
            KeyCode::End | KeyCode::Char('G') => self.model.selected = last,
            KeyCode::Enter | KeyCode::Char('r') => {
                if let Some(name) = self.selected_name().map(str::to_owned) {
                    self.model.notice = Some(format!("Restarting `{name}`…"));
                    self.requests.push(McpRequest::Restart(name));
                }
            }
            KeyCode::Char('s') => {
                if let Some(name) = self.selected_name().map(str::to_owned) {
                    self.model.notice = Some(format!("Stopping `{name}`…"));
                    self.requests.push(McpRequest::Stop(name));
                }
            }
            _ => {}
        }
        ViewAction::Consumed
    }

    fn as_any_mut(&mut self) -> Option<&mut dyn Any> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use crossterm::event::KeyModifiers;
    use unipi_widgets::mcp::ServerState;

    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
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

    #[test]
    fn keys_select_and_queue_requests_for_the_selected_server() {
        let mut view = McpView::new(make_rows(&["a", "b", "c"]), vec![]);
        let steps: Vec<(KeyCode, ViewAction, Vec<McpRequest>)> = vec![
            (
                KeyCode::Enter,
                ViewAction::Consumed,
                vec![McpRequest::Restart("a".into())],
            ),
            (KeyCode::Down, ViewAction::Consumed, vec![]),
            (
                KeyCode::Char('s'),
                ViewAction::Consumed,
                vec![McpRequest::Stop("b".into())],
            ),
            (KeyCode::Char('G'), ViewAction::Consumed, vec![]),
            (KeyCode::Down, ViewAction::Consumed, vec![]),
            (
                KeyCode::Char('r'),
                ViewAction::Consumed,
                vec![McpRequest::Restart("c".into())],
            ),
            (KeyCode::Char('k'), ViewAction::Consumed, vec![]),
            (KeyCode::Char('x'), ViewAction::Consumed, vec![]),
            (KeyCode::Esc, ViewAction::Close, vec![]),
        ];
        for (code, want_action, want_requests) in steps {
            assert_eq!(view.handle_key(&key(code)), want_action, "{code:?}");
            assert_eq!(view.take_requests(), want_requests, "{code:?}");
        }
        assert_eq!(view.model().selected, 1);
        assert_eq!(view.model().notice.as_deref(), Some("Restarting `c`…"));
    }

    #[test]
    fn new_rows_keep_the_selection_on_the_same_server() {
        let mut view = McpView::new(make_rows(&["a", "b", "c"]), vec![]);
        view.handle_key(&key(KeyCode::Down));
        view.set_servers(make_rows(&["0", "a", "b"]), vec![]);
        assert_eq!(view.model().selected, 2);
        view.set_servers(make_rows(&["x"]), vec!["bad file".into()]);
        assert_eq!(view.model().selected, 0);
        assert_eq!(view.model().config_errors, vec!["bad file".to_owned()]);
        let mut empty = McpView::new(vec![], vec![]);
        assert_eq!(empty.handle_key(&key(KeyCode::Enter)), ViewAction::Consumed);
        assert!(empty.take_requests().is_empty());
    }
}
