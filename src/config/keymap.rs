//! The workbench keymap: which keys (and chords) the workbench takes for itself, and the rule that
//! every other key goes to Pi unchanged. Bindings come from the embedded `keymaps/default.toml`
//! merged with the user's `keymap.toml` key by key, and are resolved through a small trie (helix's
//! keymap idea) so chords like `ctrl+g h` work: [`Keymap::feed`] answers matched, pending, or
//! not-ours-after-all with every key of the abandoned prefix, so the caller can forward them to Pi
//! in order. Keys are normalised first (crossterm reports Shift+A as `Char('A')` with or without
//! SHIFT, Shift+Tab as `BackTab`) so a binding written once matches however the terminal spells it.
//!
//! Every view owns a second kind of table ([`KeyTableSpec`]: `[dock]`, `[pager]`, a capability's
//! overlay): its keys apply only while that view has focus, so they live apart from the trie and
//! never shadow Pi's keys; they are single keys (views have no chord state), and a view builds its
//! hint line from its resolved [`KeyTable`], so a rebound key is also the key the view shows.
//! Defaults come from `keymaps/default.toml` and from the spec itself; the user's file is merged
//! over them the same way, with the same `file:line:col` errors.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use toml::de::{DeTable, DeValue};

use super::error::{self, BadValue, ConfigError};
use crate::capability::GlobalAction;

/// The embedded default keymap.
pub(crate) const DEFAULT_KEYMAP: &str = include_str!("../../keymaps/default.toml");

/// What a binding does: one of the app's own actions (the help, scrolling Pi's history, the
/// dock), or a capability's, declared in its registration and bound by its name. Keymap files
/// say the names ([`Action::name`]); F1 lists the app's first, in [`CORE_ACTIONS`] order, then
/// the capabilities' ([`crate::capability::global_actions`]).
#[derive(Clone, Copy, Debug)]
pub enum Action {
    Help,
    ScrollPageUp,
    ScrollPageDown,
    ScrollLineUp,
    ScrollLineDown,
    ScrollLive,
    /// Open the dock: the app's view over every capability's dock rows.
    Dock,
    /// A capability's action (the app offers it by name to [`Capability::action`]).
    ///
    /// [`Capability::action`]: crate::capability::Capability::action
    Global(&'static GlobalAction),
}

/// The app's own actions, each declared once: (action, name in keymap files, its line in F1), in
/// the order F1 lists them.
const CORE_ACTIONS: [(Action, &str, &str); 7] = [
    (Action::Help, "help", "Show these key bindings"),
    (
        Action::ScrollPageUp,
        "scroll.page_up",
        "Scroll Pi's output up a page",
    ),
    (
        Action::ScrollPageDown,
        "scroll.page_down",
        "Scroll Pi's output down a page",
    ),
    (
        Action::ScrollLineUp,
        "scroll.line_up",
        "Scroll Pi's output up a line",
    ),
    (
        Action::ScrollLineDown,
        "scroll.line_down",
        "Scroll Pi's output down a line",
    ),
    (Action::ScrollLive, "scroll.live", "Back to live output"),
    (Action::Dock, "dock", "Open the background-task dock"),
];

impl Action {
    /// Every action, in the order the help overlay lists them (gathered once: the
    /// registrations are static).
    pub fn all() -> &'static [Action] {
        static ALL: LazyLock<Vec<Action>> = LazyLock::new(|| {
            let core = CORE_ACTIONS.iter().map(|(action, _, _)| *action);
            let declared = crate::capability::global_actions()
                .into_iter()
                .map(Action::Global);
            core.chain(declared).collect()
        });
        &ALL
    }

    /// The stable name used in keymap files.
    pub fn name(self) -> &'static str {
        match self {
            Action::Global(action) => action.name,
            core => core.declared().map_or("", |(_, name, _)| name),
        }
    }

    /// One line for the help overlay.
    pub fn description(self) -> &'static str {
        match self {
            Action::Global(action) => action.description,
            core => core.declared().map_or("", |(_, _, what)| what),
        }
    }

    /// The action a keymap file names, if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::all()
            .iter()
            .copied()
            .find(|action| action.name() == name)
    }

    /// A core action's line in [`CORE_ACTIONS`] (every variant but `Global` has one).
    fn declared(self) -> Option<&'static (Action, &'static str, &'static str)> {
        CORE_ACTIONS.iter().find(|(action, _, _)| *action == self)
    }
}

/// Actions are the same when their names are (names are unique: checked by a test).
impl PartialEq for Action {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Action::Global(a), Action::Global(b)) => a.name == b.name,
            (Action::Global(_), _) | (_, Action::Global(_)) => false,
            (a, b) => std::mem::discriminant(a) == std::mem::discriminant(b),
        }
    }
}

impl Eq for Action {}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The key table of one view (the dock, the pager of read-only overlays, a capability's
/// overlay): the name of its table in keymap files, what F1 calls it, the actions it knows, and
/// its default keys. A view declares its table as a `static`; tables are single keys, never
/// chords, and apply only while their view has focus, so they never take a key from Pi.
#[derive(Debug)]
pub struct KeyTableSpec {
    /// The table's name in keymap files: `[dock]`.
    pub table: &'static str,
    /// What the help overlay calls the view.
    pub title: &'static str,
    /// Every action: (name in keymap files, what it does), in the order F1 lists them.
    pub actions: &'static [(&'static str, &'static str)],
    /// Default keys as (key, action name), beside any `[table]` in `keymaps/default.toml`.
    pub defaults: &'static [(&'static str, &'static str)],
}

impl KeyTableSpec {
    fn action(&self, name: &str) -> Option<&'static str> {
        self.actions
            .iter()
            .find(|(action, _)| *action == name)
            .map(|(action, _)| *action)
    }

    fn names(&self) -> String {
        name_list(self.actions.iter().map(|(name, _)| *name))
    }
}

