//! The desktop's own notifications: `org.freedesktop.Notifications` on the session D-Bus
//! (notify-rust over zbus, on the workbench's tokio runtime), the system's notification centre on
//! macOS. The priority becomes the urgency (high is critical: most daemons keep such a
//! notification until it is seen). Whether to send at all while the terminal has focus is the
//! dispatcher's decision, not this file's.
//!
//! A machine without a session bus (an SSH login, a container, a server) cannot show desktop
//! notifications at all, and notify-rust only says `I/O error: No such file or directory`. When a
//! notification fails, this file connects to the session bus the way notify-rust does: if that
//! fails too, the failure is [`NativeError::NoBus`], named as such, and the dispatcher stops
//! trying.

use super::Notice;
use crate::notify::config::Priority;

/// The application name the desktop shows.
pub(crate) const APP_NAME: &str = "unipi-tui";

/// Why a desktop notification was not shown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum NativeError {
    /// There is no D-Bus session bus to reach the desktop through: trying again will not help.
    NoBus(String),
    /// The bus is there; the notification failed on it (no notification daemon, …).
    Failed(String),
}

pub(crate) async fn send(notice: &Notice) -> Result<(), NativeError> {
    let mut notification = notify_rust::Notification::new();
    notification
        .appname(APP_NAME)
        .summary(&notice.title)
        .body(&notice.message);
    #[cfg(all(unix, not(target_os = "macos")))]
    {
        notification.urgency(match notice.priority {
            Priority::Low => notify_rust::Urgency::Low,
            Priority::Normal => notify_rust::Urgency::Normal,
            Priority::High => notify_rust::Urgency::Critical,
        });
        let Err(err) = notification.show_async().await else {
            return Ok(());
        };
        Err(match zbus::Connection::session().await {
            Err(bus) => NativeError::NoBus(no_bus(
                std::env::var("DBUS_SESSION_BUS_ADDRESS").ok().as_deref(),
                &bus.to_string(),
            )),
            Ok(_) => NativeError::Failed(format!("Native notification failed: {err}")),
        })
    }
    #[cfg(target_os = "macos")]
    {
        let _ = notice.priority == Priority::High;
        tokio::task::spawn_blocking(move || notification.show().map(drop))
            .await
            .map_err(|err| NativeError::Failed(format!("Native notification failed: {err}")))?
            .map_err(|err| NativeError::Failed(format!("Native notification failed: {err}")))
    }
}

/// What a missing session bus is called: where it was looked for (`address`, the value of
/// `DBUS_SESSION_BUS_ADDRESS`), and the connection's `error`.
pub(crate) fn no_bus(address: Option<&str>, error: &str) -> String {
    match address {
        None => format!(
            "no D-Bus session bus: DBUS_SESSION_BUS_ADDRESS is not set and the default one \
             ($XDG_RUNTIME_DIR/bus) cannot be reached ({error})"
        ),
        Some(address) => format!("no D-Bus session bus at {address:?} ({error})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_bus_says_where_it_was_looked_for() {
        assert_eq!(
            no_bus(None, "I/O error: No such file or directory (os error 2)"),
            "no D-Bus session bus: DBUS_SESSION_BUS_ADDRESS is not set and the default one \
             ($XDG_RUNTIME_DIR/bus) cannot be reached (I/O error: No such file or directory \
             (os error 2))"
        );
        assert_eq!(
            no_bus(Some("unix:path=/nowhere"), "I/O error: refused"),
            "no D-Bus session bus at \"unix:path=/nowhere\" (I/O error: refused)"
        );
    }
}
