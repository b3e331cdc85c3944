//! The `/unipi:info` dashboard: tabs for usage and cost (from Pi's session files), each
//! capability's figures (through [`crate::capability::Capability::info_group`]), Pi's extensions
//! and skills, and the workbench's own page; `/unipi:info-settings` chooses the tabs and their
//! order, and `showOnBoot` opens it at start. The view is [`crate::views::info::DashboardView`],
//! drawn by `unipi_widgets::dashboard`.

mod dashboard;
mod groups;
mod settings;
mod usage;
pub(crate) mod workbench;

pub use dashboard::start;
