//! The report's words and exit rule, and the `/unipi:doctor` overlay drawn at 80x24 and 120x40.

use std::sync::Arc;

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use unipi_widgets::theme::Theme;

use super::{DoctorRow, DoctorStatus, is_broken, row, to_json, to_text};
use crate::capability::{Ui, UiRequest};
use crate::config::keymap::Keymap;
use crate::views::View;

/// A report as a Unipi user's machine gives it: a broken config file, a server that will not
/// start, no desktop bus.
fn report() -> Vec<DoctorRow> {
    vec![
        row(
            DoctorStatus::Ok,
            "Pi",
            "/home/ada/.local/bin/pi (on PATH) · 1.6.0, the current line (1.x)",
            None,
        ),
        row(
            DoctorStatus::Ok,
            "Node",
            "/home/ada/.volta/tools/image/node/24.1.0/bin/node · 24.1.0 (this Pi needs >= 22.19.0)",
            None,
        ),
        row(
            DoctorStatus::Ok,
            "bridge",
            "loaded in this Pi (this command came through it)",
            None,
        ),
        row(
            DoctorStatus::Ok,
            "config",
            "/home/ada/.unipi/config/notify/config.json read",
            None,
        ),
        row(
            DoctorStatus::Broken,
            "config",
            "/work/api/.unipi/config/background-tasks.json:2:21: expected a whole number of bytes \
             for `maxOutputBytes`, found a string",
            Some(
                "edit /work/api/.unipi/config/background-tasks.json:2:21 (the default is used until then)",
            ),
        ),
        row(
            DoctorStatus::Ok,
            "MCP files",
            "/home/ada/.local/bin/mcp-server-filesystem /work/api started, 14 tools",
            None,
        ),
        row(
            DoctorStatus::Broken,
            "MCP github",
            "npx -y @modelcontextprotocol/server-github did not start: it exited with status 1: \
             GITHUB_PERSONAL_ACCESS_TOKEN is not set",
            Some(
                "run `npx -y @modelcontextprotocol/server-github` by hand to see why, or set \"enabled\": false for it in /home/ada/.unipi/config/mcp.json",
            ),
        ),
        row(
            DoctorStatus::Warning,
            "D-Bus",
            "no D-Bus session bus: DBUS_SESSION_BUS_ADDRESS is not set",
            Some(
                "desktop notifications need a desktop session (or `dbus-launch`); the terminal, ntfy, Gotify and Telegram work without it",
            ),
        ),
        row(
            DoctorStatus::Ok,
            "keyboard",
            "the kitty keyboard protocol is in use",
            None,
        ),
        row(
            DoctorStatus::Ok,
            "clipboard",
            "copies go out as OSC 52 through tmux (set-clipboard on)",
            None,
        ),
        row(
            DoctorStatus::Ok,
            "colour",
            "24-bit colour (COLORTERM=truecolor)",
            None,
        ),
        row(
            DoctorStatus::Ok,
            "runtime dir",
            "/run/user/1000/unipi-tui · yours, mode 0700",
            None,
        ),
        row(
            DoctorStatus::Warning,
            "data dir",
            "/home/ada/.unipi/db is mode 0755: others can look in",
            Some(
                "chmod 700 /home/ada/.unipi/db (the workbench tightens it when it next writes there)",
            ),
        ),
    ]
}

fn screen(rows: Vec<DoctorRow>, width: u16, height: u16) -> String {
    let view = super::view::doctor_view(rows, &Keymap::defaults());
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal
        .draw(|frame| {
            let area = frame.area();
            view.render(area, frame.buffer_mut(), &Theme::plain());
        })
        .unwrap();
    terminal.backend().to_string()
}

#[test]
fn the_overlay_at_80x24_and_120x40() {
    let small = screen(report(), 80, 24);
    assert!(small.contains("unipi-tui doctor"), "{small}");
    assert!(small.contains("2 broken · 2 warnings · 9 ok"), "{small}");
    crate::assert_ui_snapshot!("doctor_overlay_80x24", small);
    let large = screen(report(), 120, 40);
    // Everything fits at 120x40: the last fix is on screen.
    assert!(large.contains("next writes there"), "{large}");
    crate::assert_ui_snapshot!("doctor_overlay_120x40", large);
}

#[test]
fn the_text_report_puts_each_fix_under_its_check_and_the_totals_last() {
    let text = to_text(&report());
    let lines: Vec<&str> = text.lines().collect();
    let github = lines
        .iter()
        .position(|line| line.starts_with("broken   MCP github"))
        .unwrap();
    assert!(
        lines[github + 1].trim_start().starts_with("fix: run `npx"),
        "{text}"
    );
    assert_eq!(lines.last(), Some(&"2 broken · 2 warnings · 9 ok"));
    let json = to_json(&report());
    assert_eq!(json["broken"], 2);
    assert_eq!(json["warnings"], 2);
    assert_eq!(json["checks"][6]["name"], "MCP github");
    assert_eq!(json["checks"][0]["fix"], serde_json::Value::Null);
}

#[test]
fn only_a_broken_check_fails_the_report() {
    let mut rows = report();
    assert!(is_broken(&rows));
    rows.retain(|row| row.status != DoctorStatus::Broken);
    assert!(!is_broken(&rows), "warnings alone exit 0");
}

#[test]
fn the_report_opens_as_an_overlay_where_there_is_a_screen() {
    let (ui, mut requests) = Ui::channel(Arc::new(Keymap::defaults()));
    super::capability::show(&ui, report());
    match requests.try_recv() {
        Ok(UiRequest::Open(view)) => {
            assert_eq!(view.title(), "the doctor's report");
        }
        _ => panic!("no view opened"),
    }
}
