//! The workbench theme: styles for every widget role plus the colours the workbench reports as its
//! terminal's when Pi asks (OSC 10/11/4), so Pi's own look matches ours. Built-in themes
//! (`themes/dark.toml`, `themes/light.toml`) are embedded; the user's `theme.toml` names one with
//! `inherits` and overrides it entry by entry (helix's theme inheritance and palette). Each entry
//! is resolved on its own, newest layer first, so a bad user entry is reported with its file,
//! line and column and the inherited value is used instead. `NO_COLOR` drops widget colours
//! (keeping bold/dim/reverse) but not the terminal colours, which are data for Pi, not paint.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use ratatui::style::{Color, Modifier, Style};
use toml::de::{DeTable, DeValue};
use unipi_widgets::Theme as WidgetTheme;

use super::error::{self, ConfigError, Origin};
use crate::pane::{Rgb, TerminalColors};

/// The embedded built-in themes, by name. The first is the default.
pub(crate) const BUILTIN_THEMES: [(&str, &str); 2] = [
    ("dark", include_str!("../../themes/dark.toml")),
    ("light", include_str!("../../themes/light.toml")),
];

/// The resolved theme the app draws with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Theme {
    pub widgets: WidgetTheme,
    pub terminal: TerminalColors,
    /// The user file's `name`, else the built-in theme's name.
    pub name: String,
}

impl Default for Theme {
    /// The built-in default theme ("dark"), in colour.
    fn default() -> Self {
        theme_from_sources(None, false).0
    }
}

/// Load the theme: the built-in one the user file `inherits` (default "dark") with the user file
/// merged over it. Problems are returned and skipped, never fatal.
pub fn load_theme(user_file: Option<&Path>, no_color: bool) -> (Theme, Vec<ConfigError>) {
    let (text, unreadable) = match error::read_user_file(user_file) {
        Ok(text) => (text, None),
        Err(err) => (None, Some(err)),
    };
    let path = user_file.unwrap_or(Path::new("theme.toml"));
    let (theme, mut errors) = theme_from_sources(text.as_deref().map(|t| (path, t)), no_color);
    errors.splice(0..0, unreadable);
    (theme, errors)
}

/// Build a theme from the built-ins and an optional user file given as (path, contents).
pub(crate) fn theme_from_sources(
    user: Option<(&Path, &str)>,
    no_color: bool,
) -> (Theme, Vec<ConfigError>) {
    let mut errors = Vec::new();
    let user = user.map(|(path, text)| parse_layer(path, text, &mut errors));
    let inherits = user.as_ref().and_then(|user| user.inherits.as_ref());
    let found = inherits.map(|wanted| {
        BUILTIN_THEMES
            .iter()
            .find(|(name, _)| *name == wanted.value)
    });
    if let (Some(wanted), Some(None)) = (inherits, found) {
        errors.push(wanted.origin.error(format!(
            "unknown theme {:?} to inherit; expected {}",
            wanted.value,
            quoted_list(BUILTIN_THEMES.map(|(name, _)| name))
        )));
    }
    let (base_name, base_text) = found.flatten().copied().unwrap_or(BUILTIN_THEMES[0]);
    let base_path = PathBuf::from(format!("<built-in>/themes/{base_name}.toml"));
    let base = parse_layer(&base_path, base_text, &mut errors);
    let name = user
        .as_ref()
        .and_then(|u| u.name.clone())
        .unwrap_or_else(|| base_name.to_owned());
    let layers: Vec<&Layer> = std::iter::once(&base).chain(user.as_ref()).collect();

    let palette = resolve_palette(&layers, &mut errors);
    let mut widgets = WidgetTheme::plain();
    for (role, field) in ROLE_FIELDS {
        let candidates = layers.iter().filter_map(|layer| layer.ui.get(role));
        let resolved = newest_that_resolves(candidates, &mut errors, |spec| {
            resolve_style(&spec.value, &palette)
        });
        if let Some(style) = resolved {
            *field(&mut widgets) = style;
        }
    }
    let mut colours = XTERM_COLOURS.map(|rgb| {
        let [_, r, g, b] = rgb.to_be_bytes();
        Rgb(r, g, b)
    });
    for (slot, key) in colours.iter_mut().zip(TERMINAL_KEYS) {
        let candidates = layers.iter().filter_map(|layer| layer.terminal.get(key));
        let resolved = newest_that_resolves(candidates, &mut errors, |c| c.rgb(&palette));
        *slot = resolved.unwrap_or(*slot);
    }
    let [foreground, background, palette @ ..] = colours;
    if no_color {
        widgets = WidgetTheme::plain();
    }
    let theme = Theme {
        widgets,
        terminal: TerminalColors {
            foreground,
            background,
            palette,
        },
        name,
    };
    (theme, errors)
}

