//! Waiting in tests: [`eventually`] polls a check until it holds (or finds what it looks for)
//! and fails naming what it waited for, [`eventually_async`] does the same inside a runtime (the
//! check may await, the wait sleeps on tokio's clock); [`stays_quiet_async`] watches for
//! something that must not happen for a while and fails naming it the moment it does.

use std::fmt::Display;
use std::time::{Duration, Instant};

/// How long a wait sleeps between two checks.
const POLL: Duration = Duration::from_millis(20);

/// What a check answers: whether it holds (`bool`), or what it found once it does (`Option`).
pub trait Outcome {
    type Found;
    fn found(self) -> Option<Self::Found>;
}

impl Outcome for bool {
    type Found = ();
    fn found(self) -> Option<()> {
        self.then_some(())
    }
}

impl<T> Outcome for Option<T> {
    type Found = T;
    fn found(self) -> Option<T> {
        self
    }
}

/// Polls `check` until it holds and returns what it found; panics naming `what` after `timeout`.
pub fn eventually<O: Outcome>(
    what: impl Display,
    timeout: Duration,
    check: impl FnMut() -> O,
) -> O::Found {
    eventually_or(what, timeout, check, String::new)
}

/// [`eventually`], the failure also telling what `context` says then (a screen, a log's tail).
pub fn eventually_or<O: Outcome>(
    what: impl Display,
    timeout: Duration,
    check: impl FnMut() -> O,
    context: impl FnOnce() -> String,
) -> O::Found {
    try_eventually(what, timeout, check).unwrap_or_else(|err| panic!("{err}\n{}", context()))
}

/// [`eventually`] as an error rather than a panic, for helpers that return one.
pub fn try_eventually<O: Outcome>(
    what: impl Display,
    timeout: Duration,
    mut check: impl FnMut() -> O,
) -> anyhow::Result<O::Found> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(found) = check().found() {
            return Ok(found);
        }
        if Instant::now() > deadline {
            anyhow::bail!("timed out after {timeout:?} waiting for {what}");
        }
        std::thread::sleep(POLL);
    }
}

/// [`eventually`] inside a runtime: the check may await, and the wait sleeps on tokio's clock.
pub async fn eventually_async<O: Outcome>(
    what: impl Display,
    timeout: Duration,
    check: impl AsyncFnMut() -> O,
) -> O::Found {
    try_eventually_async(what, timeout, check)
        .await
        .unwrap_or_else(|err| panic!("{err}"))
}

/// [`eventually_async`] as an error rather than a panic, for tests that return one.
pub async fn try_eventually_async<O: Outcome>(
    what: impl Display,
    timeout: Duration,
    mut check: impl AsyncFnMut() -> O,
) -> anyhow::Result<O::Found> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(found) = check().await.found() {
            return Ok(found);
        }
        if tokio::time::Instant::now() > deadline {
            anyhow::bail!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Checks for `duration` that `happened` stays false (the proof that something does not
/// happen); panics naming `what` as soon as it does. Sleeps on tokio's clock.
pub async fn stays_quiet_async(
    what: impl Display,
    duration: Duration,
    mut happened: impl AsyncFnMut() -> bool,
) {
    let until = tokio::time::Instant::now() + duration;
    loop {
        assert!(!happened().await, "{what}");
        let now = tokio::time::Instant::now();
        if now >= until {
            return;
        }
        tokio::time::sleep(POLL.min(until - now)).await;
    }
}
