//! MCP in the workbench's own widgets: the `/unipi:mcp-status` overlay and the footer segment.
//!
//! The overlay is a centred box with one block per configured server — state, tool count, the
//! file it came from, what it runs, which agents use it, its last error — and, for the selected
//! server only, the tail of its stderr (every tail at once would push the list off screen). The
//! selected block is always scrolled into view; the keys line at the bottom says what Enter, `s`
//! and Esc do, and a notice line reports what the last action did (in words that are true about
//! Pi: a stopped server's tools leave every Pi's active tools, but Pi keeps them registered until
//! it restarts). The segment is `MCP 2/3 · 14 tools`, in the error colour when a server failed.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Widget};

use crate::footer::{Align, Form, Role, Segment, priority};
use crate::text::{truncate_end, width};
use crate::theme::Theme;

/// The box's title.
pub const TITLE: &str = "MCP servers";
/// The footer segment's id and config group (`{"groups": {"mcp": {"show": false}}}` hides it).
pub const SEGMENT_ID: &str = "servers_active";
pub const SEGMENT_GROUP: &str = "mcp";
/// The keys line.
pub const KEYS: &str = "↑↓ select · Enter/r restart · s stop · Esc close";

/// A server's state as the overlay shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerState {
    Starting,
    Running,
    Stopped,
    Error,
    /// Its tool names clashed; none of its tools are declared.
    Clash,
    /// Turned off in its config file; never started.
    Disabled,
}

impl ServerState {
    pub fn icon(self) -> &'static str {
        match self {
            ServerState::Starting => "◐",
            ServerState::Running => "●",
            ServerState::Stopped | ServerState::Disabled => "○",
            ServerState::Error | ServerState::Clash => "✗",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            ServerState::Starting => "starting",
            ServerState::Running => "running",
            ServerState::Stopped => "stopped",
            ServerState::Error => "error",
            ServerState::Clash => "name clash",
            ServerState::Disabled => "disabled",
        }
    }

    fn style(self, theme: &Theme) -> Style {
        match self {
            ServerState::Starting => theme.status_working,
            ServerState::Running => theme.status_done,
            ServerState::Stopped | ServerState::Disabled => theme.muted,
            ServerState::Error | ServerState::Clash => theme.error,
        }
    }
}

/// One server's block.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct McpServerRow {
    pub name: String,
    pub state: Option<ServerState>,
    /// Tools it offers (after its enabled/disabled filters).
    pub tools: usize,
    /// Whether those tools are declared to Pi now.
    pub declared: bool,
    /// The config file it came from.
    pub source: String,
    /// `npx -y …` or the URL.
    pub target: String,
    pub pid: Option<u32>,
    pub restarts: u32,
    /// Agents that called it, or had its tools declared (`main (called)`, `helper:h1`).
    pub agents: Vec<String>,
    pub error: Option<String>,
    /// Each clashing name, as a sentence.
    pub clashes: Vec<String>,
    pub stderr_tail: String,
}

/// What the overlay shows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct McpStatusModel {
    pub servers: Vec<McpServerRow>,
    pub selected: usize,
    /// Problems in the config files.
    pub config_errors: Vec<String>,
    /// What the last action did.
    pub notice: Option<String>,
    /// The keys line built from the overlay's key table; `None` shows the default keys.
    pub keys: Option<String>,
}

/// Lines of stderr shown for the selected server.
pub const STDERR_LINES: usize = 6;

