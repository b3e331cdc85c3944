//! Workbench configuration: keymap and theme, embedded defaults merged with user files. The user
//! files live in `$XDG_CONFIG_HOME/unipi-tui/` (default `~/.config/unipi-tui/`) on every platform,
//! so a dotfiles repository works the same on Linux and macOS. A capability's own JSON file
//! (`.unipi/config/<name>.json`, home then workspace) is read through
//! [`module_file::ModuleConfig`].

pub mod error;
pub mod footer;
pub mod json;
pub mod keymap;
pub mod live;
pub mod module_file;
pub mod references;
pub mod theme;

use std::path::{Path, PathBuf};

pub use error::ConfigError;

/// An enum whose variants a config file names by key: `KEYS` and `ALL` in declaration order,
/// `key()` and `parse()` (a variant whose key it is).
macro_rules! keyed_enum {
    ($(#[$meta:meta])* $vis:vis enum $name:ident {
        $($(#[$doc:meta])* $variant:ident = $key:literal,)+
    }) => {
        $(#[$meta])*
        $vis enum $name {
            $($(#[$doc])* $variant,)+
        }

        impl $name {
            $vis const ALL: &[$name] = &[$($name::$variant),+];
            $vis const KEYS: &[&str] = &[$($key),+];

            $vis fn key(self) -> &'static str {
                // The variants carry no values, so each one's discriminant is its place in KEYS.
                Self::KEYS[self as usize]
            }

            $vis fn parse(text: &str) -> Option<$name> {
                Self::ALL.iter().copied().find(|variant| variant.key() == text)
            }
        }
    };
}
pub(crate) use keyed_enum;

/// Reads a module's Unipi config file (`relative`, e.g. `.unipi/config/footer.json`) from the home
/// directory and then from the workspace, which overrides it (read once when both are the same
/// file). Returns the files that exist as (path, text), lowest precedence first, and the files
/// that could not be read; a missing file is not an error. Each module merges the texts itself.
pub fn read_module_config(
    home: Option<&Path>,
    workspace: &Path,
    relative: &str,
) -> (Vec<(PathBuf, String)>, Vec<ConfigError>) {
    let mut files: Vec<PathBuf> = home.map(|home| home.join(relative)).into_iter().collect();
    let workspace_file = workspace.join(relative);
    if !files.iter().any(|file| same_file(file, &workspace_file)) {
        files.push(workspace_file);
    }
    let mut sources = Vec::new();
    let mut errors = Vec::new();
    for file in files {
        match error::read_user_file(Some(&file)) {
            Ok(Some(text)) => sources.push((file, text)),
            Ok(None) => {}
            Err(err) => errors.push(err),
        }
    }
    (sources, errors)
}

/// The same file, also through symlinks or `..`.
pub(crate) fn same_file(a: &Path, b: &Path) -> bool {
    a == b
        || matches!(
            (std::fs::canonicalize(a), std::fs::canonicalize(b)),
            (Ok(a), Ok(b)) if a == b
        )
}

/// Pi's agent directory: `PI_CODING_AGENT_DIR`, else `~/.pi/agent`.
pub fn pi_agent_dir(home: Option<&Path>) -> Option<PathBuf> {
    let dir = std::env::var_os("PI_CODING_AGENT_DIR").filter(|dir| !dir.is_empty());
    dir.map(PathBuf::from)
        .or_else(|| home.map(|home| home.join(".pi/agent")))
}

/// Pi's user `settings.json`, where the original Unipi kept `unipi.askUser`, `unipi.footer` and
/// `unipi.info`.
pub fn pi_settings_file(home: Option<&Path>) -> Option<PathBuf> {
    pi_agent_dir(home).map(|dir| dir.join(module_file::PI_SETTINGS))
}

/// The workbench's config directory, if a home directory is known.
pub fn config_dir() -> Option<PathBuf> {
    let xdg = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        // The XDG spec says relative values are invalid and must be ignored.
        .filter(|path| path.is_absolute());
    xdg.or_else(|| dirs::home_dir().map(|home| home.join(".config")))
        .map(|base| base.join("unipi-tui"))
}

/// `keymap.toml` in [`config_dir`].
pub fn keymap_file() -> Option<PathBuf> {
    config_dir().map(|dir| dir.join("keymap.toml"))
}

/// `theme.toml` in [`config_dir`].
pub fn theme_file() -> Option<PathBuf> {
    config_dir().map(|dir| dir.join("theme.toml"))
}

/// Merges the keys of `values` (a JSON object) into the JSON config file at `path` and writes it
/// crash-safe ([`crate::sys::write_atomic`]); missing parent directories are created. Keys
/// already in the file and not in `values` are kept. A file that is not a JSON object is an error
/// and stays untouched — never silently replaced.
pub fn merge_json_file(path: &std::path::Path, values: &serde_json::Value) -> anyhow::Result<()> {
    use anyhow::{Context, bail};
    use serde_json::Value;
    let Some(updates) = values.as_object() else {
        bail!("settings for {} must be a JSON object", path.display());
    };
    let mut merged = module_file::read_json_object(path)?;
    for (key, value) in updates {
        merged.insert(key.clone(), value.clone());
    }
    let mut text =
        serde_json::to_string_pretty(&Value::Object(merged)).context("encoding the settings")?;
    text.push('\n');
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    crate::sys::write_atomic(path, text.as_bytes())
        .with_context(|| format!("writing {}", path.display()))
}