/// Declares a view's key table in one place: the actions enum (with `name()`), its
/// [`TableAction`] impl and its [`KeyTableSpec`] static, from one list of
/// `Variant => "table.name", "what it does";` lines.
///
/// ```ignore
/// key_table! {
///     /// The `[list]` table.
///     pub static LIST_KEYS, pub enum ListAction,
///     table "list", title "The list overlay",
///     defaults [("r", "list.refresh"), ("esc", "list.close")],
///     actions {
///         Refresh => "list.refresh", "Refresh the selected row";
///         Close => "list.close", "Close the overlay";
///     }
/// }
/// ```
macro_rules! key_table {
    (
        $(#[$spec_meta:meta])* $spec_vis:vis static $spec:ident,
        $(#[$enum_meta:meta])* $enum_vis:vis enum $ty:ident,
        table $table:literal, title $title:literal,
        defaults [$(($key:literal, $default:literal)),* $(,)?],
        actions { $($(#[$variant_meta:meta])* $variant:ident => $name:literal, $what:literal;)* }
    ) => {
        $(#[$enum_meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        $enum_vis enum $ty {
            $($(#[$variant_meta])* $variant,)*
        }

        impl $ty {
            /// The action's name in keymap files.
            $enum_vis fn name(self) -> &'static str {
                match self {
                    $($ty::$variant => $name,)*
                }
            }
        }

        impl $crate::config::keymap::TableAction for $ty {
            const SPEC: &'static $crate::config::keymap::KeyTableSpec = &$spec;

            fn from_name(name: &str) -> Option<Self> {
                match name {
                    $($name => Some($ty::$variant),)*
                    _ => None,
                }
            }

            fn name(self) -> &'static str {
                $ty::name(self)
            }
        }

        $(#[$spec_meta])*
        $spec_vis static $spec: $crate::config::keymap::KeyTableSpec =
            $crate::config::keymap::KeyTableSpec {
                table: $table,
                title: $title,
                actions: &[$(($name, $what)),*],
                defaults: &[$(($key, $default)),*],
            };
    };
}
pub(crate) use key_table;

/// A view's actions as a Rust type: the view matches on it, the keymap resolves names to it.
pub trait TableAction: Copy + Eq + std::fmt::Debug + 'static {
    /// The table these actions belong to.
    const SPEC: &'static KeyTableSpec;
    fn from_name(name: &str) -> Option<Self>;
    fn name(self) -> &'static str;
}

/// The resolved keys of one view's table: the user's first, then the defaults in order, so the
/// first key of an action is the one a hint shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyTable<A> {
    bindings: Vec<(Key, A)>,
}

impl<A> Default for KeyTable<A> {
    fn default() -> Self {
        KeyTable {
            bindings: Vec::new(),
        }
    }
}

impl<A: TableAction> KeyTable<A> {
    /// The table `A` belongs to, as the keymap resolved it.
    pub fn from_keymap(keymap: &Keymap) -> Self {
        let bindings = keymap
            .tables
            .get(A::SPEC.table)
            .map(|bound| {
                bound
                    .iter()
                    .filter_map(|(key, name)| Some((*key, A::from_name(name)?)))
                    .collect()
            })
            .unwrap_or_default();
        KeyTable { bindings }
    }

    /// The action `event` is bound to, if any.
    pub fn action(&self, event: &KeyEvent) -> Option<A> {
        let key = Key::from_event(event);
        self.bindings
            .iter()
            .find(|(bound, _)| *bound == key)
            .map(|(_, action)| *action)
    }

    /// The key a hint or notice shows for `action` (`S`, `↑`, `Ctrl+Alt+C`); `None` when it is
    /// unbound.
    pub fn hint_key(&self, action: A) -> Option<String> {
        self.bindings
            .iter()
            .find(|(_, bound)| *bound == action)
            .map(|(key, _)| hint_display(key))
    }

    /// The table without the keys `drop` picks: a view where those keys mean something else
    /// for a while (a question that takes the user's words types its plain characters).
    pub fn without(&self, drop: impl Fn(&Key) -> bool) -> Self {
        KeyTable {
            bindings: self
                .bindings
                .iter()
                .filter(|(key, _)| !drop(key))
                .copied()
                .collect(),
        }
    }

    /// A hint line: for each (actions, what they do), the keys bound to them; a hint whose
    /// actions are all unbound is left out.
    pub fn hints(&self, table: &[(&[A], &str)]) -> Vec<(String, String)> {
        table
            .iter()
            .filter_map(|(actions, what)| {
                let keys: Vec<String> = actions.iter().filter_map(|a| self.hint_key(*a)).collect();
                (!keys.is_empty()).then(|| (join_hint_keys(&keys), (*what).to_owned()))
            })
            .collect()
    }

    /// The key of `close` as a hint shows it; Ctrl+C (which closes every overlay) when `close`
    /// is unbound.
    pub fn close_key(&self, close: A) -> String {
        self.hint_key(close).unwrap_or_else(|| "Ctrl+C".to_owned())
    }

    /// [`KeyTable::hints`] as one line of text: `↑/↓ select · Esc close`.
    pub fn hint_line(&self, table: &[(&[A], &str)]) -> String {
        self.hints(table)
            .into_iter()
            .map(|(keys, what)| format!("{keys} {what}"))
            .collect::<Vec<_>>()
            .join(" · ")
    }
}

/// One view's keys as the help overlay lists them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ViewKeysHelp {
    /// The table's name in keymap files.
    pub table: &'static str,
    pub title: &'static str,
    /// (keys, action name, what it does), in the table's action order; unbound actions are left
    /// out.
    pub rows: Vec<(String, &'static str, &'static str)>,
}

/// What one key did to the keymap.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeymapResult {
    /// The key completed a binding; the keys are consumed.
    Matched(Action),
    /// The key starts or continues a chord; hold it back from Pi for now.
    Pending,
    /// Not a workbench key: forward these events to Pi, in order (the held-back keys of an
    /// abandoned chord, then this one).
    NotFound(Vec<KeyEvent>),
}

/// One key with its modifiers, normalised so equal presses compare equal: letters are lowercase
/// with SHIFT when shifted, symbols carry no SHIFT (the symbol says it), Shift+Tab is Tab+SHIFT,
/// and only Ctrl/Alt/Shift/Super count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    pub code: KeyCode,
    pub modifiers: KeyModifiers,
}

impl Key {
    /// The normalised key of a terminal key event.
    pub fn from_event(event: &KeyEvent) -> Self {
        normalise(event.code, event.modifiers)
    }

    /// Parse one key in keymap notation: `f1`, `shift+pageup`, `ctrl+g`, `alt+?`.
    pub fn parse(text: &str) -> Result<Self, BadValue> {
        let mut modifiers = KeyModifiers::NONE;
        let mut rest = text;
        'prefixes: loop {
            for (prefix, modifier) in MODIFIER_NAMES {
                // `rest.len() > prefix.len()` keeps "ctrl++" meaning Ctrl and the "+" key.
                if rest.len() > prefix.len()
                    && rest.is_char_boundary(prefix.len())
                    && rest[..prefix.len()].eq_ignore_ascii_case(prefix)
                {
                    modifiers |= modifier;
                    rest = &rest[prefix.len()..];
                    continue 'prefixes;
                }
            }
            break;
        }
        let code = parse_code(rest, modifiers)?;
        Ok(normalise(code, modifiers))
    }

    /// A key that types a character where text is taken: a printable character other than
    /// Space, with no modifier but Shift.
    pub fn types_text(&self) -> bool {
        matches!(self.code, KeyCode::Char(c) if c != ' ' && !c.is_control())
            && (self.modifiers - KeyModifiers::SHIFT).is_empty()
    }

    /// The form shown to people: `Shift+PgUp`, `Ctrl+G`, `F1`, `Alt+?`.
    pub fn display(&self) -> String {
        let mut out = String::new();
        for (modifier, name) in MODIFIER_DISPLAY {
            if self.modifiers.contains(modifier) {
                out.push_str(name);
                out.push('+');
            }
        }
        match self.code {
            KeyCode::Char(c) if c != ' ' && self.modifiers.is_empty() => out.push(c),
            KeyCode::Char(c) if c != ' ' => out.extend(c.to_uppercase()),
            code => out.push_str(&code_name(code, true)),
        }
        out
    }
}

