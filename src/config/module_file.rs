//! The one way a module's JSON config file (`.unipi/config/<name>.json`) becomes its config
//! ([`ModuleConfig`]): the defaults, then the home file, then the workspace file, which wins key
//! by key. Each module says only what its keys are, one line each, through an [`Object`]: the
//! key, what its value must be, and where it goes. The rest is here once: a file that cannot be
//! read or is not a JSON object, a value of the wrong kind and a key nobody asked for become a
//! [`ConfigError`] at the file, line and column of the key (or its value), worded the module's
//! way ([`Style`]), and what was there before stays. A settings save reads the file back as an
//! object to merge into ([`read_json_object`]).

use std::path::Path;

use serde_json::{Map, Value};

use super::ConfigError;
use super::json::Doc;

/// A module's config read from its JSON file: say what the keys are ([`ModuleConfig::read`]);
/// loading, merging and the errors come with it.
pub trait ModuleConfig: Default + Sized {
    /// The file, relative to the home directory and to the workspace.
    const FILE: &'static str;
    /// How its problems are worded and ordered.
    const STYLE: Style = Style::BACKTICKS;
    /// Whether a file that is not JSON (or not an object) is reported here; `false` when the
    /// file is another module's, which reports it.
    const OWNS_FILE: bool = true;
    /// The original Unipi's files of this module, read before [`ModuleConfig::FILE`] (each home,
    /// then workspace), so ours wins where both set a key; [`ModuleConfig::read`] tells them by
    /// [`Object::path`].
    const UNIPI_FILES: &'static [&'static str] = &[];
    /// The object under `unipi` in Pi's `settings.json` where the original Unipi kept this
    /// module's settings (`askUser`), read first of all and given to [`ModuleConfig::read`].
    const PI_SETTINGS_KEY: Option<&'static str> = None;

    /// One file's keys over the config read so far.
    fn read(&mut self, file: &mut Object<'_>);

    /// After every file was read (lowest precedence first): checks across keys and files.
    fn finish(&mut self, _files: &[Doc<'_>], _errors: &mut Vec<ConfigError>) {}

    /// The defaults, then Pi's `settings.json` (with a [`ModuleConfig::PI_SETTINGS_KEY`]), then
    /// each of [`ModuleConfig::UNIPI_FILES`] and `FILE`: `<home>/…`, then `<workspace>/…` (read
    /// once when both are the same file); the files that could not be read are reported first.
    fn load(home: Option<&Path>, workspace: &Path) -> (Self, Vec<ConfigError>) {
        let mut sources = Vec::new();
        let mut errors = Vec::new();
        if let Some(file) =
            super::pi_settings_file(home).filter(|_| Self::PI_SETTINGS_KEY.is_some())
        {
            // Pi's own file: Pi reports what is wrong with it, not each module again.
            if let Ok(Some(text)) = super::error::read_user_file(Some(&file)) {
                sources.push((file, text));
            }
        }
        for file in Self::UNIPI_FILES.iter().chain([&Self::FILE]) {
            let (found, failed) = super::read_module_config(home, workspace, file);
            sources.extend(found);
            errors.extend(failed);
        }
        let (config, more) = Self::from_sources(&sources);
        errors.extend(more);
        (config, errors)
    }

    /// The start notice when one of our files and one of the original Unipi's for this module
    /// are both there: which of ours is used over which of theirs (ours wins where both set a
    /// key). `None` when only one side, or neither, has a file.
    fn unipi_notice(home: Option<&Path>, workspace: &Path) -> Option<String> {
        let in_bases = |relative: &'static str| {
            let bases = home.into_iter().chain([workspace]);
            bases
                .map(move |base| base.join(relative))
                .filter(|file| file.is_file())
        };
        let ours = in_bases(Self::FILE).next_back()?;
        let settings = Self::PI_SETTINGS_KEY.and_then(|key| {
            let file = super::pi_settings_file(home)?;
            let text = std::fs::read_to_string(&file).ok()?;
            let value: Value = serde_json::from_str(&text).ok()?;
            value.get("unipi")?.get(key)?;
            Some(format!("unipi.{key} in {}", file.display()))
        });
        let files = Self::UNIPI_FILES
            .iter()
            .flat_map(|&relative| in_bases(relative));
        let theirs: Vec<String> = settings
            .into_iter()
            .chain(files.map(|file| file.display().to_string()))
            .collect();
        (!theirs.is_empty()).then(|| {
            format!(
                "{} is used over Unipi's {} where both set a key",
                ours.display(),
                theirs.join(" and ")
            )
        })
    }

    /// The config from (path, text) pairs, lowest precedence first.
    fn from_sources(sources: &[(impl AsRef<Path>, impl AsRef<str>)]) -> (Self, Vec<ConfigError>) {
        let mut config = Self::default();
        let mut errors = Vec::new();
        let mut docs = Vec::new();
        for (path, text) in sources {
            let path = path.as_ref();
            let pi_settings = Self::PI_SETTINGS_KEY.filter(|_| path.ends_with(PI_SETTINGS));
            match (pi_settings, Doc::parse(path, text.as_ref())) {
                (Some(key), Ok(doc)) => {
                    let unipi = Object::root(&doc, Self::STYLE.dotted(), false)
                        .and_then(|mut file| file.section("unipi", "an object"));
                    if let Some(mut object) = unipi.and_then(|mut u| u.section(key, "an object")) {
                        config.read(&mut object);
                    }
                    errors.extend(doc.take_errors(Self::STYLE.sorted));
                }
                (None, Ok(doc)) => {
                    if let Some(mut object) = Object::root(&doc, Self::STYLE, Self::OWNS_FILE) {
                        config.read(&mut object);
                    }
                    errors.extend(doc.take_errors(Self::STYLE.sorted));
                    docs.push(doc);
                }
                (None, Err(err)) if Self::OWNS_FILE => errors.push(err),
                _ => {}
            }
        }
        config.finish(&docs, &mut errors);
        (config, errors)
    }
}

/// Pi's settings file, in Pi's agent directory ([`super::pi_settings_file`]).
pub(super) const PI_SETTINGS: &str = "settings.json";

/// `text`, the contents of `path`, as a JSON object given to `read`; what is wrong with it is
/// added to `errors` (in file order when the style says so). `None` when it is not a JSON object.
pub fn read_json_file<T>(
    path: &Path,
    text: &str,
    style: Style,
    errors: &mut Vec<ConfigError>,
    read: impl FnOnce(&mut Object<'_>) -> T,
) -> Option<T> {
    let doc = Doc::parse(path, text)
        .map_err(|err| errors.push(err))
        .ok()?;
    let read = Object::root(&doc, style, true).map(|mut object| read(&mut object));
    errors.extend(doc.take_errors(style.sorted));
    read
}

/// How a module words and orders its config errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Style {
    pub wording: Wording,
    /// A nested key is named with its path (`autoCompaction.enabled`), not alone (`enabled`).
    pub dotted: bool,
    /// Each file's errors in file order, rather than in the order the keys were read.
    pub sorted: bool,
}

impl Style {
    pub const BACKTICKS: Style = Style {
        wording: Wording::Backticks,
        dotted: false,
        sorted: true,
    };

    pub const fn dotted(self) -> Style {
        Style {
            dotted: true,
            ..self
        }
    }

    pub const fn wording(self, wording: Wording) -> Style {
        Style { wording, ..self }
    }

    pub const fn unsorted(self) -> Style {
        Style {
            sorted: false,
            ..self
        }
    }
}

/// "What a value must be", as each module has always said it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wording {
    /// "`key` must be …", at the key.
    Backticks,
    /// "\"key\" must be …", at the key.
    Quotes,
    /// "key must be …, found `<the value>`", at the key.
    Found,
    /// "expected … for key", at the value.
    Expected,
}