/// Draws the overlay centred on `screen`.
pub fn render(model: &McpStatusModel, theme: &Theme, screen: Rect, buf: &mut Buffer) {
    let text_width = MAX_TEXT_WIDTH.min(usize::from(screen.width).saturating_sub(4));
    let (lines, selected) = content_lines(model, text_width, theme);
    let footer = footer_lines(model, text_width, theme);
    let box_width = (lines
        .iter()
        .chain(&footer)
        .map(Line::width)
        .max()
        .unwrap_or(0)
        .max(width(TITLE) + 2)
        + 4)
    .min(usize::from(screen.width));
    let box_height = (lines.len() + footer.len() + 2).min(usize::from(screen.height));
    // Room for the border, the pinned notice and keys, and at least one row of servers.
    if box_width < 6 || box_height < footer.len() + 3 {
        return;
    }
    let area = Rect {
        x: screen.x + (screen.width - box_width as u16) / 2,
        y: screen.y + (screen.height - box_height as u16) / 2,
        width: box_width as u16,
        height: box_height as u16,
    };
    Clear.render(area, buf);
    let visible = box_height - 2 - footer.len();
    let first = first_visible(selected, lines.len(), visible);
    // The notice and keys stay put below the scrolling list, so the marker is drawn here.
    let text_area = crate::overlay::frame(TITLE, "", 0, 0, theme, area, buf);
    for (row, line) in lines.iter().skip(first).take(visible).enumerate() {
        buf.set_line(text_area.x, text_area.y + row as u16, line, text_area.width);
    }
    for (row, line) in footer.iter().enumerate() {
        let y = text_area.y + (visible + row) as u16;
        buf.set_line(text_area.x, y, line, text_area.width);
    }
    if lines.len() > visible {
        let marker = format!(
            " {}-{}/{} ",
            first + 1,
            (first + visible).min(lines.len()),
            lines.len()
        );
        let x = (area.x + area.width).saturating_sub(width(&marker) as u16 + 1);
        buf.set_string(x, area.y + area.height - 1, marker, theme.overlay_border);
    }
}

/// The footer segment: `MCP 2/3 · 14 tools` (running / configured, tools declared), in the error
/// colour when a server failed; `None` when no server is configured. Narrows to `MCP 2/3`.
pub fn mcp_segment(
    running: usize,
    configured: usize,
    tools: usize,
    failed: usize,
) -> Option<Segment> {
    if configured == 0 {
        return None;
    }
    let role = if failed > 0 {
        Role::Error
    } else if running == configured {
        Role::Accent
    } else {
        Role::Muted
    };
    let head = format!("MCP {running}/{configured}");
    let noun = if tools == 1 { "tool" } else { "tools" };
    let long = Form::new(head.clone(), role).then(format!(" · {tools} {noun}"), Role::Muted);
    Some(
        Segment::new(SEGMENT_ID, PRESENCE_PRIORITY, Align::Right, long)
            .in_group(SEGMENT_GROUP)
            .detail(DETAIL_PRIORITY)
            .or(Form::new(head, role)),
    )
}

/// Below tasks and helpers: servers matter while something is wrong with them.
const PRESENCE_PRIORITY: u8 = priority::MODULE_HIGH - 5;
const DETAIL_PRIORITY: u8 = priority::MODULE_LOW + 4;
/// Widest the text gets; long errors wrap.
const MAX_TEXT_WIDTH: usize = 92;
const LABEL_WIDTH: usize = 8;
/// Clashing names listed per server; a server-name clash names every tool, the rest are counted.
const MAX_CLASH_LINES: usize = 2;

/// The first row to show so the selected block (from `selected.0`, `selected.1` rows) is in view.
fn first_visible(selected: (usize, usize), total: usize, visible: usize) -> usize {
    let (start, len) = selected;
    let end = start + len;
    end.saturating_sub(visible)
        .min(start)
        .min(total.saturating_sub(visible))
}