/// The style a `[ui]` role sets.
type Field = fn(&mut WidgetTheme) -> &mut Style;

/// The `[ui]` roles as theme files name them, each with the style it sets.
const ROLE_FIELDS: [(&str, Field); 16] = [
    ("footer", |theme| &mut theme.footer),
    ("accent", |theme| &mut theme.accent),
    ("muted", |theme| &mut theme.muted),
    ("key_hint", |theme| &mut theme.key_hint),
    ("status.working", |theme| &mut theme.status_working),
    ("status.blocked", |theme| &mut theme.status_blocked),
    ("status.done", |theme| &mut theme.status_done),
    ("status.error", |theme| &mut theme.status_error),
    ("status.idle", |theme| &mut theme.status_idle),
    ("overlay.border", |theme| &mut theme.overlay_border),
    ("overlay.title", |theme| &mut theme.overlay_title),
    ("overlay.key", |theme| &mut theme.overlay_key),
    ("overlay.text", |theme| &mut theme.overlay_text),
    ("scrollback.badge", |theme| &mut theme.scrollback_badge),
    ("warning", |theme| &mut theme.warning),
    ("error", |theme| &mut theme.error),
];

/// The `[terminal]` keys, in `TerminalColors` order: foreground, background, ANSI 0..=15.
pub(crate) const TERMINAL_KEYS: [&str; 18] = {
    let mut keys = ["foreground"; 18];
    keys[1] = "background";
    let mut index = 0;
    while index < ANSI_NAMES.len() {
        keys[index + 2] = ANSI_NAMES[index].0;
        index += 1;
    }
    keys
};

/// xterm's default colours, in [`TERMINAL_KEYS`] order: what the terminal colours are if even
/// the built-in theme lacks one.
const XTERM_COLOURS: [u32; 18] = [
    0xe5e5e5, 0x000000, 0x000000, 0xcd0000, 0x00cd00, 0xcdcd00, 0x0000ee, 0xcd00cd, 0x00cdcd,
    0xe5e5e5, 0x7f7f7f, 0xff0000, 0x00ff00, 0xffff00, 0x5c5cff, 0xff00ff, 0x00ffff, 0xffffff,
];

/// ANSI colour names, in index order (the outer terminal's palette decides what they look like).
const ANSI_NAMES: [(&str, Color); 16] = [
    ("black", Color::Black),
    ("red", Color::Red),
    ("green", Color::Green),
    ("yellow", Color::Yellow),
    ("blue", Color::Blue),
    ("magenta", Color::Magenta),
    ("cyan", Color::Cyan),
    ("white", Color::Gray),
    ("bright-black", Color::DarkGray),
    ("bright-red", Color::LightRed),
    ("bright-green", Color::LightGreen),
    ("bright-yellow", Color::LightYellow),
    ("bright-blue", Color::LightBlue),
    ("bright-magenta", Color::LightMagenta),
    ("bright-cyan", Color::LightCyan),
    ("bright-white", Color::White),
];

const MODIFIER_NAMES: [(&str, Modifier); 9] = [
    ("bold", Modifier::BOLD),
    ("dim", Modifier::DIM),
    ("italic", Modifier::ITALIC),
    ("underlined", Modifier::UNDERLINED),
    ("reversed", Modifier::REVERSED),
    ("crossed_out", Modifier::CROSSED_OUT),
    ("hidden", Modifier::HIDDEN),
    ("slow_blink", Modifier::SLOW_BLINK),
    ("rapid_blink", Modifier::RAPID_BLINK),
];

