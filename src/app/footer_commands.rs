//! The footer's commands, listed under a `footer` module of their own: `/unipi:footer [on|off]`
//! (shows or hides the footer and remembers it in the home `footer.json`; no argument toggles),
//! `/unipi:footer-settings` (the settings overlay: preset, separator, icons, second row, and
//! which modules' segments show) and `/unipi:footer-help` (what each segment means and whether
//! it shows now). Each change is written crash-safe into `~/.unipi/config/footer.json`, merged
//! key by key into what the file holds; the app takes it at the notice that follows.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use serde_json::{Value, json};
use unipi_widgets::footer::{FooterHelp, FooterSettings, HELP_TITLE, IconStyle, footer_help};

use crate::bridge::{Command, CommandCall, CommandReply, CommandSpec, Module, NotifyLevel};
use crate::capability::Capability;
use crate::capability::settings::{Save, Setting, SettingsHome, SettingsPage};
use crate::config::footer::{FOOTER_FILE, FooterConfig};
use crate::config::live::LiveConfig;
use crate::config::module_file::{ModuleConfig, read_json_object};
use crate::views::pager::{PagedModel, PagedView};

/// The module the footer's commands are listed under (no tools).
struct FooterModule;

impl Module for FooterModule {
    fn name(&self) -> &'static str {
        "footer"
    }
}

/// What the commands share: the followed config, where settings are saved, and the running
/// capabilities (their segments, for the guide).
#[derive(Clone)]
struct Footer {
    config: LiveConfig<FooterConfig>,
    home: SettingsHome,
    capabilities: Arc<Vec<Arc<dyn Capability>>>,
}

/// The footer's module and its three commands.
pub(crate) fn module(
    config: LiveConfig<FooterConfig>,
    home: SettingsHome,
    capabilities: &[Arc<dyn Capability>],
) -> (Arc<dyn Module>, Vec<Command>) {
    follow_saves(&config, &home);
    let footer = Footer {
        config,
        home,
        capabilities: Arc::new(capabilities.to_vec()),
    };
    let toggle = Command::new(
        CommandSpec::new(
            "unipi:footer",
            "Show or hide the workbench's footer: [on|off]",
        ),
        footer.clone(),
        Footer::toggle,
    );
    let settings = Command::new(
        CommandSpec::new(
            "unipi:footer-settings",
            "The footer's preset, separator, icons, second row and modules",
        ),
        footer.clone(),
        |footer, _| footer.open_settings(),
    );
    let help = Command::new(
        CommandSpec::new("unipi:footer-help", "What each footer segment means"),
        footer,
        |footer, _| async move { footer.help() },
    );
    (Arc::new(FooterModule), vec![toggle, settings, help])
}

impl Footer {
    /// `/unipi:footer [on|off]`.
    async fn toggle(self, call: CommandCall) -> CommandReply {
        let enabled = match call.args.trim() {
            "on" => true,
            "off" => false,
            "" => !self.config.get().enabled,
            other => {
                return CommandReply::Failed {
                    message: format!("/unipi:footer takes on or off, not {other:?}"),
                };
            }
        };
        let Some(home) = self.home.home.clone() else {
            return CommandReply::Failed {
                message: "no home directory to keep the footer setting in".to_owned(),
            };
        };
        let written =
            tokio::task::spawn_blocking(move || save(&home, json!({ "enabled": enabled }))).await;
        if let Err(message) = written
            .map_err(|err| format!("the save did not finish: {err}"))
            .and_then(|saved| saved.map_err(|err| format!("{err:#}")))
        {
            return CommandReply::Failed { message };
        }
        if self.config.reload().enabled != enabled {
            return CommandReply::Failed {
                message: format!(
                    "{} sets \"enabled\" and wins over the home file",
                    self.home.workspace.join(FOOTER_FILE).display()
                ),
            };
        }
        let message = if enabled {
            "Footer enabled"
        } else {
            "Footer disabled"
        };
        self.home.ui.notice(message);
        CommandReply::Notify {
            message: message.to_owned(),
            level: NotifyLevel::Info,
        }
    }

    /// `/unipi:footer-settings`: the overlay over the config as it is on disk.
    async fn open_settings(self) -> CommandReply {
        let save_here = |_: &FooterConfig| -> Save {
            Arc::new(|home: &Path, values: Value| {
                save(home, values)?;
                Ok("Saved. In force now.".to_owned())
            })
        };
        self.home.open_settings(&SETTINGS_PAGE, save_here).await
    }