/// The keymap-file form: `shift+pageup`, `ctrl+g`, `f1`.
impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (modifier, name) in MODIFIER_DISPLAY {
            if self.modifiers.contains(modifier) {
                write!(f, "{}+", name.to_ascii_lowercase())?;
            }
        }
        f.write_str(&code_name(self.code, false))
    }
}

/// Parse a key sequence: keys separated by whitespace (`"ctrl+g h"`).
pub fn parse_sequence(text: &str) -> Result<Vec<Key>, BadValue> {
    let keys = text
        .split_whitespace()
        .map(Key::parse)
        .collect::<Result<Vec<_>, _>>()?;
    if keys.is_empty() {
        return Err("expected a key, e.g. \"f1\" or \"shift+pageup\"".into());
    }
    Ok(keys)
}

/// The display form of a key sequence: `Ctrl+G H`.
pub(crate) fn display_sequence(keys: &[Key]) -> String {
    keys.iter().map(Key::display).collect::<Vec<_>>().join(" ")
}

/// The resolved bindings plus the state of a half-typed chord.
#[derive(Clone, Debug, Default)]
pub struct Keymap {
    root: HashMap<Key, Node>,
    bindings: Vec<(Vec<Key>, Action)>,
    /// The keys of the chord typed so far, and the events to give back if it is abandoned
    /// (including releases and bare modifier presses that arrived meanwhile).
    pending: Vec<Key>,
    held: Vec<KeyEvent>,
    /// Every view's table by name: (key, action name), the user's keys first.
    tables: HashMap<&'static str, Vec<(Key, &'static str)>>,
}

impl Keymap {
    /// The built-in bindings only.
    pub fn defaults() -> Self {
        keymap_from_sources(None).0
    }

    /// Feed one key event. Presses and repeats walk the trie; releases and bare modifier keys
    /// never start or break a chord: alone they go straight to Pi, inside a chord they are held
    /// with it.
    pub fn feed(&mut self, event: &KeyEvent) -> KeymapResult {
        let passive =
            event.kind == KeyEventKind::Release || matches!(event.code, KeyCode::Modifier(_));
        if passive {
            if self.pending.is_empty() {
                return KeymapResult::NotFound(vec![*event]);
            }
            self.held.push(*event);
            return KeymapResult::Pending;
        }

        let key = Key::from_event(event);
        let step = self.children().and_then(|children| children.get(&key));
        match step {
            Some(Node::Leaf(action)) => {
                let action = *action;
                self.pending.clear();
                self.held.clear();
                KeymapResult::Matched(action)
            }
            Some(Node::Branch(_)) => {
                self.pending.push(key);
                self.held.push(*event);
                KeymapResult::Pending
            }
            None => {
                let mut events = self.cancel();
                events.push(*event);
                KeymapResult::NotFound(events)
            }
        }
    }

    /// True while a chord is half typed.
    pub fn is_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Abandon a half-typed chord (a timeout, focus loss) and return its events for Pi.
    pub fn cancel(&mut self) -> Vec<KeyEvent> {
        self.pending.clear();
        std::mem::take(&mut self.held)
    }

    /// Every binding as (display keys, action), grouped by action in [`Action::all`] order —
    /// what the help overlay lists. Within an action the user's keys come first, then the
    /// defaults in file order, so the first key is the one to show in a hint ("F1 help").
    pub fn bindings(&self) -> Vec<(String, Action)> {
        let order = Action::all();
        let rank = |action: &Action| order.iter().position(|known| known == action);
        let mut out: Vec<(String, Action)> = self
            .bindings
            .iter()
            .map(|(keys, action)| (display_sequence(keys), *action))
            .collect();
        // Stable: keeps insertion order (user file, then defaults) within each action.
        out.sort_by_key(|(_, action)| rank(action));
        out
    }

    /// The action `event` alone is bound to, if any (not the start of a chord).
    pub fn bound_alone(&self, event: &KeyEvent) -> Option<Action> {
        match self.root.get(&Key::from_event(event)) {
            Some(Node::Leaf(action)) => Some(*action),
            _ => None,
        }
    }

    /// The display keys bound to `action`, in the order of [`Keymap::bindings`]; empty when it is
    /// unbound. For hints such as "F1 help".
    pub fn keys_for(&self, action: Action) -> Vec<String> {
        self.bindings()
            .into_iter()
            .filter(|(_, bound)| *bound == action)
            .map(|(keys, _)| keys)
            .collect()
    }

    /// The key sequences bound to `action` (a single-key binding is a one-element sequence).
    pub fn sequences_for(&self, action: Action) -> Vec<Vec<Key>> {
        self.bindings
            .iter()
            .filter(|(_, bound)| *bound == action)
            .map(|(keys, _)| keys.clone())
            .collect()
    }

