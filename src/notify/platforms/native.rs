//! The desktop's own notifications: `org.freedesktop.Notifications` on the session D-Bus
//! (notify-rust over zbus, on the workbench's tokio runtime), the system's notification centre on
//! macOS. The priority becomes the urgency (high is critical: most daemons keep such a
//! notification until it is seen). Whether to send at all while the terminal has focus is the
//! dispatcher's decision, not this file's.

use super::Notice;
use crate::notify::config::Priority;

/// The application name the desktop shows.
pub const APP_NAME: &str = "unipi-tui";

pub async fn send(notice: &Notice) -> Result<(), String> {
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
        notification
            .show_async()
            .await
            .map(drop)
            .map_err(|err| format!("Native notification failed: {err}"))
    }
    #[cfg(target_os = "macos")]
    {
        let _ = notice.priority == Priority::High;
        tokio::task::spawn_blocking(move || notification.show().map(drop))
            .await
            .map_err(|err| format!("Native notification failed: {err}"))?
            .map_err(|err| format!("Native notification failed: {err}"))
    }
}