    /// `/unipi:footer-help`: the guide, or its lines in words without a screen.
    fn help(&self) -> CommandReply {
        let settings = self.config.get().settings.clone();
        let segments: Vec<_> = self
            .capabilities
            .iter()
            .flat_map(|capability| capability.footer_segments())
            .collect();
        let help = footer_help(&settings, &segments);
        if self.home.ui.has_screen() {
            self.home
                .ui
                .open(PagedView::new(help, self.home.ui.keymap()));
            return CommandReply::Done;
        }
        let mut lines = vec![help.summary.clone()];
        lines.extend(help.lines.iter().map(|line| {
            let mark = if line.shown { "●" } else { "○" };
            format!("{mark} {}.{}: {}", line.group, line.id, line.description)
        }));
        CommandReply::Notify {
            message: lines.join("\n"),
            level: NotifyLevel::Info,
        }
    }
}

/// After each save of the overlay (its outcome is stored by then): the config is read again and
/// a notice says whether it changed. The notice is what makes the app take the new config and
/// refresh the overlay, which then shows the save's outcome.
fn follow_saves(config: &LiveConfig<FooterConfig>, home: &SettingsHome) {
    let (config, ui) = (config.clone(), home.ui.clone());
    let mut saves = home.changed.subscribe();
    tokio::spawn(async move {
        while saves.changed().await.is_ok() {
            let before = config.get();
            let after = config.reload();
            ui.notice(if before == after {
                "Footer settings: nothing changed"
            } else {
                "Footer settings in force"
            });
        }
    });
}

impl PagedModel for FooterHelp {
    fn title(&self) -> &str {
        HELP_TITLE
    }

    fn scroll_mut(&mut self) -> &mut usize {
        &mut self.scroll
    }

    fn max_scroll(&self, screen: ratatui::layout::Rect) -> usize {
        FooterHelp::max_scroll(self, screen)
    }

    fn render(
        &self,
        hint: &str,
        theme: &unipi_widgets::Theme,
        screen: ratatui::layout::Rect,
        buf: &mut ratatui::buffer::Buffer,
    ) {
        FooterHelp::render(self, hint, theme, screen, buf);
    }
}

/// The modules whose segments the overlay turns on and off as a group.
const MODULE_GROUPS: [(&str, &str); 7] = [
    (
        "workflow",
        "The running workflow step: command, tool level, time",
    ),
    ("kanboard", "The board: documents and tasks done"),
    ("ralph", "The running loop and its iteration"),
    ("tasks", "Background tasks running"),
    ("helpers", "Helpers running, their tokens and cost"),
    ("mcp", "MCP servers and their tools"),
    (
        "notify",
        "Notifications: the platforms of the last one and when it went",
    ),
];

const PRESETS: [&str; 6] = ["minimal", "compact", "ascii", "default", "full", "nerd"];
const SEPARATORS: [&str; 7] = [
    "bar",
    "powerline",
    "powerline-thin",
    "slash",
    "pipe",
    "dot",
    "ascii",
];
const ICONS: [&str; 5] = ["auto", "unicode", "nerd", "emoji", "text"];

/// `/unipi:footer-settings`.
static SETTINGS_PAGE: SettingsPage<FooterConfig> = SettingsPage {
    title: "Footer settings",
    file: FOOTER_FILE,
    what: "footer settings",
    load: FooterConfig::load,
    settings: page_settings,
    values: page_values,
};

fn page_settings() -> Vec<Setting> {
    use crate::capability::settings::Kind;
    let mut settings = vec![
        Setting::flag(
            "enabled",
            "Footer shown",
            "Off hides the footer row (/unipi:footer).",
        ),
        Setting::new(
            "preset",
            "Preset",
            Kind::Choice(&PRESETS),
            "How much it shows: minimal, compact (ascii: compact in plain ASCII), default, full \
             (nerd: full with Nerd Font icons). /unipi:footer-help lists each segment.",
        ),
        Setting::new(
            "separator",
            "Separator",
            Kind::Choice(&SEPARATORS),
            "What stands between segments; the powerline glyphs need a Nerd Font.",
        ),
        Setting::new(
            "iconStyle",
            "Icons",
            Kind::Choice(&ICONS),
            "auto: Nerd Font icons when the terminal is known to have them, else unicode.",
        ),
        Setting::flag(
            "overflowRow",
            "Second row",
            "What does not fit one row goes to a second one rather than away.",
        ),
    ];
    settings.extend(MODULE_GROUPS.iter().map(|(group, help)| {
        Setting::flag(
            &format!("groups.{group}.show"),
            &format!("Module: {group}"),
            help,
        )
    }));
    settings
}