    /// Every view's keys for the help overlay, one entry per table, in `specs` order.
    pub(crate) fn views_help(&self, specs: &[&'static KeyTableSpec]) -> Vec<ViewKeysHelp> {
        specs
            .iter()
            .map(|spec| {
                let bound = self.tables.get(spec.table);
                let rows = spec
                    .actions
                    .iter()
                    .filter_map(|(action, what)| {
                        let keys: Vec<String> = bound?
                            .iter()
                            .filter(|(_, name)| name == action)
                            .map(|(key, _)| hint_display(key))
                            .collect();
                        (!keys.is_empty()).then(|| (join_hint_keys(&keys), *action, *what))
                    })
                    .collect();
                ViewKeysHelp {
                    table: spec.table,
                    title: spec.title,
                    rows,
                }
            })
            .collect()
    }

    /// The trie level under the pending keys (the root when nothing is pending).
    fn children(&self) -> Option<&HashMap<Key, Node>> {
        let mut level = &self.root;
        for key in &self.pending {
            match level.get(key) {
                Some(Node::Branch(next)) => level = next,
                _ => return None,
            }
        }
        Some(level)
    }
}

/// Load the keymap: the defaults, with `user_file` merged over them when it exists. Problems in
/// the user file are returned (and skipped), never fatal.
pub fn load_keymap(user_file: Option<&Path>) -> (Keymap, Vec<ConfigError>) {
    match error::read_user_file(user_file) {
        Ok(Some(text)) => {
            let path = user_file.unwrap_or(Path::new("keymap.toml"));
            keymap_from_sources(Some((path, &text)))
        }
        Ok(None) => keymap_from_sources(None),
        Err(err) => {
            let (keymap, mut errors) = keymap_from_sources(None);
            errors.insert(0, err);
            (keymap, errors)
        }
    }
}

/// Build a keymap from the defaults and an optional user file given as (path, contents).
pub fn keymap_from_sources(user: Option<(&Path, &str)>) -> (Keymap, Vec<ConfigError>) {
    let mut errors = Vec::new();
    let default_path = PathBuf::from("<built-in>/keymaps/default.toml");
    let defaults = parse_entries(&default_path, DEFAULT_KEYMAP, &mut errors);
    let user_entries = match user {
        Some((path, text)) => parse_entries(path, text, &mut errors),
        None => Entries::default(),
    };

    let mut keymap = Keymap::default();
    // User entries go in first so theirs win any conflict with a default; among the user's own
    // entries the earlier one in the file wins.
    let mut seen: HashSet<Vec<Key>> = HashSet::new();
    for entry in &user_entries.bindings {
        if !seen.insert(entry.keys.clone()) {
            errors.push(entry.error(format!(
                "{} is bound twice; keeping the first",
                display_sequence(&entry.keys)
            )));
            continue;
        }
        let Some(action) = entry.action else { continue };
        if let Err(other) = insert(&mut keymap, &entry.keys, action) {
            errors.push(entry.error(conflict_message(&entry.keys, &other)));
        }
    }
    let declared: Vec<Entry<'_, Action>> = declared_defaults();
    for entry in defaults.bindings.iter().chain(&declared) {
        if seen.contains(&entry.keys) {
            continue;
        }
        let Some(action) = entry.action else { continue };
        if let Err(other) = insert(&mut keymap, &entry.keys, action) {
            if user_entries.bindings.iter().any(|u| u.keys == other) {
                tracing::debug!(
                    "default binding {} dropped: your {} takes its keys",
                    display_sequence(&entry.keys),
                    display_sequence(&other)
                );
            } else {
                errors.push(entry.error(conflict_message(&entry.keys, &other)));
            }
        }
    }
    for spec in crate::capability::key_tables() {
        let from_code = spec_defaults(spec);
        let default_entries = defaults
            .tables
            .get(spec.table)
            .into_iter()
            .flatten()
            .chain(&from_code);
        let user = user_entries.tables.get(spec.table).into_iter().flatten();
        let bound = merge_table(spec.table, user, default_entries, &mut errors);
        keymap.tables.insert(spec.table, bound);
    }
    (keymap, errors)
}

/// The capabilities' actions' default keys as entries, merged after the file's. As for a view's
/// table, a declared key that does not parse is left out; a test parses every one, so that is a
/// bug caught before release.
fn declared_defaults() -> Vec<Entry<'static, Action>> {
    let source = Source {
        path: Path::new("<built-in action>"),
        text: "",
    };
    Action::all()
        .iter()
        .copied()
        .filter_map(|action| match action {
            Action::Global(declared) => Some((action, declared.keys)),
            _ => None,
        })
        .flat_map(|(action, keys)| {
            keys.iter().filter_map(move |key| {
                Some(Entry {
                    keys: parse_sequence(key).ok()?,
                    action: Some(action),
                    source,
                    offset: 0,
                })
            })
        })
        .collect()
}

/// A spec's default keys as entries (they are checked by a test, so an error here is a bug
/// caught before release; it is still reported rather than dropped).
fn spec_defaults(spec: &'static KeyTableSpec) -> Vec<Entry<'static, &'static str>> {
    let source = Source {
        path: Path::new("<built-in key table>"),
        text: "",
    };
    spec.defaults
        .iter()
        .filter_map(|(key, action)| {
            let keys = parse_sequence(key).ok()?;
            Some(Entry {
                keys,
                action: Some(spec.action(action)?),
                source,
                offset: 0,
            })
        })
        .collect()
}

/// One view table's bindings: the user's entries over the defaults key by key, as for
/// `[bindings]`. View keys are single keys, so there are no chord collisions to resolve.
fn merge_table<'e, 'a: 'e>(
    table: &str,
    user: impl Iterator<Item = &'e Entry<'a, &'static str>>,
    defaults: impl Iterator<Item = &'e Entry<'a, &'static str>>,
    errors: &mut Vec<ConfigError>,
) -> Vec<(Key, &'static str)> {
    let mut seen: HashSet<Key> = HashSet::new();
    let mut bindings = Vec::new();
    for (entry, from_user) in user
        .map(|entry| (entry, true))
        .chain(defaults.map(|entry| (entry, false)))
    {
        let [key] = entry.keys.as_slice() else {
            errors.push(entry.error(format!(
                "{}: [{table}] keys are single keys, not chords",
                display_sequence(&entry.keys)
            )));
            continue;
        };
        if !seen.insert(*key) {
            if from_user {
                errors.push(entry.error(format!(
                    "{} is bound twice; keeping the first",
                    key.display()
                )));
            }
            continue;
        }
        if let Some(action) = entry.action {
            bindings.push((*key, action));
        }
    }
    bindings
}

#[derive(Clone, Debug)]
enum Node {
    Leaf(Action),
    Branch(HashMap<Key, Node>),
}

/// One `"keys" = "action"` line of a keymap file; `action: None` is `"none"` (unbind).
struct Entry<'a, A> {
    keys: Vec<Key>,
    action: Option<A>,
    source: Source<'a>,
    offset: usize,
}

impl<A> Entry<'_, A> {
    fn error(&self, message: String) -> ConfigError {
        self.source.error_at(self.offset, message)
    }
}

const MODIFIER_NAMES: [(&str, KeyModifiers); 5] = [
    ("ctrl+", KeyModifiers::CONTROL),
    ("control+", KeyModifiers::CONTROL),
    ("alt+", KeyModifiers::ALT),
    ("shift+", KeyModifiers::SHIFT),
    ("super+", KeyModifiers::SUPER),
];

const MODIFIER_DISPLAY: [(KeyModifiers, &str); 4] = [
    (KeyModifiers::CONTROL, "Ctrl"),
    (KeyModifiers::ALT, "Alt"),
    (KeyModifiers::SHIFT, "Shift"),
    (KeyModifiers::SUPER, "Super"),
];

