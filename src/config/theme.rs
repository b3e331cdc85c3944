//! The workbench theme: styles for every widget role plus the colours the workbench reports as its
//! terminal's when Pi asks (OSC 10/11/4), so Pi's own look matches ours. Built-in themes
//! (`themes/dark.toml`, `themes/light.toml`) are embedded; the user's `theme.toml` names one with
//! `inherits` and overrides it entry by entry (helix's theme inheritance and palette). Each entry
//! is resolved on its own, newest layer first, so a bad user entry is reported with its file,
//! line and column and the inherited value is used instead. `NO_COLOR` drops widget colours
//! (keeping bold/dim/reverse) but not the terminal colours, which are data for Pi, not paint.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ratatui::style::{Color, Modifier, Style};
use toml::de::{DeTable, DeValue};
use unipi_widgets::Theme as WidgetTheme;

use super::error::{self, ConfigError, Origin};
use crate::pane::{Rgb, TerminalColors};

/// The embedded built-in themes, by name. The first is the default.
pub const BUILTIN_THEMES: [(&str, &str); 2] = [
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
    match error::read_user_file(user_file) {
        Ok(Some(text)) => {
            let path = user_file.unwrap_or(Path::new("theme.toml"));
            theme_from_sources(Some((path, &text)), no_color)
        }
        Ok(None) => theme_from_sources(None, no_color),
        Err(err) => {
            let (theme, mut errors) = theme_from_sources(None, no_color);
            errors.insert(0, err);
            (theme, errors)
        }
    }
}

/// Build a theme from the built-ins and an optional user file given as (path, contents).
pub fn theme_from_sources(
    user: Option<(&Path, &str)>,
    no_color: bool,
) -> (Theme, Vec<ConfigError>) {
    let mut errors = Vec::new();
    let user = user.map(|(path, text)| parse_layer(path, text, &mut errors));

    let (base_name, base_text) = match user.as_ref().and_then(|u| u.inherits.as_ref()) {
        None => BUILTIN_THEMES[0],
        Some(wanted) => match BUILTIN_THEMES
            .iter()
            .find(|(name, _)| *name == wanted.value)
        {
            Some(found) => *found,
            None => {
                errors.push(wanted.origin.error(format!(
                    "unknown theme {:?} to inherit; expected {}",
                    wanted.value,
                    quoted_list(BUILTIN_THEMES.iter().map(|(name, _)| *name))
                )));
                BUILTIN_THEMES[0]
            }
        },
    };
    let base_path = PathBuf::from(format!("<built-in>/themes/{base_name}.toml"));
    let base = parse_layer(&base_path, base_text, &mut errors);
    let name = user
        .as_ref()
        .and_then(|u| u.name.clone())
        .unwrap_or_else(|| base_name.to_owned());
    let layers: Vec<&Layer> = std::iter::once(&base).chain(user.as_ref()).collect();

    let palette = resolve_palette(&layers, &mut errors);
    let mut widgets = WidgetTheme::plain();
    for role in ROLES {
        let candidates = layers.iter().filter_map(|layer| layer.ui.get(role));
        let resolved = newest_that_resolves(candidates, &mut errors, |spec| {
            resolve_style(&spec.value, &palette)
        });
        if let (Some(style), Some(slot)) = (resolved, role_mut(&mut widgets, role)) {
            *slot = style;
        }
    }
    let mut terminal = fallback_terminal_colors();
    for (index, key) in TERMINAL_KEYS.iter().enumerate() {
        let candidates = layers.iter().filter_map(|layer| layer.terminal.get(*key));
        let resolved = newest_that_resolves(candidates, &mut errors, |colour| {
            resolve_rgb(colour, &palette)
        });
        if let Some(rgb) = resolved {
            match index {
                0 => terminal.foreground = rgb,
                1 => terminal.background = rgb,
                n => terminal.palette[n - 2] = rgb,
            }
        }
    }
    if no_color {
        widgets = WidgetTheme::plain();
    }
    let theme = Theme {
        widgets,
        terminal,
        name,
    };
    (theme, errors)
}

/// The `[ui]` role names, as theme files write them.
pub const ROLES: [&str; 16] = [
    "footer",
    "accent",
    "muted",
    "key_hint",
    "status.working",
    "status.blocked",
    "status.done",
    "status.error",
    "status.idle",
    "overlay.border",
    "overlay.title",
    "overlay.key",
    "overlay.text",
    "scrollback.badge",
    "warning",
    "error",
];