/// Content rows, and where the selected server's block is (first row, row count).
fn content_lines(
    model: &McpStatusModel,
    max: usize,
    theme: &Theme,
) -> (Vec<Line<'static>>, (usize, usize)) {
    let mut lines: Vec<Line<'static>> = Vec::new();
    let mut selected = (0, 0);
    if model.servers.is_empty() {
        lines.push(Line::styled(
            truncate_end(
                "No MCP servers configured (~/.unipi/config/mcp.json, .pi/mcp.json, …).",
                max,
            ),
            theme.muted,
        ));
    }
    let name_width = model
        .servers
        .iter()
        .map(|server| width(&server.name))
        .max()
        .unwrap_or(0)
        .min(max / 3);
    for (index, server) in model.servers.iter().enumerate() {
        let start = lines.len();
        let is_selected = index == model.selected;
        server_lines(server, is_selected, name_width, max, theme, &mut lines);
        if is_selected {
            selected = (start, lines.len() - start);
        }
    }
    if !model.config_errors.is_empty() {
        lines.push(Line::default());
        lines.push(Line::styled("Config problems", theme.overlay_title));
        for error in &model.config_errors {
            for row in wrap(error, max.saturating_sub(2)) {
                lines.push(Line::styled(format!("  {row}"), theme.warning));
            }
        }
    }
    (lines, selected)
}

/// The rows pinned under the list: a blank, the last action's notice, the keys.
fn footer_lines(model: &McpStatusModel, max: usize, theme: &Theme) -> Vec<Line<'static>> {
    let mut lines = vec![Line::default()];
    if let Some(notice) = &model.notice {
        for row in wrap(notice, max) {
            lines.push(Line::styled(row, theme.accent));
        }
    }
    let keys = model.keys.as_deref().unwrap_or(KEYS);
    lines.push(Line::styled(truncate_end(keys, max), theme.overlay_key));
    lines
}

fn server_lines(
    server: &McpServerRow,
    is_selected: bool,
    name_width: usize,
    max: usize,
    theme: &Theme,
    lines: &mut Vec<Line<'static>>,
) {
    lines.push(head_line(server, is_selected, name_width, max, theme));
    let mut field = |label: &str, text: &str, style: Style| {
        field_lines(label, text, style, max, theme, lines);
    };
    field("source", &server.source, Style::new());
    field("runs", &server.target, Style::new());
    let agents = if server.agents.is_empty() {
        "none yet".to_owned()
    } else {
        server.agents.join(", ")
    };
    field("agents", &agents, Style::new());
    for clash in server.clashes.iter().take(MAX_CLASH_LINES) {
        field("clash", clash, theme.error);
    }
    if server.clashes.len() > MAX_CLASH_LINES {
        let more = server.clashes.len() - MAX_CLASH_LINES;
        field(
            "",
            &format!("… and {more} more clashing names"),
            theme.error,
        );
    }
    if let Some(error) = &server.error {
        field("error", error, theme.error);
    }
    if is_selected && !server.stderr_tail.trim().is_empty() {
        stderr_lines(&server.stderr_tail, max, theme, lines);
    }
}

/// The server's first row: marker, name, state icon and its facts (state, tools, pid, restarts).
fn head_line(
    server: &McpServerRow,
    is_selected: bool,
    name_width: usize,
    max: usize,
    theme: &Theme,
) -> Line<'static> {
    let state = server.state.unwrap_or(ServerState::Stopped);
    let marker = if is_selected { "▶ " } else { "  " };
    let name = truncate_end(&server.name, name_width);
    let pad = " ".repeat(name_width.saturating_sub(width(&name)));
    let name_style = if is_selected {
        theme.overlay_title.add_modifier(Modifier::REVERSED)
    } else {
        theme.overlay_title
    };
    let head_used = width(marker) + name_width + 3;
    Line::from(vec![
        Span::styled(marker.to_owned(), theme.accent),
        Span::styled(format!("{name}{pad}"), name_style),
        Span::raw(" "),
        Span::styled(state.icon().to_owned(), state.style(theme)),
        Span::raw(" "),
        Span::styled(
            truncate_end(&facts(server, state), max.saturating_sub(head_used)),
            state.style(theme),
        ),
    ])
}