/// Named keys: (file names, the first one canonical; display name; code).
const NAMED_KEYS: [(&[&str], &str, KeyCode); 15] = [
    (&["esc", "escape"], "Esc", KeyCode::Esc),
    (&["enter", "return"], "Enter", KeyCode::Enter),
    (&["tab"], "Tab", KeyCode::Tab),
    (&["space"], "Space", KeyCode::Char(' ')),
    (&["backspace"], "Backspace", KeyCode::Backspace),
    (&["delete", "del"], "Del", KeyCode::Delete),
    (&["insert", "ins"], "Ins", KeyCode::Insert),
    (&["home"], "Home", KeyCode::Home),
    (&["end"], "End", KeyCode::End),
    (&["pageup", "pgup"], "PgUp", KeyCode::PageUp),
    (&["pagedown", "pgdn"], "PgDn", KeyCode::PageDown),
    (&["up"], "Up", KeyCode::Up),
    (&["down"], "Down", KeyCode::Down),
    (&["left"], "Left", KeyCode::Left),
    (&["right"], "Right", KeyCode::Right),
];

/// The entries of one keymap file, per table, each in file order.
#[derive(Default)]
struct Entries<'a> {
    bindings: Vec<Entry<'a, Action>>,
    /// View tables by name; actions by their name in the table's spec.
    tables: HashMap<&'static str, Vec<Entry<'a, &'static str>>>,
}

/// What a keymap file may hold: `[bindings]` and one table per view.
fn expected_tables(specs: &[&'static KeyTableSpec]) -> String {
    let mut names: Vec<String> = specs.iter().map(|s| format!("[{}]", s.table)).collect();
    names.sort();
    format!(
        "expected a [bindings] table or a view's table: {}",
        names.join(", ")
    )
}

fn normalise(code: KeyCode, modifiers: KeyModifiers) -> Key {
    let mut modifiers = modifiers
        & (KeyModifiers::SHIFT | KeyModifiers::CONTROL | KeyModifiers::ALT | KeyModifiers::SUPER);
    let code = match code {
        KeyCode::Char(c) if c.is_alphabetic() => {
            let mut lower = c.to_lowercase();
            match (lower.next(), lower.next()) {
                (Some(l), None) if l != c => {
                    modifiers |= KeyModifiers::SHIFT;
                    KeyCode::Char(l)
                }
                _ => KeyCode::Char(c),
            }
        }
        KeyCode::Char(c) if !c.is_whitespace() => {
            // The terminal already applied Shift to make the symbol; some report SHIFT as well.
            modifiers.remove(KeyModifiers::SHIFT);
            KeyCode::Char(c)
        }
        KeyCode::BackTab => {
            modifiers |= KeyModifiers::SHIFT;
            KeyCode::Tab
        }
        code => code,
    };
    Key { code, modifiers }
}

fn parse_code(name: &str, modifiers: KeyModifiers) -> Result<KeyCode, BadValue> {
    let mut chars = name.chars();
    if let (Some(c), None) = (chars.next(), chars.next()) {
        if !c.is_alphanumeric() && !c.is_whitespace() && modifiers.contains(KeyModifiers::SHIFT) {
            return Err(format!(
                "\"shift+{c}\": write the shifted symbol itself (e.g. \"?\" rather than \"shift+/\")"
            )
            .into());
        }
        if c.is_control() || c.is_whitespace() {
            return Err(format!("unknown key {name:?}; write \"space\", \"tab\", …").into());
        }
        return Ok(KeyCode::Char(c));
    }
    let lower = name.to_ascii_lowercase();
    if let Some((_, _, code)) = NAMED_KEYS
        .iter()
        .find(|(names, _, _)| names.contains(&lower.as_str()))
    {
        return Ok(*code);
    }
    if lower == "backtab" {
        return Ok(KeyCode::BackTab);
    }
    let function = lower.strip_prefix('f').and_then(|n| n.parse::<u8>().ok());
    if let Some(n) = function.filter(|n| (1..=24).contains(n)) {
        return Ok(KeyCode::F(n));
    }
    if name.is_empty() {
        return Err("expected a key after the modifiers".into());
    }
    Err(format!(
        "unknown key {name:?}; expected a letter, digit or symbol, f1-f24, or one of esc, enter, \
         tab, space, backspace, delete, insert, home, end, pageup, pagedown, up, down, left, right"
    )
    .into())
}

/// The name of a non-letter key, for people (`display`) or for keymap files.
fn code_name(code: KeyCode, display: bool) -> String {
    if let Some((names, shown, _)) = NAMED_KEYS.iter().find(|(_, _, c)| *c == code) {
        return if display {
            (*shown).to_owned()
        } else {
            names[0].to_owned()
        };
    }
    match code {
        KeyCode::F(n) if display => format!("F{n}"),
        KeyCode::F(n) => format!("f{n}"),
        KeyCode::Char(c) => c.to_string(),
        other => format!("{other:?}").to_lowercase(),
    }
}

/// Read the `[bindings]` and view-table entries of one keymap file, reporting what is wrong
/// and skipping it.
fn parse_entries<'a>(path: &'a Path, text: &'a str, errors: &mut Vec<ConfigError>) -> Entries<'a> {
    let mut entries = Entries::default();
    let document = match DeTable::parse(text) {
        Ok(document) => document,
        Err(err) => {
            errors.push(error::from_toml(path, text, &err));
            return entries;
        }
    };
    let specs = crate::capability::key_tables();
    let source = Source { path, text };
    for (section, value) in document.get_ref() {
        let name: &str = section.get_ref();
        let spec = specs.iter().find(|spec| spec.table == name);
        if name != "bindings" && spec.is_none() {
            let message = format!("unknown table `{name}`: {}", expected_tables(&specs));
            errors.push(source.error_at(section.span().start, message));
            continue;
        }
        let DeValue::Table(table) = value.get_ref() else {
            let message = format!("`{name}` must be a table: {}", expected_tables(&specs));
            errors.push(source.error_at(value.span().start, message));
            continue;
        };
        match spec {
            Some(spec) => {
                let mut parsed = parse_table(
                    source,
                    table,
                    |name| spec.action(name),
                    || spec.names(),
                    errors,
                );
                parsed.sort_by_key(|entry| entry.offset);
                entries.tables.entry(spec.table).or_default().extend(parsed);
            }
            None => {
                let known = Action::all();
                let names = || name_list(known.iter().map(|a| a.name()));
                entries.bindings.extend(parse_table(
                    source,
                    table,
                    Action::from_name,
                    names,
                    errors,
                ));
            }
        }
    }
    // The TOML map is ordered by key; "first in the file wins" needs file order.
    entries.bindings.sort_by_key(|entry| entry.offset);
    entries
}

#[derive(Clone, Copy)]
struct Source<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Source<'_> {
    fn error_at(self, offset: usize, message: String) -> ConfigError {
        ConfigError::at(self.path, self.text, offset, message)
    }
}

