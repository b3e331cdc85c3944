//! What the user chose about the footer, in the shape the segment builder needs: a preset, Unipi's
//! per-group and per-segment toggles, and the context thresholds. The app's config loader
//! (`src/config/footer.rs`) reads `footer.json` into this; the widget only reads it. A preset is
//! a level, not a list of ids: each segment names the leanest preset that shows it, so a module
//! adding segments later needs no edit here.

use std::collections::BTreeMap;

use super::segment::{Role, Segment};

/// How much the footer shows, and in what look. Presets are levels: every segment a leaner
/// level shows, a richer one shows ([`Preset::level`]). `compact` sits between `minimal` and
/// `default`; `nerd` is `full` drawn with Nerd Font icons and powerline separators; `ascii` is
/// `compact` drawn in plain ASCII (for terminals and fonts without the symbols).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Preset {
    /// Pi's state, the model, the context, the git branch, and the workbench's own markers.
    Minimal,
    /// Adds the cost, the tokens per second, the clock and the session's duration.
    Compact,
    /// Adds the working directory, session name, thinking level, tokens, tool count, API state
    /// and the modules' segments.
    #[default]
    Default,
    /// Everything, including the host name, input and output tokens apart, and the segments
    /// modules mark as extra detail; a second row takes what does not fit.
    Full,
    /// `full`, with Nerd Font icons and powerline separators.
    Nerd,
    /// `compact`, in plain ASCII: text labels for icons, `|` between segments.
    Ascii,
}

impl Preset {
    /// Every preset, leanest first.
    pub const ALL: [Preset; 6] = [
        Preset::Minimal,
        Preset::Compact,
        Preset::Ascii,
        Preset::Default,
        Preset::Full,
        Preset::Nerd,
    ];

    /// The name used in `footer.json`.
    pub fn name(self) -> &'static str {
        match self {
            Preset::Minimal => "minimal",
            Preset::Compact => "compact",
            Preset::Default => "default",
            Preset::Full => "full",
            Preset::Nerd => "nerd",
            Preset::Ascii => "ascii",
        }
    }

    /// The preset called `name` in `footer.json`.
    pub fn from_name(name: &str) -> Option<Preset> {
        Preset::ALL.into_iter().find(|preset| preset.name() == name)
    }

    /// How much it shows: 0 minimal, 1 compact (and ascii), 2 default, 3 full (and nerd).
    pub fn level(self) -> u8 {
        match self {
            Preset::Minimal => 0,
            Preset::Compact | Preset::Ascii => 1,
            Preset::Default => 2,
            Preset::Full | Preset::Nerd => 3,
        }
    }

    /// The icons this preset forces, whatever the settings say (`None`: the settings decide).
    fn forced_icons(self) -> Option<IconStyle> {
        match self {
            Preset::Nerd => Some(IconStyle::Nerd),
            Preset::Ascii => Some(IconStyle::Text),
            _ => None,
        }
    }

    /// The separator this preset forces (`None`: the settings decide).
    fn forced_separator(self) -> Option<SeparatorStyle> {
        match self {
            Preset::Nerd => Some(SeparatorStyle::PowerlineThin),
            Preset::Ascii => Some(SeparatorStyle::Pipe),
            _ => None,
        }
    }
}

/// What stands between two segments (Unipi's `separator`, plus our own `bar`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SeparatorStyle {
    /// ` │ `: the workbench's own.
    #[default]
    Bar,
    Powerline,
    PowerlineThin,
    Slash,
    Pipe,
    Dot,
    Ascii,
}

impl SeparatorStyle {
    pub const ALL: [SeparatorStyle; 7] = [
        SeparatorStyle::Bar,
        SeparatorStyle::Powerline,
        SeparatorStyle::PowerlineThin,
        SeparatorStyle::Slash,
        SeparatorStyle::Pipe,
        SeparatorStyle::Dot,
        SeparatorStyle::Ascii,
    ];