/// The config's values under the overlay's keys.
fn page_values(config: &FooterConfig) -> Value {
    let settings: &FooterSettings = &config.settings;
    let look = settings.look;
    let groups: serde_json::Map<String, Value> = MODULE_GROUPS
        .iter()
        .map(|(group, _)| {
            let shown = settings.groups.get(*group).and_then(|g| g.show) != Some(false);
            ((*group).to_owned(), json!({ "show": shown }))
        })
        .collect();
    json!({
        "enabled": config.enabled,
        "preset": settings.preset.name(),
        "separator": look.separator.unwrap_or_default().name(),
        "iconStyle": look.icons.map_or("auto", IconStyle::name),
        "overflowRow": settings.overflow_row(),
        "groups": groups,
    })
}

/// Merges `values` into the home `footer.json`, object into object (a group's segment toggles
/// stay), and writes it crash-safe.
fn save(home: &Path, values: Value) -> anyhow::Result<()> {
    let path = home.join(FOOTER_FILE);
    let mut file = Value::Object(read_json_object(&path)?);
    merge(&mut file, values);
    crate::config::merge_json_file(&path, &file)
        .with_context(|| format!("saving the footer settings in {}", path.display()))
}

/// `value` into `into`, object into object, else replacing it.
fn merge(into: &mut Value, value: Value) {
    match (into, value) {
        (Value::Object(into), Value::Object(values)) => {
            for (key, value) in values {
                merge(into.entry(key).or_insert(Value::Null), value);
            }
        }
        (into, value) => *into = value,
    }
}

/// Names the overlay's choices use, checked against the widget's (a rename breaks this test,
/// not the overlay).
#[cfg(test)]
mod tests {
    use unipi_widgets::footer::{Preset, SeparatorStyle};

    use super::*;

    #[test]
    fn the_overlay_offers_every_preset_separator_and_icon_style() {
        for name in PRESETS {
            assert!(Preset::from_name(name).is_some(), "{name}");
        }
        assert_eq!(PRESETS.len(), Preset::ALL.len());
        for name in SEPARATORS {
            assert!(SeparatorStyle::from_name(name).is_some(), "{name}");
        }
        for name in &ICONS[1..] {
            assert!(IconStyle::from_name(name).is_some(), "{name}");
        }
    }

    /// A save merges into the file: other keys and a group's segment toggles stay, and what the
    /// overlay wrote reads back as the config.
    #[test]
    fn a_save_merges_into_the_home_file_and_reads_back() {
        let home = tempfile::tempdir().unwrap();
        let path = home.path().join(FOOTER_FILE);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(
            &path,
            r#"{"contextThresholds": {"warning": 50}, "groups": {"workflow": {"segments": {"sandbox_level": false}}}}"#,
        )
        .unwrap();
        let mut config = FooterConfig::default();
        config.settings.preset = Preset::Nerd;
        config.settings.look.separator = Some(SeparatorStyle::Slash);
        config.settings.look.overflow_row = Some(true);
        config
            .settings
            .groups
            .entry("workflow".into())
            .or_default()
            .show = Some(false);
        save(home.path(), page_values(&config)).unwrap();
        let (read, errors) = FooterConfig::load(Some(home.path()), home.path());
        assert_eq!(errors, []);
        assert_eq!(read.settings.preset, Preset::Nerd);
        assert_eq!(read.settings.look.separator, Some(SeparatorStyle::Slash));
        assert_eq!(read.settings.look.icons, None, "auto stays auto");
        assert_eq!(read.settings.context.warning, 50);
        let workflow = read
            .settings
            .groups
            .get("workflow")
            .cloned()
            .unwrap_or_default();
        assert_eq!(workflow.show, Some(false));
        assert_eq!(workflow.segments.get("sandbox_level"), Some(&false));
    }

    /// The overlay at both sizes.
    #[test]
    fn the_settings_overlay_at_80x24_and_120x40() {
        let page = &SETTINGS_PAGE;
        let fields = page.fields(&FooterConfig::default());
        let view = crate::views::settings::SettingsView::new(
            page.title,
            fields,
            |_: &[unipi_widgets::settings::SettingField]| Value::Null,
            Arc::new(NoStore),
        );
        for (w, h) in [(80, 24), (120, 40)] {
            let area = ratatui::layout::Rect::new(0, 0, w, h);
            let mut buf = ratatui::buffer::Buffer::empty(area);
            crate::views::View::render(&view, area, &mut buf, &unipi_widgets::Theme::plain());
            let text: Vec<String> = (0..h)
                .map(|y| {
                    (0..w)
                        .map(|x| buf[(x, y)].symbol())
                        .collect::<String>()
                        .trim_end()
                        .to_owned()
                })
                .collect();
            crate::assert_ui_snapshot!(format!("footer_settings_{w}x{h}"), text.join("\n"));
        }
    }

    struct NoStore;

    impl crate::views::settings::SettingsStore for NoStore {
        fn save(&self, _values: Value) {}

        fn take_outcome(&self) -> Option<Result<String, crate::bridge::Refusal>> {
            None
        }
    }
}