/// `state · tools · pid · restarts`, as far as they are known.
fn facts(server: &McpServerRow, state: ServerState) -> String {
    let mut facts = vec![state.label().to_owned()];
    let noun = if server.tools == 1 { "tool" } else { "tools" };
    match (state, server.declared) {
        (ServerState::Running, true) => facts.push(format!("{} {noun} declared", server.tools)),
        (ServerState::Running, false) => {
            facts.push(format!("{} {noun}, not declared", server.tools))
        }
        (ServerState::Stopped, _) => {
            facts.push("tools withdrawn (Pi keeps them registered until it restarts)".to_owned())
        }
        _ => {}
    }
    if let Some(pid) = server.pid {
        facts.push(format!("pid {pid}"));
    }
    if server.restarts > 0 {
        facts.push(format!("{} restarts", server.restarts));
    }
    facts.join(" · ")
}

/// One labelled field under the head, wrapped; the label on its first row only.
fn field_lines(
    label: &str,
    text: &str,
    style: Style,
    max: usize,
    theme: &Theme,
    lines: &mut Vec<Line<'static>>,
) {
    let room = max.saturating_sub(4 + LABEL_WIDTH);
    for (row, part) in wrap(text, room).into_iter().enumerate() {
        let label = if row == 0 { label } else { "" };
        lines.push(Line::from(vec![
            Span::raw("    "),
            Span::styled(format!("{label:<LABEL_WIDTH$}"), theme.muted),
            Span::styled(part, style),
        ]));
    }
}

/// The last [`STDERR_LINES`] of the server's stderr, each cut to the width.
fn stderr_lines(stderr_tail: &str, max: usize, theme: &Theme, lines: &mut Vec<Line<'static>>) {
    let tail: Vec<&str> = stderr_tail.trim_end().lines().collect();
    let shown = &tail[tail.len().saturating_sub(STDERR_LINES)..];
    for (row, line) in shown.iter().enumerate() {
        let label = if row == 0 { "stderr" } else { "" };
        lines.push(Line::from(vec![
            Span::raw("    "),
            Span::styled(format!("{label:<LABEL_WIDTH$}"), theme.muted),
            Span::styled(
                truncate_end(line, max.saturating_sub(4 + LABEL_WIDTH)),
                theme.muted,
            ),
        ]));
    }
}