/// The `[terminal]` keys, in `TerminalColors` order: foreground, background, ANSI 0..=15.
pub const TERMINAL_KEYS: [&str; 18] = {
    let mut keys = ["foreground"; 18];
    keys[1] = "background";
    let mut index = 0;
    while index < ANSI_NAMES.len() {
        keys[index + 2] = ANSI_NAMES[index].0;
        index += 1;
    }
    keys
};

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
    let mut layer = Layer::default();
    let document = match DeTable::parse(text) {
        Ok(document) => document,
        Err(err) => {
            errors.push(error::from_toml(path, text, &err));
            return layer;
        }
    };
    let at = |offset: usize| Origin::new(path, text, offset);
    for (key, value) in document.get_ref() {
        let value_origin = at(value.span().start);
        match (key.get_ref().as_ref(), value.get_ref()) {
            ("name", DeValue::String(name)) => layer.name = Some(name.to_string()),
            ("inherits", DeValue::String(name)) => {
                layer.inherits = Some(Located {
                    value: name.to_string(),
                    origin: value_origin,
                });
            }
            ("name" | "inherits", other) => {
                errors.push(
                    value_origin.error(format!("expected a string, found a {}", other.type_str())),
                );
            }
            ("palette", DeValue::Table(table)) => {
                let expected = format!("expected {COLOUR_FORMS}");
                let colours = colour_table(table, &at, errors, |_| None, &expected);
                layer.palette.extend(colours);
            }
            ("ui", DeValue::Table(table)) => parse_ui(table, &at, errors, &mut layer.ui),
            ("terminal", DeValue::Table(table)) => {
                let unknown = |name: &str| {
                    (!TERMINAL_KEYS.contains(&name)).then(|| {
                        format!(
                            "unknown terminal colour {name:?}; expected one of {}",
                            quoted_list(TERMINAL_KEYS)
                        )
                    })
                };
                let expected = "expected a colour as \"#rrggbb\"";
                let colours = colour_table(table, &at, errors, unknown, expected);
                layer.terminal.extend(colours);
            }
            ("palette" | "ui" | "terminal", _) => {
                errors.push(value_origin.error("expected a table"));
            }
            (other, _) => errors.push(at(key.span().start).error(format!(
                "unknown key `{other}`; expected name, inherits, [palette], [ui] or [terminal]"
            ))),
        }
    }
    layer
}

/// A table of colours by name (`[palette]`, `[terminal]`): `unknown` says why a name is refused,
/// `expected` what a value that is not a string should have been; both at the value.
fn colour_table(
    table: &DeTable<'_>,
    at: &dyn Fn(usize) -> Origin,
    errors: &mut Vec<ConfigError>,
    unknown: impl Fn(&str) -> Option<String>,
    expected: &str,
) -> BTreeMap<String, Located<String>> {
    let mut colours = BTreeMap::new();
    for (name, colour) in table {
        let name = name.get_ref().as_ref();
        let origin = at(colour.span().start);
        if let Some(message) = unknown(name) {
            errors.push(origin.error(message));
            continue;
        }
        match colour.get_ref().as_str() {
            Some(value) => {
                let value = value.to_owned();
                colours.insert(name.to_owned(), Located { value, origin });
            }
            None => errors.push(origin.error(expected)),
        }
    }
    colours
}

/// The `[ui]` table: a style for each known role.
fn parse_ui(
    table: &DeTable<'_>,
    at: &dyn Fn(usize) -> Origin,
    errors: &mut Vec<ConfigError>,
    ui: &mut BTreeMap<String, Located<StyleSpec>>,
) {
    for (role, spec) in table {
        let role_name = role.get_ref().as_ref();
        if !ROLES.contains(&role_name) {
            let dotted = format!("{role_name}.");
            let message = match ROLES.iter().find(|r| r.starts_with(&dotted)) {
                // `status.working = …` unquoted is a nested table in TOML.
                Some(example) => format!(
                    "unknown role {role_name:?}; put dotted roles in quotes: \"{example}\" = …"
                ),
                None => format!(
                    "unknown role {role_name:?}; expected one of {}",
                    quoted_list(ROLES)
                ),
            };
            errors.push(at(role.span().start).error(message));
            continue;
        }
        let origin = at(spec.span().start);
        if let Some(value) = parse_style_spec(spec.get_ref(), &origin, at, errors) {
            ui.insert(role_name.to_owned(), Located { value, origin });
        }
    }
}

