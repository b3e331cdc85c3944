//! Waiting in unit tests (the integration tests have the same in `tests/support/wait.rs`):
//! [`eventually`] polls a check until it holds and fails naming what it waited for;
//! [`stays_quiet`] watches for something that must not happen for a while and fails naming it
//! the moment it does. Both sleep on tokio's clock, so under a paused clock they take no time;
//! [`eventually_async`] is for a check that awaits, [`eventually_blocking`] for tests outside a
//! runtime.

use std::fmt::Display;
use std::time::Duration;

/// How long a test waits for what should happen at once on an idle machine (a loaded one may
/// take seconds).
pub(crate) const WAIT: Duration = Duration::from_secs(10);

/// How long a wait sleeps between two checks.
const POLL: Duration = Duration::from_millis(10);

/// Polls `check` until it holds; panics naming `what` after `timeout`.
pub(crate) async fn eventually(
    what: impl Display,
    timeout: Duration,
    mut check: impl FnMut() -> bool,
) {
    let deadline = tokio::time::Instant::now() + timeout;
    while !check() {
        assert!(
            tokio::time::Instant::now() <= deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// [`eventually`] for a check that awaits (asks a server, reads a channel).
pub(crate) async fn eventually_async(
    what: impl Display,
    timeout: Duration,
    mut check: impl AsyncFnMut() -> bool,
) {
    let deadline = tokio::time::Instant::now() + timeout;
    while !check().await {
        assert!(
            tokio::time::Instant::now() <= deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// [`eventually`] outside a runtime: sleeps the thread between checks.
pub(crate) fn eventually_blocking(
    what: impl Display,
    timeout: Duration,
    mut check: impl FnMut() -> bool,
) {
    let deadline = std::time::Instant::now() + timeout;
    while !check() {
        assert!(
            std::time::Instant::now() <= deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(POLL);
    }
}

/// Checks for `duration` that `happened` stays false (the proof that something does not
/// happen); panics naming `what` as soon as it does.
pub(crate) async fn stays_quiet(
    what: impl Display,
    duration: Duration,
    mut happened: impl FnMut() -> bool,
) {
    let until = tokio::time::Instant::now() + duration;
    loop {
        assert!(!happened(), "{what}");
        let now = tokio::time::Instant::now();
        if now >= until {
            return;
        }
        tokio::time::sleep(POLL.min(until - now)).await;
    }
}