    /// The name used in `footer.json` (Unipi's names, and `bar`).
    pub fn name(self) -> &'static str {
        match self {
            SeparatorStyle::Bar => "bar",
            SeparatorStyle::Powerline => "powerline",
            SeparatorStyle::PowerlineThin => "powerline-thin",
            SeparatorStyle::Slash => "slash",
            SeparatorStyle::Pipe => "pipe",
            SeparatorStyle::Dot => "dot",
            SeparatorStyle::Ascii => "ascii",
        }
    }

    pub fn from_name(name: &str) -> Option<SeparatorStyle> {
        SeparatorStyle::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The text drawn between two segments; the powerline glyphs need a Nerd Font, without one
    /// they fall back to ASCII as Unipi's did.
    pub fn text(self, nerd_font: bool) -> &'static str {
        match (self, nerd_font) {
            (SeparatorStyle::Bar, _) => " │ ",
            (SeparatorStyle::Powerline, true) => " \u{e0b0} ",
            (SeparatorStyle::Powerline, false) => " > ",
            (SeparatorStyle::PowerlineThin, true) => " \u{e0b1} ",
            (SeparatorStyle::PowerlineThin | SeparatorStyle::Pipe, _) => " | ",
            (SeparatorStyle::Slash, _) => " / ",
            (SeparatorStyle::Dot, true) => " · ",
            (SeparatorStyle::Dot, false) => " . ",
            (SeparatorStyle::Ascii, _) => " > ",
        }
    }
}

/// How segments' icons are drawn (Unipi's `iconStyle`, plus our own `unicode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IconStyle {
    /// Small Unicode symbols any font has (`⎇`, `⚡`), and none where the text says enough.
    #[default]
    Unicode,
    /// Nerd Font glyphs (needs a patched font).
    Nerd,
    Emoji,
    /// Short uppercase labels (`GIT`, `TPS`): plain ASCII.
    Text,
}

impl IconStyle {
    pub const ALL: [IconStyle; 4] = [
        IconStyle::Unicode,
        IconStyle::Nerd,
        IconStyle::Emoji,
        IconStyle::Text,
    ];

    pub fn name(self) -> &'static str {
        match self {
            IconStyle::Unicode => "unicode",
            IconStyle::Nerd => "nerd",
            IconStyle::Emoji => "emoji",
            IconStyle::Text => "text",
        }
    }

    pub fn from_name(name: &str) -> Option<IconStyle> {
        IconStyle::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// Whether the terminal likely draws Nerd Font glyphs, from what the environment says (Unipi's
/// rule): `POWERLINE_NERD_FONTS=1`/`0` decides; otherwise Ghostty, or a `TERM_PROGRAM` of
/// iTerm, WezTerm, kitty, Ghostty or Alacritty, says yes. `var` reads one variable.
pub fn detect_nerd_font(var: impl Fn(&str) -> Option<String>) -> bool {
    match var("POWERLINE_NERD_FONTS").as_deref().map(str::trim) {
        Some("1") => return true,
        Some("0") => return false,
        _ => {}
    }
    if var("GHOSTTY_RESOURCES_DIR").is_some_and(|v| !v.is_empty()) {
        return true;
    }
    let program = var("TERM_PROGRAM").unwrap_or_default().to_lowercase();
    ["iterm", "wezterm", "kitty", "ghostty", "alacritty"]
        .iter()
        .any(|name| program.contains(name))
}

/// The footer's look: icons, separator and overflow row, as the settings and the preset decide.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Look {
    /// `None`: Nerd Font icons when one was detected, else Unicode.
    pub icons: Option<IconStyle>,
    /// `None`: the workbench's bar.
    pub separator: Option<SeparatorStyle>,
    /// `None`: the preset decides (`full` and `nerd` get a second row).
    pub overflow_row: Option<bool>,
    /// What [`detect_nerd_font`] said (the app fills it in once).
    pub nerd_font: bool,
}

/// Context-window use (in percent) at which the context segment turns to the warning and then
/// the error style.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContextThresholds {
    pub warning: u8,
    pub error: u8,
}

impl Default for ContextThresholds {
    fn default() -> Self {
        ContextThresholds {
            warning: 60,
            error: 85,
        }
    }
}

impl ContextThresholds {
    /// The role for a context use of `percent` (already rounded the way it is shown).
    pub fn role(self, percent: u64) -> Role {
        if percent >= u64::from(self.error) {
            Role::Error
        } else if percent >= u64::from(self.warning) {
            Role::Warning
        } else {
            Role::Text
        }
    }
}

/// Unipi's `groups.{id}`: whether the group shows at all, and per-segment overrides.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupToggles {
    /// `Some(false)` hides every segment of the group; unset means shown.
    pub show: Option<bool>,
    /// Segment id → shown. Overrides the preset both ways.
    pub segments: BTreeMap<String, bool>,
}

/// The footer settings the segment builder and module segments are filtered by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FooterSettings {
    pub preset: Preset,
    /// By group id: `core` for the workbench's segments, else the module's name.
    pub groups: BTreeMap<String, GroupToggles>,
    pub context: ContextThresholds,
    pub look: Look,
}