const COLOUR_FORMS: &str = "a colour: \"#rrggbb\", a palette name, an ANSI name such as \
                            \"bright-black\", or \"reset\"";

#[derive(Clone, Debug)]
struct Located<T> {
    value: T,
    origin: Origin,
}

/// A `[ui]` entry before its colours are resolved (they may name palette entries that a later
/// layer redefines).
#[derive(Clone, Debug, Default)]
struct StyleSpec {
    fg: Option<Located<String>>,
    bg: Option<Located<String>>,
    modifiers: Modifier,
}

/// One theme file, checked for shape but not yet resolved.
#[derive(Debug, Default)]
struct Layer {
    name: Option<String>,
    inherits: Option<Located<String>>,
    palette: BTreeMap<String, Located<String>>,
    ui: BTreeMap<String, Located<StyleSpec>>,
    terminal: BTreeMap<String, Located<String>>,
}

fn parse_layer(path: &Path, text: &str, errors: &mut Vec<ConfigError>) -> Layer {
    match DeTable::parse(text) {
        Ok(document) => File { path, text, errors }.layer(document.get_ref()),
        Err(err) => {
            errors.push(error::from_toml(path, text, &err));
            Layer::default()
        }
    }
}

/// One theme file being read; each problem is reported where it is written (a value's at the
/// value, an unknown name's at the name) and its entry is left out.
struct File<'a> {
    path: &'a Path,
    text: &'a str,
    errors: &'a mut Vec<ConfigError>,
}

