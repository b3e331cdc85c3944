//! The attached client's hold on the user's terminal: raw mode while attached, and the terminal
//! given back on every exit path — detach, the session's end, a takeover, SIGHUP, SIGTERM, a
//! panic.
//!
//! The rules are the workbench's own (`term::tui`): one idempotent [`restore`] guarded by an
//! atomic flag, which the normal path, the signal path and the panic hook all call; raw mode off
//! first; a terminal that is gone (its errors are EIO/ENXIO, [`tui::terminal_gone`]) is released
//! to `/dev/null` and not complained to. What differs is what gets undone: the workbench's modes
//! were set by output the client only relayed, so the client undoes what its [`ModeTracker`]
//! saw set and not yet cleared.

use std::io::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context as _, Result};

use super::modes::ModeTracker;
use super::protocol::Keyboard;
use crate::sys::lock;
use crate::term::tui;

static ACTIVE: AtomicBool = AtomicBool::new(false);
static MODES: Mutex<ModeTracker> = Mutex::new(ModeTracker::new());

/// Raw mode on, and how the terminal reports modified keys (asked now, before anything reads
/// the terminal: the workbench sets its modes up for this terminal when it attaches).
pub fn enter() -> Result<Keyboard> {
    // The workbench's panic hook, with this restore among what it undoes.
    tui::install_panic_hook();
    tui::register_panic_cleanup(Box::new(restore));
    crossterm::terminal::enable_raw_mode().context("failed to put the terminal into raw mode")?;
    ACTIVE.store(true, Ordering::SeqCst);
    let enhance = std::env::var_os("UNIPI_TUI_DISABLE_KEYBOARD_ENHANCEMENT")
        .is_none_or(|v| v.is_empty() || v == "0");
    Ok(if !enhance {
        Keyboard::Legacy
    } else if matches!(
        crossterm::terminal::supports_keyboard_enhancement(),
        Ok(true)
    ) {
        Keyboard::Kitty
    } else {
        Keyboard::ModifyOtherKeys
    })
}

/// Writes relayed output to the terminal and follows the modes it sets. An error means the
/// terminal refused it (gone, if [`tui::terminal_gone`]).
pub(crate) fn write_output(out: &mut impl std::io::Write, bytes: &[u8]) -> std::io::Result<()> {
    out.write_all(bytes)?;
    out.flush()?;
    lock(&MODES).feed(bytes);
    Ok(())
}

/// Gives the terminal back: raw mode off, then the resets of every mode the relayed output left
/// set. Idempotent; safe from the panic hook. Errors on a terminal that is gone are only
/// logged (it is released to `/dev/null`).
pub fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let resets = {
        let mut modes = lock(&MODES);
        let resets = modes.resets();
        modes.reset();
        resets
    };
    let raw = crossterm::terminal::disable_raw_mode();
    let mut out = std::io::stdout();
    let written = out.write_all(&resets).and_then(|()| out.flush());
    for (what, result) in [("leave raw mode", raw), ("reset terminal modes", written)] {
        match result {
            Ok(()) => {}
            Err(err) if tui::terminal_gone(&err) => {
                tracing::info!("the terminal is gone ({what}: {err})");
                tui::release_gone_terminal();
                return;
            }
            Err(err) => tracing::warn!("failed to {what}: {err}"),
        }
    }
}