impl Default for FooterSettings {
    /// The default preset; the `notify` group hidden, as in Unipi.
    fn default() -> Self {
        let notify = GroupToggles {
            show: Some(false),
            segments: BTreeMap::new(),
        };
        FooterSettings {
            preset: Preset::Default,
            groups: BTreeMap::from([("notify".to_owned(), notify)]),
            context: ContextThresholds::default(),
            look: Look::default(),
        }
    }
}

impl FooterSettings {
    /// Whether `segment` is shown: see [`FooterSettings::shows_id`].
    pub fn shows(&self, segment: &Segment) -> bool {
        self.shows_id(&segment.group, &segment.id, segment.min_preset)
    }

    /// Whether the segment `id` of `group`, which presets from `min_preset` up show, is shown.
    /// A hidden group hides all its segments (Unipi's `show`); otherwise an explicit toggle wins,
    /// and without one the preset decides. Unlike Unipi, a toggle may also add a segment the
    /// preset leaves out, so "minimal plus cost" needs no custom preset.
    pub fn shows_id(&self, group: &str, id: &str, min_preset: Preset) -> bool {
        let toggles = self.groups.get(group);
        if toggles.and_then(|t| t.show) == Some(false) {
            return false;
        }
        match toggles.and_then(|t| t.segments.get(id)) {
            Some(&shown) => shown,
            None => self.preset.level() >= min_preset.level(),
        }
    }

    /// The icon style in force: the preset's, else the setting, else by the detected font.
    pub fn icons(&self) -> IconStyle {
        self.preset
            .forced_icons()
            .or(self.look.icons)
            .unwrap_or(if self.look.nerd_font {
                IconStyle::Nerd
            } else {
                IconStyle::Unicode
            })
    }