impl File<'_> {
    fn layer(&mut self, document: &DeTable<'_>) -> Layer {
        let mut layer = Layer::default();
        for (key, value) in document {
            let at = value.span().start;
            match (key.get_ref().as_ref(), value.get_ref()) {
                ("name", DeValue::String(name)) => layer.name = Some(name.to_string()),
                ("inherits", DeValue::String(name)) => {
                    layer.inherits = Some(self.located(name, at))
                }
                ("name" | "inherits", other) => {
                    let found = other.type_str();
                    self.report(at, format!("expected a string, found a {found}"));
                }
                ("palette", DeValue::Table(table)) => {
                    let expected = format!("expected {COLOUR_FORMS}");
                    self.colours(table, &mut layer.palette, |_| None, &expected);
                }
                ("ui", DeValue::Table(table)) => self.ui(table, &mut layer.ui),
                ("terminal", DeValue::Table(table)) => {
                    let expected = "expected a colour as \"#rrggbb\"";
                    self.colours(table, &mut layer.terminal, unknown_terminal, expected);
                }
                ("palette" | "ui" | "terminal", _) => self.report(at, "expected a table"),
                (other, _) => self.report(
                    key.span().start,
                    format!(
                        "unknown key `{other}`; expected name, inherits, [palette], [ui] or \
                         [terminal]"
                    ),
                ),
            }
        }
        layer
    }

    /// A table of colours by name (`[palette]`, `[terminal]`): `unknown` says why a name is
    /// refused, `expected` what a value that is not a string should have been; both at the value.
    fn colours(
        &mut self,
        table: &DeTable<'_>,
        colours: &mut BTreeMap<String, Located<String>>,
        unknown: fn(&str) -> Option<String>,
        expected: &str,
    ) {
        for (name, colour) in table {
            let (name, at) = (name.get_ref().as_ref(), colour.span().start);
            match (unknown(name), colour.get_ref().as_str()) {
                (Some(message), _) => self.report(at, message),
                (None, Some(value)) => {
                    colours.insert(name.to_owned(), self.located(value, at));
                }
                (None, None) => self.report(at, expected),
            }
        }
    }

    /// The `[ui]` table: a style for each known role.
    fn ui(&mut self, table: &DeTable<'_>, ui: &mut BTreeMap<String, Located<StyleSpec>>) {
        let roles = ROLE_FIELDS.map(|(role, _)| role);
        for (role, spec) in table {
            let name = role.get_ref().as_ref();
            if !roles.contains(&name) {
                let dotted = format!("{name}.");
                let message = match roles.iter().find(|known| known.starts_with(&dotted)) {
                    // `status.working = …` unquoted is a nested table in TOML.
                    Some(example) => format!(
                        "unknown role {name:?}; put dotted roles in quotes: \"{example}\" = …"
                    ),
                    None => format!(
                        "unknown role {name:?}; expected one of {}",
                        quoted_list(roles)
                    ),
                };
                self.report(role.span().start, message);
                continue;
            }
            let at = spec.span().start;
            if let Some(value) = self.style(spec.get_ref(), at) {
                let origin = self.origin(at);
                ui.insert(name.to_owned(), Located { value, origin });
            }
        }
    }

    /// A `[ui]` value, written at `at`: a colour string (the foreground) or
    /// `{ fg, bg, modifiers }`.
    fn style(&mut self, value: &DeValue<'_>, at: usize) -> Option<StyleSpec> {
        let expected = "expected a colour or a table { fg = …, bg = …, modifiers = [...] }";
        let mut spec = StyleSpec::default();
        let table = match value {
            DeValue::String(colour) => {
                spec.fg = Some(self.located(colour, at));
                return Some(spec);
            }
            DeValue::Table(table) => table,
            other => return self.refuse(at, format!("{expected}, found a {}", other.type_str())),
        };
        for (field, value) in table {
            let at = value.span().start;
            match (field.get_ref().as_ref(), value.get_ref()) {
                ("fg", DeValue::String(colour)) => spec.fg = Some(self.located(colour, at)),
                ("bg", DeValue::String(colour)) => spec.bg = Some(self.located(colour, at)),
                ("fg" | "bg", _) => return self.refuse(at, format!("expected {COLOUR_FORMS}")),
                ("modifiers", DeValue::Array(items)) => {
                    for item in items.iter() {
                        let name = item.get_ref().as_str().unwrap_or_default();
                        match MODIFIER_NAMES.iter().find(|(known, _)| *known == name) {
                            Some((_, modifier)) => spec.modifiers |= *modifier,
                            None => {
                                let names = quoted_list(MODIFIER_NAMES.map(|(name, _)| name));
                                let message = format!("unknown modifier; expected one of {names}");
                                return self.refuse(item.span().start, message);
                            }
                        }
                    }
                }
                ("modifiers", _) => return self.refuse(at, "expected a list such as [\"bold\"]"),
                (other, _) => {
                    let message =
                        format!("unknown style field `{other}`; expected fg, bg or modifiers");
                    return self.refuse(field.span().start, message);
                }
            }
        }
        Some(spec)
    }

    fn origin(&self, offset: usize) -> Origin {
        Origin::new(self.path, self.text, offset)
    }

    /// `value`, written at `offset`.
    fn located(&self, value: &str, offset: usize) -> Located<String> {
        let origin = self.origin(offset);
        let value = value.to_owned();
        Located { value, origin }
    }

    fn report(&mut self, offset: usize, message: impl Into<String>) {
        let error = self.origin(offset).error(message);
        self.errors.push(error);
    }

    /// [`File::report`], for an entry that is then left out.
    fn refuse<T>(&mut self, offset: usize, message: impl Into<String>) -> Option<T> {
        self.report(offset, message);
        None
    }
}

/// Why a `[terminal]` key is refused, if it is.
fn unknown_terminal(name: &str) -> Option<String> {
    let known = quoted_list(TERMINAL_KEYS);
    (!TERMINAL_KEYS.contains(&name))
        .then(|| format!("unknown terminal colour {name:?}; expected one of {known}"))
}

/// Try the candidates newest first; report each that fails and use the first that resolves.
fn newest_that_resolves<'a, T: 'a, R>(
    candidates: impl DoubleEndedIterator<Item = &'a Located<T>>,
    errors: &mut Vec<ConfigError>,
    resolve: impl Fn(&Located<T>) -> Result<R, ConfigError>,
) -> Option<R> {
    for candidate in candidates.rev() {
        match resolve(candidate) {
            Ok(resolved) => return Some(resolved),
            Err(err) => errors.push(err),
        }
    }
    None
}