/// One JSON object of a file, read key by key. Asking for a key marks it known, so what is left
/// are the keys nobody asked for ([`Object::warn_unknown`]).
pub struct Object<'d> {
    doc: &'d Doc<'d>,
    style: Style,
    /// Where this object is in the file.
    keys: Vec<String>,
    map: &'d Map<String, Value>,
    known: Vec<String>,
    ignored: Vec<String>,
}

impl<'d> Object<'d> {
    /// The file's top-level object; anything else is reported (when `report`) and gives none.
    pub fn root(doc: &'d Doc<'d>, style: Style, report: bool) -> Option<Self> {
        match &doc.root {
            Value::Object(map) => Some(Object::new(doc, style, Vec::new(), map)),
            _ => {
                if report {
                    doc.report(doc.offset(&[], true), "expected a JSON object");
                }
                None
            }
        }
    }

    fn new(doc: &'d Doc<'d>, style: Style, keys: Vec<String>, map: &'d Map<String, Value>) -> Self {
        Object {
            doc,
            style,
            keys,
            map,
            known: Vec::new(),
            ignored: Vec::new(),
        }
    }

    /// The file this object is in.
    pub fn path(&self) -> &'d Path {
        self.doc.path
    }

    /// The value at `key`, if there is one; `key` is known from now on.
    pub fn value(&mut self, key: &str) -> Option<&'d Value> {
        if !self.known.iter().any(|known| known == key) {
            self.known.push(key.to_owned());
        }
        self.map.get(key)
    }

    /// The value at `key` as `read` makes it; one it refuses is reported as not being `expected`
    /// ("true or false") and gives `None`, as an absent key does.
    pub fn get<T>(
        &mut self,
        key: &str,
        expected: &str,
        read: impl FnOnce(&'d Value) -> Option<T>,
    ) -> Option<T> {
        let value = self.value(key)?;
        let found = read(value);
        if found.is_none() {
            self.report(key, self.must(key, expected, value));
        }
        found
    }

    /// [`Object::get`] into `slot`, which keeps what it had when the key is absent or bad.
    pub fn set<T>(
        &mut self,
        key: &str,
        expected: &str,
        slot: &mut T,
        read: impl FnOnce(&'d Value) -> Option<T>,
    ) {
        if let Some(value) = self.get(key, expected, read) {
            *slot = value;
        }
    }

    /// A flag: true or false.
    pub fn flag(&mut self, key: &str, slot: &mut bool) {
        self.set(key, "true or false", slot, Value::as_bool);
    }

    /// A whole number of at least `min`; another value is reported as not being "an integer ≥
    /// `min`".
    pub fn at_least(&mut self, key: &str, min: u64) -> Option<u64> {
        let expected = format!("an integer ≥ {min}");
        self.get(key, &expected, |v| v.as_u64().filter(|n| *n >= min))
    }

    /// The object at `key`; another value is reported as not being `expected` ("an object").
    pub fn section(&mut self, key: &str, expected: &str) -> Option<Object<'d>> {
        let map = self.get(key, expected, Value::as_object)?;
        Some(Object::new(self.doc, self.style, self.at(key), map))
    }

    /// The object at `key`; another value is reported as `message` says, word for word.
    pub(crate) fn section_or(&mut self, key: &str, message: &str) -> Option<Object<'d>> {
        match self.value(key)? {
            Value::Object(map) => Some(Object::new(self.doc, self.style, self.at(key), map)),
            _ => {
                self.report(key, message);
                None
            }
        }
    }

    /// Keys accepted and not read (another program's settings in a shared file).
    pub fn ignore(&mut self, keys: &[&str]) {
        self.ignored
            .extend(keys.iter().map(|key| (*key).to_owned()));
    }

    /// The members in key order.
    pub fn members(&self) -> impl Iterator<Item = (&'d String, &'d Value)> + use<'d> {
        self.map.iter()
    }

    /// Reports `message` about `key`: at its key, or at its value when the wording says so.
    pub fn report(&self, key: &str, message: impl Into<String>) {
        let value = self.style.wording == Wording::Expected;
        self.doc
            .report(self.doc.offset(&self.at(key), value), message);
    }

    /// Reports every key nobody asked for: "unknown key `key` (expected a, b, c)".
    pub fn warn_unknown(&self) {
        self.warn_unknown_with(|key, known| {
            format!("unknown key `{key}` (expected {})", known.join(", "))
        });
    }

    /// Reports every key nobody asked for, at its key, as `message(label, known keys)` says.
    pub fn warn_unknown_with(&self, message: impl Fn(&str, &[&str]) -> String) {
        let known: Vec<&str> = self.known.iter().map(String::as_str).collect();
        for key in self.map.keys() {
            if !self.known.contains(key) && !self.ignored.contains(key) {
                let at = self.doc.offset(&self.at(key), false);
                self.doc.report(at, message(&self.label(key), &known));
            }
        }
    }

    /// `key` as messages name it (with its path when the style is dotted).
    pub fn label(&self, key: &str) -> String {
        match self.style.dotted {
            true => [self.keys.as_slice(), &[key.to_owned()]].concat().join("."),
            false => key.to_owned(),
        }
    }

    fn must(&self, key: &str, expected: &str, found: &Value) -> String {
        let label = self.label(key);
        match self.style.wording {
            Wording::Backticks => format!("`{label}` must be {expected}"),
            Wording::Quotes => format!("\"{label}\" must be {expected}"),
            Wording::Found => format!("{label} must be {expected}, found {found}"),
            Wording::Expected => format!("expected {expected} for {label}"),
        }
    }

    fn at(&self, key: &str) -> Vec<String> {
        [self.keys.as_slice(), &[key.to_owned()]].concat()
    }
}

