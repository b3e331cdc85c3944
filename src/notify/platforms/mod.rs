//! The places a notification goes, one file each: the desktop (`native`, over D-Bus), the
//! terminal the workbench runs in (`terminal`: OSC 9 / 777 / 99 or BEL, tmux-wrapped — it works
//! over SSH with no set-up), and the push services over HTTP (`http`: ntfy, Gotify, Telegram).
//! Each takes a [`Notice`] and says whether it was delivered; the dispatcher runs them in
//! parallel under a timeout.

pub mod http;
pub mod native;
pub mod terminal;

use super::config::Priority;

/// One notification, as every platform gets it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    pub title: String,
    pub message: String,
    pub(crate) priority: Priority,
}

impl Notice {
    pub(crate) fn new(
        title: impl Into<String>,
        message: impl Into<String>,
        priority: Priority,
    ) -> Self {
        Notice {
            title: title.into(),
            message: message.into(),
            priority,
        }
    }
}