fn resolve_palette(layers: &[&Layer], errors: &mut Vec<ConfigError>) -> Palette {
    let names: BTreeSet<&String> = layers.iter().flat_map(|l| l.palette.keys()).collect();
    let resolve = |name: &String| {
        let candidates = layers.iter().filter_map(|layer| layer.palette.get(name));
        // Palette entries are plain colours: naming another palette entry would allow cycles.
        let resolved = newest_that_resolves(candidates, errors, |colour| {
            plain_colour(&colour.value).ok_or_else(|| {
                colour.origin.error(format!(
                    "unknown colour {:?}; a palette entry must be \"#rrggbb\", an ANSI name \
                     such as \"bright-black\", or \"reset\"",
                    colour.value
                ))
            })
        });
        Some((name.clone(), resolved?))
    };
    names.into_iter().filter_map(resolve).collect()
}

/// Colours by palette name.
type Palette = BTreeMap<String, Color>;

fn resolve_style(spec: &StyleSpec, palette: &Palette) -> Result<Style, ConfigError> {
    let mut style = Style::new().add_modifier(spec.modifiers);
    if let Some(fg) = &spec.fg {
        style = style.fg(fg.colour(palette)?);
    }
    if let Some(bg) = &spec.bg {
        style = style.bg(bg.colour(palette)?);
    }
    Ok(style)
}

impl Located<String> {
    /// A palette name or a plain colour.
    fn colour(&self, palette: &Palette) -> Result<Color, ConfigError> {
        let value = &self.value;
        let colour = palette.get(value).copied().or_else(|| plain_colour(value));
        colour.ok_or_else(|| {
            let message = format!("unknown colour {value:?}; expected {COLOUR_FORMS}");
            self.origin.error(message)
        })
    }

    /// `"#rrggbb"`, or a palette name holding one.
    fn rgb(&self, palette: &Palette) -> Result<Rgb, ConfigError> {
        let value = &self.value;
        match palette.get(value).copied().or_else(|| hex_colour(value)) {
            Some(Color::Rgb(r, g, b)) => Ok(Rgb(r, g, b)),
            _ => Err(self.origin.error(format!(
                "expected a colour as \"#rrggbb\" (or a palette name holding one), found {value:?}"
            ))),
        }
    }
}

/// `"#rrggbb"`, an ANSI name, or `"reset"`.
fn plain_colour(text: &str) -> Option<Color> {
    if text == "reset" {
        return Some(Color::Reset);
    }
    ANSI_NAMES
        .iter()
        .find(|(name, _)| *name == text)
        .map(|(_, colour)| *colour)
        .or_else(|| hex_colour(text))
}

fn hex_colour(text: &str) -> Option<Color> {
    let hex = text.strip_prefix('#')?;
    if hex.len() != 6 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let channel = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).ok();
    Some(Color::Rgb(channel(0)?, channel(2)?, channel(4)?))
}