/// `text` in rows of at most `max` columns, broken at spaces where there are any.
fn wrap(text: &str, max: usize) -> Vec<String> {
    let max = max.max(1);
    let mut rows = Vec::new();
    for source in text.lines() {
        let mut row = String::new();
        for word in source.split(' ') {
            let candidate = if row.is_empty() {
                word.to_owned()
            } else {
                format!("{row} {word}")
            };
            if width(&candidate) <= max {
                row = candidate;
                continue;
            }
            if !row.is_empty() {
                rows.push(std::mem::take(&mut row));
            }
            let mut rest = word.to_owned();
            while width(&rest) > max {
                let cut: String = rest.chars().take(max).collect();
                rest = rest.chars().skip(cut.chars().count()).collect();
                rows.push(cut);
            }
            row = rest;
        }
        rows.push(row);
    }
    if rows.is_empty() {
        rows.push(String::new());
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::footer::render_segments;
    use crate::test_support::render_to_string;

    fn make_model() -> McpStatusModel {
        McpStatusModel {
            servers: vec![
                McpServerRow {
                    name: "every-thing".into(),
                    state: Some(ServerState::Running),
                    tools: 12,
                    declared: true,
                    source: "~/.unipi/config/mcp.json".into(),
                    target: "node .test-deps/mcp/node_modules/.bin/mcp-server-everything".into(),
                    pid: Some(4242),
                    agents: vec!["main (called)".into(), "helper:h1 (called)".into()],
                    ..McpServerRow::default()
                },
                McpServerRow {
                    name: "every_thing".into(),
                    state: Some(ServerState::Clash),
                    tools: 12,
                    source: "~/.unipi/config/mcp.json".into(),
                    target: "npx -y @modelcontextprotocol/server-everything".into(),
                    clashes: ["echo", "get_sum", "get_env"]
                        .iter()
                        .map(|tool| {
                            format!(
                                "`mcp__every_thing__{tool}` is already bridged from MCP server \
                                 `every-thing`"
                            )
                        })
                        .collect(),
                    ..McpServerRow::default()
                },
                McpServerRow {
                    name: "broken".into(),
                    state: Some(ServerState::Error),
                    source: "/work/.pi/mcp.json".into(),
                    target: "node crash.js".into(),
                    error: Some("the server exited during start-up (status 1)".into()),
                    stderr_tail:
                        "starting\nError: cannot find module 'x'\n    at load (crash.js:1)\n".into(),
                    restarts: 2,
                    ..McpServerRow::default()
                },
                McpServerRow {
                    name: "files".into(),
                    state: Some(ServerState::Stopped),
                    tools: 14,
                    source: "~/.unipi/config/mcp.json".into(),
                    target: "mcp-server-filesystem /work".into(),
                    ..McpServerRow::default()
                },
            ],
            selected: 2,
            config_errors: vec![
                "~/.pi/agent/mcp.json:4: MCP server `x`: `args` must be an array of strings".into(),
            ],
            notice: Some("Restarting `broken`…".into()),
            keys: None,
        }
    }

    #[test]
    fn overlay_shows_every_server_and_the_selected_ones_stderr() {
        let model = make_model();
        let screen = render_to_string(100, 34, |area, buf| {
            render(&model, &Theme::plain(), area, buf)
        });
        crate::assert_ui_snapshot!("mcp_status_overlay", screen);
    }

    #[test]
    fn the_selected_server_is_scrolled_into_view_on_a_small_screen() {
        let mut model = make_model();
        model.selected = 3;
        let screen = render_to_string(70, 12, |area, buf| {
            render(&model, &Theme::plain(), area, buf)
        });
        assert!(screen.contains("▶ files"), "{screen}");
        assert!(
            !screen.contains("12 tools declared"),
            "the first server scrolled away:\n{screen}"
        );
        crate::assert_ui_snapshot!("mcp_status_overlay_scrolled", screen);
    }

    #[test]
    fn no_servers_says_where_they_are_configured() {
        let screen = render_to_string(90, 8, |area, buf| {
            render(&McpStatusModel::default(), &Theme::plain(), area, buf);
        });
        assert!(screen.contains("No MCP servers configured"), "{screen}");
    }

    #[test]
    fn segment_forms_and_colour() {
        let theme = Theme::default();
        let cases = [
            ((2, 3, 14, 0), Some(("MCP 2/3 · 14 tools", Role::Muted))),
            ((3, 3, 1, 0), Some(("MCP 3/3 · 1 tool", Role::Accent))),
            ((1, 2, 5, 1), Some(("MCP 1/2 · 5 tools", Role::Error))),
            ((0, 0, 0, 0), None),
        ];
        for ((running, configured, tools, failed), want) in cases {
            let segment = mcp_segment(running, configured, tools, failed);
            let got = segment
                .as_ref()
                .map(|segment| (segment.forms[0].text(), segment.forms[0].pieces[0].role));
            assert_eq!(
                got,
                want.map(|(text, role)| (text.to_owned(), role)),
                "{running}/{configured}"
            );
        }
        let segment = mcp_segment(1, 2, 5, 1);
        let wide = render_to_string(40, 1, |area, buf| {
            render_segments(segment.as_slice(), &theme, area, buf);
        });
        let narrow = render_to_string(12, 1, |area, buf| {
            render_segments(segment.as_slice(), &theme, area, buf);
        });
        crate::assert_ui_snapshot!("mcp_segment", format!("{wide}\n{narrow}"));
        assert!(
            narrow.contains("MCP 1/2") && !narrow.contains("tools"),
            "{narrow}"
        );
    }

    #[test]
    fn wrap_table() {
        let cases = [
            ("a b c", 3, vec!["a b", "c"]),
            ("abcdef", 4, vec!["abcd", "ef"]),
            ("one\ntwo", 10, vec!["one", "two"]),
            ("", 5, vec![""]),
        ];
        for (text, max, want) in cases {
            assert_eq!(wrap(text, max), want, "{text:?}");
        }
    }
}