/// Read the `"keys" = "action"` lines of one table; `from_name` resolves the action names this
/// table knows, `names` lists them for the error.
fn parse_table<'a, A>(
    source: Source<'a>,
    table: &DeTable<'_>,
    from_name: impl Fn(&str) -> Option<A>,
    names: impl Fn() -> String,
    errors: &mut Vec<ConfigError>,
) -> Vec<Entry<'a, A>> {
    let mut entries = Vec::new();
    for (keys, action) in table {
        let offset = keys.span().start;
        let parsed_keys = match parse_sequence(keys.get_ref()) {
            Ok(parsed) => parsed,
            Err(BadValue(message)) => {
                errors.push(source.error_at(offset, message));
                continue;
            }
        };
        let action = match action.get_ref() {
            DeValue::String(name) if name == "none" => None,
            DeValue::String(name) => match from_name(name) {
                Some(action) => Some(action),
                None => {
                    let message = format!("unknown action {:?}; expected {}", name, names());
                    errors.push(source.error_at(action.span().start, message));
                    continue;
                }
            },
            other => {
                let message = format!(
                    "expected an action name in quotes, found a {}",
                    other.type_str()
                );
                errors.push(source.error_at(action.span().start, message));
                continue;
            }
        };
        entries.push(Entry {
            keys: parsed_keys,
            action,
            source,
            offset,
        });
    }
    entries
}

fn name_list<'n>(names: impl Iterator<Item = &'n str>) -> String {
    let mut names: Vec<String> = names.map(|name| format!("\"{name}\"")).collect();
    names.push("\"none\"".to_owned());
    names.join(", ")
}

/// A key as a dock hint shows it: arrows as glyphs, a shifted letter as the capital (`S`, not
/// `Shift+S`), anything else as [`Key::display`].
fn hint_display(key: &Key) -> String {
    match (key.code, key.modifiers) {
        (KeyCode::Up, KeyModifiers::NONE) => "↑".to_owned(),
        (KeyCode::Down, KeyModifiers::NONE) => "↓".to_owned(),
        (KeyCode::Left, KeyModifiers::NONE) => "←".to_owned(),
        (KeyCode::Right, KeyModifiers::NONE) => "→".to_owned(),
        (KeyCode::Char(c), KeyModifiers::SHIFT) if c.is_alphabetic() => c.to_uppercase().collect(),
        _ => key.display(),
    }
}

/// Keys of one hint joined by spaces, except that arrow glyphs run together (`↑↓ PgUp PgDn`,
/// `←↑↓→`).
fn join_hint_keys(keys: &[String]) -> String {
    let is_arrow = |key: &str| matches!(key, "↑" | "↓" | "←" | "→");
    let mut out = String::new();
    for (index, key) in keys.iter().enumerate() {
        if index > 0 && !(is_arrow(key) && is_arrow(&keys[index - 1])) {
            out.push(' ');
        }
        out.push_str(key);
    }
    out
}

/// Add a binding to the trie, or return the keys of the binding it collides with: one that is a
/// prefix of these keys, or that these keys are a prefix of.
fn insert(keymap: &mut Keymap, keys: &[Key], action: Action) -> Result<(), Vec<Key>> {
    let collision = keymap.bindings.iter().find(|(bound, _)| {
        let shorter = bound.len().min(keys.len());
        bound[..shorter] == keys[..shorter]
    });
    if let Some((bound, _)) = collision {
        return Err(bound.clone());
    }
    let Some((last, path)) = keys.split_last() else {
        return Ok(());
    };
    let mut level = &mut keymap.root;
    for key in path {
        let node = level
            .entry(*key)
            .or_insert_with(|| Node::Branch(HashMap::new()));
        level = match node {
            Node::Branch(next) => next,
            // Ruled out by the collision check above: no bound sequence is a prefix of `keys`.
            Node::Leaf(_) => return Err(keys.to_vec()),
        };
    }
    level.insert(*last, Node::Leaf(action));
    keymap.bindings.push((keys.to_vec(), action));
    Ok(())
}

fn conflict_message(keys: &[Key], other: &[Key]) -> String {
    if keys == other {
        format!(
            "{} is bound twice; keeping the first",
            display_sequence(keys)
        )
    } else if other.len() < keys.len() {
        format!(
            "{} cannot be a chord: {} alone is already bound",
            display_sequence(keys),
            display_sequence(other)
        )
    } else {
        format!(
            "{} cannot be bound alone: it starts the chord {}",
            display_sequence(keys),
            display_sequence(other)
        )
    }
}

#[cfg(test)]
// A panic is how a test reports failure; the workspace denies unwrap for non-test code.
mod tests {
    use super::*;
    use crate::test_table::{check_errors, check_table};
    use crate::views::test_keys::{
        assert_each_reports_one_error, assert_unbound, press, with_user,
    };

    fn release(text: &str) -> KeyEvent {
        KeyEvent {
            kind: KeyEventKind::Release,
            ..press(text)
        }
    }

    /// Feed a sequence of presses and return the last result.
    fn feed_all(keymap: &mut Keymap, keys: &str) -> KeymapResult {
        let mut last = KeymapResult::Pending;
        for key in keys.split_whitespace() {
            last = keymap.feed(&press(key));
        }
        last
    }

    #[test]
    fn defaults_leave_tmux_prefix_and_plain_typing_to_pi() {
        let mut keymap = Keymap::defaults();
        assert_unbound(
            &mut keymap,
            &[
                "ctrl+b", "a", "A", "?", "enter", "esc", "pageup", "up", "shift+up", "ctrl+g",
            ],
        );
    }

    #[test]
    fn action_names_round_trip() {
        let all = Action::all();
        for action in all {
            assert_eq!(Action::from_name(action.name()), Some(*action));
            assert!(!action.description().is_empty());
            let same_name = all.iter().filter(|a| a.name() == action.name()).count();
            assert_eq!(same_name, 1, "{action} is declared once");
        }
        assert_eq!(Action::from_name("scroll"), None);
    }