fn quoted_list<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    names
        .into_iter()
        .map(|name| format!("\"{name}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
// A panic is how a test reports failure; the workspace denies unwrap for non-test code.
mod tests {
    use super::*;
    use crate::test_table::check_table;

    /// The `[ui]` role names, as theme files write them.
    const ROLES: [&str; 16] = {
        let mut roles = [""; 16];
        let mut index = 0;
        while index < ROLE_FIELDS.len() {
            roles[index] = ROLE_FIELDS[index].0;
            index += 1;
        }
        roles
    };

    /// The style `role` sets.
    fn role_mut<'a>(theme: &'a mut WidgetTheme, role: &str) -> Option<&'a mut Style> {
        let (_, field) = ROLE_FIELDS.iter().find(|(name, _)| *name == role)?;
        Some(field(theme))
    }

    fn with_user(toml: &str, no_color: bool) -> (Theme, Vec<String>) {
        let (theme, errors) =
            theme_from_sources(Some((Path::new("/cfg/theme.toml"), toml)), no_color);
        (theme, errors.iter().map(ToString::to_string).collect())
    }

    fn all_styles(theme: &WidgetTheme) -> Vec<Style> {
        let mut theme = theme.clone();
        ROLES
            .iter()
            .filter_map(|role| role_mut(&mut theme, role).map(|style| *style))
            .collect()
    }

    #[test]
    fn builtin_themes_are_complete_and_clean() {
        for (name, text) in BUILTIN_THEMES {
            let mut errors = Vec::new();
            let layer = parse_layer(Path::new(name), text, &mut errors);
            assert!(errors.is_empty(), "{name}: {errors:?}");
            for role in ROLES {
                assert!(layer.ui.contains_key(role), "{name} lacks [ui] {role:?}");
                assert!(
                    role_mut(&mut WidgetTheme::plain(), role).is_some(),
                    "{role} has no field"
                );
            }
            for key in TERMINAL_KEYS {
                assert!(
                    layer.terminal.contains_key(key),
                    "{name} lacks [terminal] {key:?}"
                );
            }
            let (theme, errors) = with_user(&format!("inherits = \"{name}\""), false);
            assert!(errors.is_empty(), "{name}: {errors:?}");
            assert_eq!(theme.name, name);
            assert!(
                all_styles(&theme.widgets).iter().any(|s| s.fg.is_some()),
                "{name} has colour"
            );
        }
    }

    #[test]
    fn default_is_dark_and_light_is_light() {
        let (dark, errors) = load_theme(None, false);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(dark, Theme::default());
        assert_eq!(dark.name, "dark");
        assert!(dark.terminal.is_dark());
        assert_eq!(dark.terminal.background, Rgb(0x1a, 0x1b, 0x26));
        assert_eq!(dark.terminal.palette[1], Rgb(0xf7, 0x76, 0x8e));
        assert_eq!(dark.widgets.footer.bg, Some(Color::Rgb(0x24, 0x28, 0x3b)));
        assert!(
            dark.widgets
                .status_error
                .add_modifier
                .contains(Modifier::BOLD)
        );

        let (light, _) = with_user("inherits = \"light\"\n", false);
        assert!(!light.terminal.is_dark());
        assert_ne!(light.widgets, dark.widgets);
    }

    #[test]
    fn user_entries_override_key_by_key() {
        let (theme, errors) = with_user(
            r##"
            name = "mine"
            [palette]
            red = "#ff0000"
            [ui]
            "footer" = "bright-white"
            "status.working" = { fg = "#010203", bg = "reset", modifiers = ["italic", "underlined"] }
            [terminal]
            background = "#000000"
            bright-red = "red"
            "##,
            false,
        );
        assert!(errors.is_empty(), "{errors:?}");
        let dark = Theme::default();
        assert_eq!(theme.name, "mine");
        // A role is replaced whole: the footer loses the inherited background.
        assert_eq!(theme.widgets.footer, Style::new().fg(Color::White));
        assert_eq!(
            theme.widgets.status_working,
            Style::new()
                .fg(Color::Rgb(1, 2, 3))
                .bg(Color::Reset)
                .add_modifier(Modifier::ITALIC | Modifier::UNDERLINED)
        );
        // The palette override reaches inherited roles that use it.
        assert_eq!(theme.widgets.status_error.fg, Some(Color::Rgb(0xff, 0, 0)));
        assert_eq!(theme.widgets.accent, dark.widgets.accent);
        assert_eq!(theme.terminal.background, Rgb(0, 0, 0));
        assert_eq!(theme.terminal.palette[9], Rgb(0xff, 0, 0));
        assert_eq!(theme.terminal.foreground, dark.terminal.foreground);
    }

    #[test]
    fn colour_forms_table() {
        let cases = [
            ("#a0b1c2", Some(Color::Rgb(0xa0, 0xb1, 0xc2))),
            ("#A0B1C2", Some(Color::Rgb(0xa0, 0xb1, 0xc2))),
            ("red", Some(Color::Red)),
            ("white", Some(Color::Gray)),
            ("bright-black", Some(Color::DarkGray)),
            ("bright-white", Some(Color::White)),
            ("reset", Some(Color::Reset)),
            ("#abc", None),
            ("#gggggg", None),
            ("#ééé", None),
            ("Red", None),
            ("", None),
        ];
        check_table(cases, |text| plain_colour(text));
    }

    #[test]
    fn bad_entries_are_reported_and_the_inherited_value_kept() {
        let cases: [(&str, &str); 12] = [
            (
                "[ui]\n\"footer\" = \"#12345\"\n",
                "/cfg/theme.toml:2:12: unknown colour \"#12345\"",
            ),
            (
                "[ui]\n\"footer\" = { fg = \"nope\" }\n",
                "/cfg/theme.toml:2:19: unknown colour \"nope\"",
            ),
            (
                "[ui]\n\"footer\" = { fgg = \"red\" }\n",
                "/cfg/theme.toml:2:14: unknown style field `fgg`",
            ),
            (
                "[ui]\n\"footer\" = { modifiers = [\"blod\"] }\n",
                "/cfg/theme.toml:2:27: unknown modifier",
            ),
            (
                "[ui]\n\"footer\" = 7\n",
                "/cfg/theme.toml:2:12: expected a colour or a table",
            ),
            (
                "[ui]\n\"fotter\" = \"red\"\n",
                "/cfg/theme.toml:2:1: unknown role \"fotter\"",
            ),
            (
                "[terminal]\nbackground = \"bright-black\"\n",
                "/cfg/theme.toml:2:14: expected a colour as \"#rrggbb\"",
            ),
            (
                "[terminal]\npurple = \"#000000\"\n",
                "/cfg/theme.toml:2:10: unknown terminal colour \"purple\"",
            ),
            (
                "[palette]\nbar = \"bluish\"\n",
                "/cfg/theme.toml:2:7: unknown colour \"bluish\"; a palette entry",
            ),
            (
                "inherits = \"solarized\"\n",
                "/cfg/theme.toml:1:12: unknown theme \"solarized\" to inherit",
            ),
            (
                "colours = 1\n",
                "/cfg/theme.toml:1:1: unknown key `colours`",
            ),
            (
                "[ui]\nstatus.done = \"red\"\n",
                "/cfg/theme.toml:2:1: unknown role \"status\"; put dotted roles in quotes",
            ),
        ];
        let dark = Theme::default();
        for (toml, want) in cases {
            let (theme, errors) = with_user(toml, false);
            assert_eq!(errors.len(), 1, "{toml:?}: {errors:?}");
            assert!(
                errors[0].starts_with(want),
                "{toml:?}:\n got  {}\n want {want}",
                errors[0]
            );
            assert_eq!(theme.widgets, dark.widgets, "{toml:?}");
            assert_eq!(theme.terminal, dark.terminal, "{toml:?}");
        }
    }

    #[test]
    fn toml_syntax_error_keeps_the_default_theme() {
        let (theme, errors) = with_user("[ui\n", false);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].starts_with("/cfg/theme.toml:1:"), "{}", errors[0]);
        assert_eq!(theme, Theme::default());
    }

    #[test]
    fn no_color_drops_widget_colours_but_keeps_emphasis_and_terminal_colours() {
        let (theme, errors) = with_user("[ui]\n\"footer\" = \"red\"\n", true);
        assert!(errors.is_empty(), "{errors:?}");
        for style in all_styles(&theme.widgets) {
            assert_eq!((style.fg, style.bg), (None, None), "{style:?}");
        }
        assert!(
            theme
                .widgets
                .footer
                .add_modifier
                .contains(Modifier::REVERSED)
        );
        assert_eq!(theme.terminal, Theme::default().terminal);
        // Errors are still reported under NO_COLOR.
        let (_, errors) = with_user("[ui]\n\"footer\" = \"rouge\"\n", true);
        assert_eq!(errors.len(), 1);
    }

    #[test]
    fn load_theme_reads_the_user_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("theme.toml");
        std::fs::write(&path, "inherits = \"light\"\n[ui]\n\"accent\" = \"oops\"\n").unwrap();
        let (theme, errors) = load_theme(Some(&path), false);
        assert_eq!(theme.name, "light");
        error::assert_one_error_at(&errors, &path, "3:12: unknown colour \"oops\"");

        let (theme, errors) = load_theme(Some(&dir.path().join("missing.toml")), false);
        assert!(errors.is_empty());
        assert_eq!(theme, Theme::default());
    }
}
