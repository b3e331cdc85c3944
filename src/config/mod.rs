//! Workbench configuration: keymap and theme, embedded defaults merged with user files. The user
//! files live in `$XDG_CONFIG_HOME/unipi-tui/` (default `~/.config/unipi-tui/`) on every platform,
//! so a dotfiles repository works the same on Linux and macOS.

pub mod error;
pub mod footer;
pub mod keymap;
pub mod theme;

use std::path::PathBuf;

pub use error::ConfigError;

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