/// A whole number of at least 1.
pub fn positive(value: &Value) -> Option<u64> {
    value.as_u64().filter(|n| *n > 0)
}

/// A whole number within `range`.
pub fn whole_in(range: std::ops::RangeInclusive<u64>) -> impl Fn(&Value) -> Option<u64> {
    move |value| value.as_u64().filter(|n| range.contains(n))
}

/// `null` as `Some(None)`, anything else as `read` makes it.
pub fn or_null<T>(read: impl Fn(&Value) -> Option<T>) -> impl Fn(&Value) -> Option<Option<T>> {
    move |value| match value {
        Value::Null => Some(None),
        value => read(value).map(Some),
    }
}

/// A string, trimmed, that is not empty.
pub fn non_empty(value: &Value) -> Option<String> {
    let text = value.as_str()?.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

/// "a, b or c".
pub(crate) fn or_list(items: impl IntoIterator<Item = impl AsRef<str>>) -> String {
    let items: Vec<String> = items
        .into_iter()
        .map(|item| item.as_ref().to_owned())
        .collect();
    match items.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => items.concat(),
    }
}

/// A count as a `usize` (saturating; the configs' caps are far below it).
pub fn to_usize(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// A count as a `u32` (saturating).
pub fn to_u32(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The JSON object in `path` (empty when the file does not exist), for a save to merge into; a
/// file that is not a JSON object is an error and is not to be overwritten.
pub fn read_json_object(path: &Path) -> anyhow::Result<Map<String, Value>> {
    match std::fs::read_to_string(path) {
        Ok(text) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(object)) => Ok(object),
            Ok(_) => anyhow::bail!(
                "{}: expected a JSON object; not overwriting it",
                path.display()
            ),
            Err(err) => anyhow::bail!(
                "{}:{}:{}: invalid JSON ({err}); not overwriting it",
                path.display(),
                err.line().max(1),
                err.column().max(1)
            ),
        },
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(Map::new()),
        Err(err) => Err(anyhow::Error::new(err).context(format!("reading {}", path.display()))),
    }
}