    #[test]
    fn key_parse_table() {
        let cases = [
            ("f1", KeyCode::F(1), KeyModifiers::NONE),
            ("F12", KeyCode::F(12), KeyModifiers::NONE),
            ("shift+pageup", KeyCode::PageUp, KeyModifiers::SHIFT),
            ("Shift+PageDown", KeyCode::PageDown, KeyModifiers::SHIFT),
            ("shift+pgdn", KeyCode::PageDown, KeyModifiers::SHIFT),
            ("ctrl+g", KeyCode::Char('g'), KeyModifiers::CONTROL),
            ("control+g", KeyCode::Char('g'), KeyModifiers::CONTROL),
            (
                "alt+shift+up",
                KeyCode::Up,
                KeyModifiers::ALT.union(KeyModifiers::SHIFT),
            ),
            ("shift+a", KeyCode::Char('a'), KeyModifiers::SHIFT),
            ("A", KeyCode::Char('a'), KeyModifiers::SHIFT),
            ("alt+?", KeyCode::Char('?'), KeyModifiers::ALT),
            ("ctrl++", KeyCode::Char('+'), KeyModifiers::CONTROL),
            ("+", KeyCode::Char('+'), KeyModifiers::NONE),
            ("space", KeyCode::Char(' '), KeyModifiers::NONE),
            ("shift+tab", KeyCode::Tab, KeyModifiers::SHIFT),
            ("backtab", KeyCode::Tab, KeyModifiers::SHIFT),
            ("super+k", KeyCode::Char('k'), KeyModifiers::SUPER),
            ("esc", KeyCode::Esc, KeyModifiers::NONE),
            ("Escape", KeyCode::Esc, KeyModifiers::NONE),
        ];
        for (text, code, modifiers) in cases {
            assert_eq!(Key::parse(text), Ok(Key { code, modifiers }), "{text}");
        }
    }

    #[test]
    fn key_parse_errors_say_what_was_expected() {
        let cases = [
            ("shift+/", "write the shifted symbol itself"),
            ("hyper+x", "unknown key \"hyper+x\""),
            ("ctrl+", "unknown key \"ctrl+\""),
            ("f25", "unknown key \"f25\""),
            ("pagee", "expected a letter, digit or symbol"),
        ];
        check_errors(cases, |text| Key::parse(text));
        assert!(
            parse_sequence("   ")
                .unwrap_err()
                .0
                .contains("expected a key")
        );
    }

    #[test]
    fn events_normalise_to_the_same_key_as_the_notation() {
        let shift = KeyModifiers::SHIFT;
        let cases = [
            (
                KeyEvent::new(KeyCode::Char('A'), KeyModifiers::NONE),
                "shift+a",
            ),
            (KeyEvent::new(KeyCode::Char('A'), shift), "shift+a"),
            (KeyEvent::new(KeyCode::Char('a'), shift), "shift+a"),
            (
                KeyEvent::new(KeyCode::Char('G'), KeyModifiers::CONTROL),
                "ctrl+shift+g",
            ),
            (KeyEvent::new(KeyCode::BackTab, shift), "shift+tab"),
            (
                KeyEvent::new(KeyCode::BackTab, KeyModifiers::NONE),
                "shift+tab",
            ),
            (KeyEvent::new(KeyCode::Char('?'), shift), "?"),
            (
                KeyEvent::new(KeyCode::Char('?'), shift | KeyModifiers::ALT),
                "alt+?",
            ),
            (KeyEvent::new(KeyCode::Char(' '), shift), "shift+space"),
            (
                KeyEvent::new(
                    KeyCode::Char('g'),
                    KeyModifiers::CONTROL | KeyModifiers::HYPER,
                ),
                "ctrl+g",
            ),
            (KeyEvent::new(KeyCode::PageUp, shift), "shift+pageup"),
        ];
        for (event, text) in cases {
            assert_eq!(
                Key::from_event(&event),
                Key::parse(text).unwrap(),
                "{event:?} vs {text}"
            );
        }
    }

    #[test]
    fn keys_that_type_text_table() {
        let cases = [
            ("n", true),
            ("A", true),
            ("7", true),
            ("?", true),
            ("ä", true),
            ("space", false),
            ("tab", false),
            ("enter", false),
            ("down", false),
            ("ctrl+n", false),
            ("alt+1", false),
            ("ctrl+shift+g", false),
        ];
        for (text, types) in cases {
            assert_eq!(Key::parse(text).unwrap().types_text(), types, "{text}");
        }
    }

    #[test]
    fn key_display_and_file_form_table() {
        let cases = [
            ("shift+pageup", "Shift+PgUp", "shift+pageup"),
            ("shift+pgdn", "Shift+PgDn", "shift+pagedown"),
            ("f1", "F1", "f1"),
            ("alt+?", "Alt+?", "alt+?"),
            ("ctrl+g", "Ctrl+G", "ctrl+g"),
            ("h", "h", "h"),
            ("A", "Shift+A", "shift+a"),
            ("alt+shift+down", "Alt+Shift+Down", "alt+shift+down"),
            ("ctrl+space", "Ctrl+Space", "ctrl+space"),
            ("shift+tab", "Shift+Tab", "shift+tab"),
        ];
        for (text, shown, file_form) in cases {
            let key = Key::parse(text).unwrap();
            assert_eq!(key.display(), shown, "{text}");
            assert_eq!(key.to_string(), file_form, "{text}");
            assert_eq!(Key::parse(&key.to_string()), Ok(key), "{text} round trip");
        }
        assert_eq!(
            display_sequence(&parse_sequence("ctrl+g  h").unwrap()),
            "Ctrl+G h"
        );
    }

    #[test]
    fn chords_match_pend_and_give_back_abandoned_keys() {
        let (mut keymap, errors) =
            with_user("[bindings]\n\"ctrl+g h\" = \"help\"\n\"ctrl+g d d\" = \"dock\"\n");
        assert!(errors.is_empty(), "{errors:?}");

        assert_eq!(keymap.feed(&press("ctrl+g")), KeymapResult::Pending);
        assert!(keymap.is_pending());
        assert_eq!(
            keymap.feed(&press("h")),
            KeymapResult::Matched(Action::Help)
        );
        assert!(!keymap.is_pending());

        assert_eq!(
            feed_all(&mut keymap, "ctrl+g d d"),
            KeymapResult::Matched(Action::Dock)
        );

        // A key that does not continue the chord sends the whole prefix on, in order.
        assert_eq!(keymap.feed(&press("ctrl+g")), KeymapResult::Pending);
        assert_eq!(keymap.feed(&press("d")), KeymapResult::Pending);
        assert_eq!(
            keymap.feed(&press("x")),
            KeymapResult::NotFound(vec![press("ctrl+g"), press("d"), press("x")])
        );
        assert!(!keymap.is_pending());

        // Even a key that is bound on its own ends the chord and goes along with it.
        assert_eq!(keymap.feed(&press("ctrl+g")), KeymapResult::Pending);
        assert_eq!(
            keymap.feed(&press("f1")),
            KeymapResult::NotFound(vec![press("ctrl+g"), press("f1")])
        );
    }

