//! Workbench configuration: keymap and theme, embedded defaults merged with user files.

pub mod keymap;
pub mod theme;