/// Writes `text` as the module config file `relative` below `dir`, creating its folders (tests).
#[cfg(test)]
pub fn write_module_file(dir: &Path, relative: &str, text: &str) {
    let file = dir.join(relative);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, text).unwrap();
}

/// A home and a workspace (two temporary directories), each with the module config file
/// `relative` holding its text (tests).
#[cfg(test)]
pub fn home_and_workspace(
    relative: &str,
    home_text: &str,
    workspace_text: &str,
) -> (tempfile::TempDir, tempfile::TempDir) {
    let home = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    write_module_file(home.path(), relative, home_text);
    write_module_file(workspace.path(), relative, workspace_text);
    (home, workspace)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::error::sort_by_position;

    /// A config of one flag, `on`.
    #[derive(Debug, Default, PartialEq)]
    struct On(bool);

    impl ModuleConfig for On {
        const FILE: &'static str = ".unipi/config/test.json";
        const STYLE: Style = Style::BACKTICKS.unsorted();
        fn read(&mut self, file: &mut Object<'_>) {
            file.set("on", "true or false", &mut self.0, Value::as_bool);
            file.warn_unknown_with(|key, _| format!("`{key}` is not `on` as true or false"));
        }
    }

    #[test]
    fn later_files_win_and_errors_name_file_line_and_column() {
        let sources = [
            ("/h.json", "{\"on\": true}"),
            ("/w.json", "{\n  \"on\": false,\n  \"off\": 1\n}"),
            ("/x.json", "[1]"),
        ];
        let (On(on), errors) = On::from_sources(&sources);
        assert!(!on);
        let shown: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "/w.json:3:3: `off` is not `on` as true or false",
                "/x.json:1:1: expected a JSON object",
            ]
        );
    }

    #[test]
    fn the_workspace_file_overrides_the_home_file_and_read_errors_come_first() {
        let relative = On::FILE;
        let (home, workspace) = home_and_workspace(relative, "{\"on\": true}", "{}");
        assert_eq!(
            On::load(Some(home.path()), workspace.path()),
            (On(true), vec![])
        );
        assert_eq!(On::load(None, workspace.path()), (On(false), vec![]));

        // A directory where the file should be cannot be read.
        std::fs::remove_file(home.path().join(relative)).unwrap();
        let unreadable = home.path().join(relative);
        std::fs::create_dir_all(&unreadable).unwrap();
        let (On(on), errors) = On::load(Some(home.path()), workspace.path());
        assert!(!on);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].path(), unreadable);
    }

    #[test]
    fn errors_sort_by_line_then_column_unreadable_first() {
        let text = "{\n  \"b\": 1, \"a\": 2\n}";
        let mut errors = vec![
            ConfigError::at(Path::new("/f.json"), text, 12, "a"),
            ConfigError::at(Path::new("/f.json"), text, 4, "b"),
            ConfigError::Unreadable {
                path: "/g.json".into(),
                message: "gone".into(),
            },
        ];
        sort_by_position(&mut errors);
        let paths_and_places: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(paths_and_places[1], "/f.json:2:3: b");
        assert_eq!(paths_and_places[2], "/f.json:2:11: a");
        assert!(matches!(errors[0], ConfigError::Unreadable { .. }));
    }
}