/// A `[ui]` value: a colour string (the foreground) or `{ fg, bg, modifiers }`.
fn parse_style_spec(
    value: &DeValue<'_>,
    origin: &Origin,
    at: &dyn Fn(usize) -> Origin,
    errors: &mut Vec<ConfigError>,
) -> Option<StyleSpec> {
    let expected = "expected a colour or a table { fg = …, bg = …, modifiers = [...] }";
    match value {
        DeValue::String(colour) => Some(StyleSpec {
            fg: Some(Located {
                value: colour.to_string(),
                origin: origin.clone(),
            }),
            ..StyleSpec::default()
        }),
        DeValue::Table(table) => {
            let mut spec = StyleSpec::default();
            for (field, value) in table {
                let value_origin = at(value.span().start);
                match (field.get_ref().as_ref(), value.get_ref()) {
                    ("fg" | "bg", DeValue::String(colour)) => {
                        let located = Some(Located {
                            value: colour.to_string(),
                            origin: value_origin,
                        });
                        if field.get_ref() == "fg" {
                            spec.fg = located;
                        } else {
                            spec.bg = located;
                        }
                    }
                    ("fg" | "bg", _) => {
                        errors.push(value_origin.error(format!("expected {COLOUR_FORMS}")));
                        return None;
                    }
                    ("modifiers", DeValue::Array(items)) => {
                        for item in items.iter() {
                            let name = item.get_ref().as_str().unwrap_or_default();
                            match MODIFIER_NAMES.iter().find(|(known, _)| *known == name) {
                                Some((_, modifier)) => spec.modifiers |= *modifier,
                                None => {
                                    errors.push(at(item.span().start).error(format!(
                                        "unknown modifier; expected one of {}",
                                        quoted_list(MODIFIER_NAMES.iter().map(|(n, _)| *n))
                                    )));
                                    return None;
                                }
                            }
                        }
                    }
                    ("modifiers", _) => {
                        errors.push(value_origin.error("expected a list such as [\"bold\"]"));
                        return None;
                    }
                    (other, _) => {
                        errors.push(at(field.span().start).error(format!(
                            "unknown style field `{other}`; expected fg, bg or modifiers"
                        )));
                        return None;
                    }
                }
            }
            Some(spec)
        }
        other => {
            errors.push(origin.error(format!("{expected}, found a {}", other.type_str())));
            None
        }
    }
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

fn resolve_palette(layers: &[&Layer], errors: &mut Vec<ConfigError>) -> BTreeMap<String, Color> {
    let mut names: Vec<&String> = layers
        .iter()
        .flat_map(|layer| layer.palette.keys())
        .collect();
    names.sort();
    names.dedup();
    let mut palette = BTreeMap::new();
    for name in names {
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
        if let Some(colour) = resolved {
            palette.insert(name.clone(), colour);
        }
    }
    palette
}

fn resolve_style(
    spec: &StyleSpec,
    palette: &BTreeMap<String, Color>,
) -> Result<Style, ConfigError> {
    let mut style = Style::new().add_modifier(spec.modifiers);
    if let Some(fg) = &spec.fg {
        style = style.fg(resolve_colour(fg, palette)?);
    }
    if let Some(bg) = &spec.bg {
        style = style.bg(resolve_colour(bg, palette)?);
    }
    Ok(style)
}

fn resolve_colour(
    colour: &Located<String>,
    palette: &BTreeMap<String, Color>,
) -> Result<Color, ConfigError> {
    palette
        .get(&colour.value)
        .copied()
        .or_else(|| plain_colour(&colour.value))
        .ok_or_else(|| {
            colour.origin.error(format!(
                "unknown colour {:?}; expected {COLOUR_FORMS}",
                colour.value
            ))
        })
}

fn resolve_rgb(
    colour: &Located<String>,
    palette: &BTreeMap<String, Color>,
) -> Result<Rgb, ConfigError> {
    let value = &colour.value;
    match palette.get(value).copied().or_else(|| hex_colour(value)) {
        Some(Color::Rgb(r, g, b)) => Ok(Rgb(r, g, b)),
        _ => Err(colour.origin.error(format!(
            "expected a colour as \"#rrggbb\" (or a palette name holding one), found {value:?}"
        ))),
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

fn role_mut<'a>(theme: &'a mut WidgetTheme, role: &str) -> Option<&'a mut Style> {
    Some(match role {
        "footer" => &mut theme.footer,
        "accent" => &mut theme.accent,
        "muted" => &mut theme.muted,
        "key_hint" => &mut theme.key_hint,
        "status.working" => &mut theme.status_working,
        "status.blocked" => &mut theme.status_blocked,
        "status.done" => &mut theme.status_done,
        "status.error" => &mut theme.status_error,
        "status.idle" => &mut theme.status_idle,
        "overlay.border" => &mut theme.overlay_border,
        "overlay.title" => &mut theme.overlay_title,
        "overlay.key" => &mut theme.overlay_key,
        "overlay.text" => &mut theme.overlay_text,
        "scrollback.badge" => &mut theme.scrollback_badge,
        "warning" => &mut theme.warning,
        "error" => &mut theme.error,
        _ => return None,
    })
}

/// xterm's default colours: what the terminal colours are if even the built-in theme lacks one.
fn fallback_terminal_colors() -> TerminalColors {
    TerminalColors {
        foreground: Rgb(0xe5, 0xe5, 0xe5),
        background: Rgb(0x00, 0x00, 0x00),
        palette: [
            Rgb(0x00, 0x00, 0x00),
            Rgb(0xcd, 0x00, 0x00),
            Rgb(0x00, 0xcd, 0x00),
            Rgb(0xcd, 0xcd, 0x00),
            Rgb(0x00, 0x00, 0xee),
            Rgb(0xcd, 0x00, 0xcd),
            Rgb(0x00, 0xcd, 0xcd),
            Rgb(0xe5, 0xe5, 0xe5),
            Rgb(0x7f, 0x7f, 0x7f),
            Rgb(0xff, 0x00, 0x00),
            Rgb(0x00, 0xff, 0x00),
            Rgb(0xff, 0xff, 0x00),
            Rgb(0x5c, 0x5c, 0xff),
            Rgb(0xff, 0x00, 0xff),
            Rgb(0x00, 0xff, 0xff),
            Rgb(0xff, 0xff, 0xff),
        ],
    }
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