    #[test]
    fn releases_and_modifier_keys_neither_start_nor_break_chords() {
        let (mut keymap, _) = with_user("[bindings]\n\"ctrl+g h\" = \"help\"\n");
        assert_eq!(
            keymap.feed(&release("f1")),
            KeymapResult::NotFound(vec![release("f1")])
        );

        assert_eq!(keymap.feed(&press("ctrl+g")), KeymapResult::Pending);
        assert_eq!(keymap.feed(&release("ctrl+g")), KeymapResult::Pending);
        let shift = KeyEvent::new(
            KeyCode::Modifier(crossterm::event::ModifierKeyCode::LeftShift),
            KeyModifiers::SHIFT,
        );
        assert_eq!(keymap.feed(&shift), KeymapResult::Pending);
        assert_eq!(
            keymap.feed(&press("x")),
            KeymapResult::NotFound(vec![press("ctrl+g"), release("ctrl+g"), shift, press("x")])
        );

        assert_eq!(keymap.feed(&press("ctrl+g")), KeymapResult::Pending);
        assert_eq!(keymap.feed(&release("ctrl+g")), KeymapResult::Pending);
        assert_eq!(keymap.cancel(), vec![press("ctrl+g"), release("ctrl+g")]);
        assert!(!keymap.is_pending());
        assert_eq!(keymap.cancel(), vec![]);
    }

    #[test]
    fn repeats_match_like_presses() {
        let mut keymap = Keymap::defaults();
        let repeat = KeyEvent {
            kind: KeyEventKind::Repeat,
            ..press("shift+pageup")
        };
        assert_eq!(
            keymap.feed(&repeat),
            KeymapResult::Matched(Action::ScrollPageUp)
        );
    }

    #[test]
    fn user_file_merges_key_by_key() {
        let (mut keymap, errors) = with_user(
            r#"
            [bindings]
            "f1" = "dock"            # replaces the default for F1
            "shift+down" = "none"    # unbinds
            "f2" = "help"            # adds a key; Alt+? keeps working
            "Shift+PgUp" = "scroll.line_up"
            "#,
        );
        assert!(errors.is_empty(), "{errors:?}");
        let cases = [
            ("f1", KeymapResult::Matched(Action::Dock)),
            ("f2", KeymapResult::Matched(Action::Help)),
            ("alt+?", KeymapResult::Matched(Action::Help)),
            ("shift+pageup", KeymapResult::Matched(Action::ScrollLineUp)),
            (
                "shift+pagedown",
                KeymapResult::Matched(Action::ScrollPageDown),
            ),
            (
                "shift+down",
                KeymapResult::NotFound(vec![press("shift+down")]),
            ),
        ];
        check_table(cases, |key| keymap.feed(&press(key)));
        assert_eq!(keymap.keys_for(Action::Dock), ["F1"]);
        // The user's key comes first, so hints show it.
        assert_eq!(keymap.keys_for(Action::Help), ["F2", "Alt+?"]);
    }

    #[test]
    fn user_chord_wins_over_a_default_it_collides_with() {
        let (mut keymap, errors) = with_user("[bindings]\n\"shift+down t\" = \"dock\"\n");
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(
            feed_all(&mut keymap, "shift+down t"),
            KeymapResult::Matched(Action::Dock)
        );
        assert_eq!(keymap.keys_for(Action::Dock), ["Shift+Down t"]);
    }

    #[test]
    fn bad_entries_are_reported_at_their_line_and_skipped() {
        let cases: [(&str, &str); 8] = [
            (
                "[bindings]\n\"f2\" = \"hepl\"\n",
                "/cfg/keymap.toml:2:8: unknown action \"hepl\"; expected \"help\", \"scroll.page_up\"",
            ),
            (
                "[bindings]\n  \"shift+pagee\" = \"help\"\n",
                "/cfg/keymap.toml:2:3: unknown key \"pagee\"",
            ),
            (
                "[bindings]\n\"f2\" = 3\n",
                "/cfg/keymap.toml:2:8: expected an action name in quotes, found a integer",
            ),
            (
                "[bindings]\n\"f2\" = \"help\"\n\"F2\" = \"dock\"\n",
                "/cfg/keymap.toml:3:1: F2 is bound twice; keeping the first",
            ),
            (
                "[bindings]\n\"ctrl+g\" = \"help\"\n\"ctrl+g h\" = \"dock\"\n",
                "/cfg/keymap.toml:3:1: Ctrl+G h cannot be a chord: Ctrl+G alone is already bound",
            ),
            (
                "[bindings]\n\"ctrl+g h\" = \"help\"\n\"ctrl+g\" = \"dock\"\n",
                "/cfg/keymap.toml:3:1: Ctrl+G cannot be bound alone: it starts the chord Ctrl+G h",
            ),
            (
                "[keys]\n\"f2\" = \"help\"\n",
                "/cfg/keymap.toml:1:2: unknown table `keys`: expected a [bindings] table or a view's table: [",
            ),
            (
                "bindings = 1\n",
                "/cfg/keymap.toml:1:12: `bindings` must be a table: expected a [bindings] table or a view's table: [",
            ),
        ];
        // The defaults still work.
        assert_each_reports_one_error(&cases, |mut keymap| {
            assert_eq!(
                keymap.feed(&press("shift+pageup")),
                KeymapResult::Matched(Action::ScrollPageUp)
            );
        });
    }

    #[test]
    fn good_entries_survive_a_bad_neighbour() {
        let (mut keymap, errors) = with_user("[bindings]\n\"f2\" = \"nope\"\n\"f3\" = \"help\"\n");
        assert_eq!(errors.len(), 1);
        assert_eq!(
            keymap.feed(&press("f3")),
            KeymapResult::Matched(Action::Help)
        );
        assert_unbound(&mut keymap, &["f2"]);
    }

    #[test]
    fn toml_syntax_error_keeps_the_defaults() {
        let (mut keymap, errors) = with_user("[bindings]\nshift+pageup = \"help\"\n");
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0].starts_with("/cfg/keymap.toml:2:"),
            "{}",
            errors[0]
        );
        assert!(errors[0].contains("invalid TOML"), "{}", errors[0]);
        assert!(errors[0].contains("put keys in quotes"), "{}", errors[0]);
        assert_eq!(
            keymap.feed(&press("f1")),
            KeymapResult::Matched(Action::Help)
        );
    }

    #[test]
    fn load_keymap_reads_the_user_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keymap.toml");

        let (keymap, errors) = load_keymap(Some(&path));
        assert!(
            errors.is_empty(),
            "a missing file is not an error: {errors:?}"
        );
        assert_eq!(keymap.bindings(), Keymap::defaults().bindings());

        std::fs::write(&path, "[bindings]\n\"f1\" = \"none\"\n\"f5\" = \"bogus\"\n").unwrap();
        let (mut keymap, errors) = load_keymap(Some(&path));
        error::assert_one_error_at(&errors, &path, "3:8: unknown action \"bogus\"");
        assert_unbound(&mut keymap, &["f1"]);

        let (keymap, errors) = load_keymap(Some(dir.path()));
        assert!(
            matches!(errors.as_slice(), [ConfigError::Unreadable { .. }]),
            "{errors:?}"
        );
        assert_eq!(keymap.bindings(), Keymap::defaults().bindings());
    }
}