    /// The text between two segments.
    pub fn separator(&self) -> &'static str {
        let style = self.preset.forced_separator().or(self.look.separator);
        style
            .unwrap_or_default()
            .text(self.look.nerd_font || self.preset == Preset::Nerd)
    }

    /// Whether segments that do not fit the row go to a second row rather than away.
    pub fn overflow_row(&self) -> bool {
        self.look
            .overflow_row
            .unwrap_or(self.preset.level() >= Preset::Full.level())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A group's toggles as written in a test: (group, show, [(segment, shown)]).
    type GroupSpec<'a> = (&'a str, Option<bool>, &'a [(&'a str, bool)]);

    fn settings_with(preset: Preset, groups: &[GroupSpec]) -> FooterSettings {
        let groups = groups
            .iter()
            .map(|(group, show, segments)| {
                let segments = segments
                    .iter()
                    .map(|(id, shown)| ((*id).to_owned(), *shown))
                    .collect();
                (
                    (*group).to_owned(),
                    GroupToggles {
                        show: *show,
                        segments,
                    },
                )
            })
            .collect();
        FooterSettings {
            preset,
            groups,
            ..FooterSettings::default()
        }
    }

    #[test]
    fn shows_id_table() {
        use Preset::{Default as Dflt, Full, Minimal};
        let plain = settings_with(Dflt, &[]);
        let minimal = settings_with(Minimal, &[]);
        let toggled = settings_with(
            Minimal,
            &[
                ("core", None, &[("cost", true), ("model", false)]),
                ("mcp", Some(false), &[("servers_active", true)]),
                ("tasks", Some(true), &[]),
            ],
        );
        let cases = [
            (&plain, "core", "cwd", Dflt, true),
            (&plain, "core", "hostname", Full, false),
            (&plain, "core", "model", Minimal, true),
            (&minimal, "core", "cwd", Dflt, false),
            (&minimal, "core", "model", Minimal, true),
            // A toggle adds a segment the preset leaves out, and removes one it has.
            (&toggled, "core", "cost", Dflt, true),
            (&toggled, "core", "model", Minimal, false),
            // A hidden group wins over its segment toggles.
            (&toggled, "mcp", "servers_active", Minimal, false),
            (&toggled, "tasks", "running", Minimal, true),
            (&toggled, "tasks", "queued", Dflt, false),
        ];
        for (settings, group, id, min_preset, want) in cases {
            assert_eq!(
                settings.shows_id(group, id, min_preset),
                want,
                "{group}.{id} from {min_preset:?} in {:?}",
                settings.preset
            );
        }
    }

    #[test]
    fn notify_is_hidden_by_default() {
        let settings = FooterSettings::default();
        assert!(!settings.shows_id("notify", "last_sent", Preset::Minimal));
        assert!(settings.shows_id("helpers", "running", Preset::Default));
    }

    #[test]
    fn context_role_table() {
        let thresholds = ContextThresholds::default();
        let cases = [
            (0, Role::Text),
            (59, Role::Text),
            (60, Role::Warning),
            (84, Role::Warning),
            (85, Role::Error),
            (140, Role::Error),
        ];
        for (percent, want) in cases {
            assert_eq!(thresholds.role(percent), want, "{percent}%");
        }
    }

    #[test]
    fn nerd_font_detection_table() {
        let cases: [(&[(&str, &str)], bool); 7] = [
            (&[], false),
            (&[("POWERLINE_NERD_FONTS", "1")], true),
            (
                &[("POWERLINE_NERD_FONTS", "0"), ("TERM_PROGRAM", "kitty")],
                false,
            ),
            (&[("GHOSTTY_RESOURCES_DIR", "/usr/share/ghostty")], true),
            (&[("TERM_PROGRAM", "WezTerm")], true),
            (&[("TERM_PROGRAM", "iTerm.app")], true),
            (&[("TERM_PROGRAM", "Apple_Terminal")], false),
        ];
        for (vars, want) in cases {
            let var = |key: &str| {
                vars.iter()
                    .find(|(k, _)| *k == key)
                    .map(|(_, v)| (*v).to_owned())
            };
            assert_eq!(detect_nerd_font(var), want, "{vars:?}");
        }
    }

    #[test]
    fn look_follows_the_preset_then_the_settings_then_the_font() {
        let with = |preset, look| FooterSettings {
            preset,
            look,
            ..FooterSettings::default()
        };
        let nerd_font = Look {
            nerd_font: true,
            ..Look::default()
        };
        // (settings, icons, separator, overflow row)
        let cases = [
            (
                with(Preset::Default, Look::default()),
                IconStyle::Unicode,
                " │ ",
                false,
            ),
            (
                with(Preset::Default, nerd_font),
                IconStyle::Nerd,
                " │ ",
                false,
            ),
            (
                with(Preset::Full, Look::default()),
                IconStyle::Unicode,
                " │ ",
                true,
            ),
            (
                with(Preset::Nerd, Look::default()),
                IconStyle::Nerd,
                " \u{e0b1} ",
                true,
            ),
            (
                with(Preset::Ascii, nerd_font),
                IconStyle::Text,
                " | ",
                false,
            ),
            (
                with(
                    Preset::Default,
                    Look {
                        icons: Some(IconStyle::Emoji),
                        separator: Some(SeparatorStyle::Slash),
                        overflow_row: Some(true),
                        nerd_font: true,
                    },
                ),
                IconStyle::Emoji,
                " / ",
                true,
            ),
            (
                with(
                    Preset::Default,
                    Look {
                        separator: Some(SeparatorStyle::Powerline),
                        ..Look::default()
                    },
                ),
                IconStyle::Unicode,
                " > ",
                false,
            ),
        ];
        for (settings, icons, separator, overflow) in cases {
            let what = format!("{:?} {:?}", settings.preset, settings.look);
            assert_eq!(settings.icons(), icons, "{what}");
            assert_eq!(settings.separator(), separator, "{what}");
            assert_eq!(settings.overflow_row(), overflow, "{what}");
        }
    }

    #[test]
    fn preset_levels() {
        let minimal = |preset: Preset| FooterSettings {
            preset,
            ..FooterSettings::default()
        };
        // (preset, shows a compact segment, a default one, a full one)
        let cases = [
            (Preset::Minimal, false, false, false),
            (Preset::Compact, true, false, false),
            (Preset::Ascii, true, false, false),
            (Preset::Default, true, true, false),
            (Preset::Full, true, true, true),
            (Preset::Nerd, true, true, true),
        ];
        for (preset, compact, default, full) in cases {
            let settings = minimal(preset);
            let shows = |from| settings.shows_id("core", "x", from);
            assert_eq!(
                (
                    shows(Preset::Compact),
                    shows(Preset::Default),
                    shows(Preset::Full)
                ),
                (compact, default, full),
                "{preset:?}"
            );
            assert!(shows(Preset::Minimal));
        }
    }

    #[test]
    fn preset_names_round_trip() {
        for preset in Preset::ALL {
            assert_eq!(Preset::from_name(preset.name()), Some(preset));
        }
        assert_eq!(Preset::from_name("nerdy"), None);
        for style in SeparatorStyle::ALL {
            assert_eq!(SeparatorStyle::from_name(style.name()), Some(style));
        }
        for style in IconStyle::ALL {
            assert_eq!(IconStyle::from_name(style.name()), Some(style));
        }
    }
}
