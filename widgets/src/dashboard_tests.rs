use super::*;
use crate::info::{InfoPaths, ModuleInfo, ModuleState};
use crate::test_support::render_to_string;

fn group(id: &str, title: &str, rows: Vec<InfoRow>) -> DashboardTab {
    DashboardTab::Group(InfoGroup {
        id: id.to_owned(),
        title: title.to_owned(),
        rows,
    })
}

fn workbench() -> InfoModel {
    InfoModel {
        modules: vec![
            ModuleInfo {
                name: "info".to_owned(),
                state: ModuleState::Ready,
                tools: vec!["unipi_info".to_owned()],
                commands: vec!["/unipi:info".to_owned(), "/unipi:info-settings".to_owned()],
            },
            ModuleInfo {
                name: "tasks".to_owned(),
                state: ModuleState::Ready,
                tools: [
                    "task_start",
                    "task_status",
                    "task_output",
                    "task_stop",
                    "task_list",
                ]
                .map(str::to_owned)
                .to_vec(),
                commands: vec!["/unipi:tasks".to_owned()],
            },
            ModuleInfo {
                name: "helpers".to_owned(),
                state: ModuleState::Disabled,
                tools: vec![],
                commands: vec![],
            },
            ModuleInfo {
                name: "mcp".to_owned(),
                state: ModuleState::Error(
                    "cannot read /home/ada/.unipi/config/mcp/mcp-config.json: expected `,` or `}` \
                     at line 4 column 3"
                        .to_owned(),
                ),
                tools: vec![],
                commands: vec![],
            },
        ],
        pi_version: Some("1.6.0".to_owned()),
        bridge_protocol: "1".to_owned(),
        workbench_version: "0.1.0".to_owned(),
        paths: InfoPaths {
            config: Some("/home/ada/.unipi/config".to_owned()),
            database: Some("/home/ada/.unipi/db".to_owned()),
            logs: Some("/home/ada/.local/state/unipi-tui/unipi-tui.log".to_owned()),
            runtime: Some("/run/user/1000/unipi-tui-4f2a9c".to_owned()),
        },
        scroll: 0,
    }
}

fn model(active: usize) -> DashboardModel {
    DashboardModel {
        tabs: vec![
            group(
                "usage",
                "Usage",
                vec![
                    InfoRow::new("Today", "14.0k tokens · $0.04")
                        .detail("in 13.8k · out 242 · cache read 0 · cache write 0 · 11 calls"),
                    InfoRow::new("This week", "14.0k tokens · $0.04"),
                    InfoRow::new("This month", "1.2M tokens · $3.17"),
                    InfoRow::new("All time", "8.4M tokens · $21.50"),
                    InfoRow::new("Top model today", "scripted-record").detail("$0.04 · 14.0k tokens"),
                    InfoRow::new("Sessions", "42 sessions with usage"),
                    InfoRow::new("Read from", "/home/ada/.pi/agent/sessions"),
                ],
            ),
            group(
                "mcp",
                "MCP",
                vec![
                    InfoRow::new("Servers", "2 running of 3 configured · 1 failed"),
                    InfoRow::new("Tools", "9 bridged to Pi"),
                    InfoRow::new("fs", "running · 7 tools")
                        .detail("read_file, write_file, list_directory, search_files, move_file, get_file_info, create_directory"),
                    InfoRow::new("fetch", "running · 2 tools"),
                    InfoRow::new("broken", "error: exited with status 1 before answering"),
                ],
            ),
            DashboardTab::Workbench(workbench()),
            group("skills", "Skills", vec![]),
            group(
                "web",
                "Web",
                vec![InfoRow::new("Cache", "12 pages · 340 KiB")],
            ),
        ],
        active,
        scroll: 0,
    }
}

fn snapshot(model: &DashboardModel, width: u16, height: u16) -> String {
    render_to_string(width, height, |area, buf| {
        render_dashboard(
            model,
            "←→ tabs · r refresh · Esc close",
            &Theme::plain(),
            area,
            buf,
        );
    })
}

#[test]
fn usage_tab_at_80x24() {
    crate::assert_ui_snapshot!("dashboard_usage_80x24", snapshot(&model(0), 80, 24));
}

#[test]
fn mcp_tab_at_120x40() {
    crate::assert_ui_snapshot!("dashboard_mcp_120x40", snapshot(&model(1), 120, 40));
}

#[test]
fn workbench_tab_scrolls_at_80x24_and_fits_at_120x40() {
    let scrolled = DashboardModel {
        scroll: 3,
        ..model(2)
    };
    crate::assert_ui_snapshot!("dashboard_workbench_80x24", snapshot(&scrolled, 80, 24));
    crate::assert_ui_snapshot!("dashboard_workbench_120x40", snapshot(&model(2), 120, 40));
}

#[test]
fn an_empty_group_says_so_and_a_narrow_bar_keeps_the_active_tab() {
    let text = snapshot(&model(3), 80, 24);
    assert!(text.contains("Nothing to show."), "{text}");
    // 40 columns hold two or three tabs: the active one (the last) shows, with a ◀ before.
    let narrow = snapshot(&model(4), 40, 12);
    let bar = narrow.lines().nth(
        narrow
            .lines()
            .position(|line| line.contains("unipi-tui info"))
            .unwrap()
            + 1,
    );
    let bar = bar.unwrap();
    assert!(bar.contains("5 Web") && bar.contains('◀'), "{narrow}");
    assert!(!bar.contains("1 Usage"), "{narrow}");
}

#[test]
fn the_box_keeps_its_size_across_tabs_and_scrolling_is_bounded() {
    let screen = Rect::new(0, 0, 80, 24);
    let areas: Vec<Rect> = (0..5)
        .map(|active| dashboard_area(&model(active), screen))
        .collect();
    assert!(areas.windows(2).all(|pair| pair[0] == pair[1]), "{areas:?}");
    // The workbench page is the longest: it scrolls, the others fit.
    assert!(dashboard_max_scroll(&model(2), screen) > 0);
    assert_eq!(dashboard_max_scroll(&model(0), screen), 0);
    assert_eq!(
        dashboard_max_scroll(&model(9), screen),
        dashboard_max_scroll(&model(4), screen)
    );
}

#[test]
fn never_panics_on_any_small_screen() {
    let model = model(1);
    for width in 1..=40 {
        for height in 1..=14 {
            let text = snapshot(&model, width, height);
            assert_eq!(text.lines().count(), usize::from(height));
        }
    }
    let none = DashboardModel::default();
    assert!(snapshot(&none, 60, 10).contains("No groups to show."));
}
