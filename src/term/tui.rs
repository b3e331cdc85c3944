//! Owning the outer terminal: entering the workbench's modes, and restoring the terminal on every
//! exit path (normal exit, error, panic, SIGHUP/SIGTERM/SIGINT).
//!
//! Restoration is a free function guarded by one atomic flag, so the panic hook, the signal path
//! and the normal path can all call it and only the first does the work. Every restore step runs
//! even when an earlier one fails; the first error is reported (codex `tui.rs`). Raw mode is
//! disabled first: it has the widest side effects (ratatui's `restore`).

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use crate::sys::lock;
use anyhow::{Context, Result};
use crossterm::event::{
    DisableBracketedPaste, DisableFocusChange, DisableMouseCapture, EnableBracketedPaste,
    EnableFocusChange, EnableMouseCapture, KeyboardEnhancementFlags, PopKeyboardEnhancementFlags,
    PushKeyboardEnhancementFlags,
};
use crossterm::terminal::{EnterAlternateScreen, LeaveAlternateScreen};
use crossterm::{cursor, execute, terminal};

/// True while the terminal is in the workbench's modes.
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Which keyboard protocol we enabled on the outer terminal (see [`KeyboardProtocol`]).
static KEYBOARD: AtomicI32 = AtomicI32::new(0);
/// Process group of the child to stop when we die abnormally (0 = none).
static CHILD_PGID: AtomicI32 = AtomicI32::new(0);
/// More things to stop when we die abnormally (background tasks' process groups).
static PANIC_CLEANUP: std::sync::Mutex<Vec<Box<dyn Fn() + Send>>> =
    std::sync::Mutex::new(Vec::new());

/// Runs `cleanup` if the workbench panics (after the terminal is restored).
pub fn register_panic_cleanup(cleanup: Box<dyn Fn() + Send>) {
    lock(&PANIC_CLEANUP).push(cleanup);
}

/// How the outer terminal reports modified keys to us.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyboardProtocol {
    /// Kitty keyboard protocol (we pushed flags and must pop them).
    Kitty,
    /// xterm modifyOtherKeys level 2 (tmux with `extended-keys`, xterm).
    ModifyOtherKeys,
    /// Neither is enabled (opt-out).
    Legacy,
}

/// Options for [`enter`].
#[derive(Clone, Copy, Debug)]
pub struct TerminalOptions {
    /// `UNIPI_TUI_DISABLE_KEYBOARD_ENHANCEMENT=1` turns off kitty flags and modifyOtherKeys.
    pub keyboard_enhancement: bool,
}

/// Enters raw mode and the alternate screen and enables mouse, paste, focus and keyboard
/// reporting. Installs the panic hook first, so a panic at any later point restores the terminal.
pub fn enter(options: TerminalOptions) -> Result<KeyboardProtocol> {
    install_panic_hook();
    terminal::enable_raw_mode().context("failed to put the terminal into raw mode")?;
    ACTIVE.store(true, Ordering::SeqCst);

    // Probe before anything reads stdin: the probe reads the reply itself.
    let protocol = if !options.keyboard_enhancement {
        KeyboardProtocol::Legacy
    } else if matches!(terminal::supports_keyboard_enhancement(), Ok(true)) {
        KeyboardProtocol::Kitty
    } else {
        KeyboardProtocol::ModifyOtherKeys
    };
    KEYBOARD.store(protocol as i32, Ordering::SeqCst);

    let mut out = io::stdout();
    execute!(
        out,
        EnterAlternateScreen,
        EnableMouseCapture,
        EnableBracketedPaste,
        EnableFocusChange,
        cursor::Hide
    )
    .context("failed to set up the terminal")?;
    match protocol {
        KeyboardProtocol::Kitty => execute!(
            out,
            PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
        )
        .context("failed to enable the kitty keyboard protocol")?,
        KeyboardProtocol::ModifyOtherKeys => {
            out.write_all(b"\x1b[>4;2m")
                .and_then(|()| out.flush())
                .context("failed to enable modifyOtherKeys")?;
        }
        KeyboardProtocol::Legacy => {}
    }
    Ok(protocol)
}

/// Records the child's process group so an abnormal exit (panic) can stop it.
pub fn set_child_process_group(pgid: u32) {
    CHILD_PGID.store(i32::try_from(pgid).unwrap_or(0), Ordering::SeqCst);
}

/// Puts the terminal back the way we found it. Idempotent; safe from the panic hook.
pub fn restore() -> Result<()> {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return Ok(());
    }
    let mut first_error: Option<anyhow::Error> = None;
    let mut note = |result: io::Result<()>, what: &str| {
        if let Err(err) = result {
            first_error.get_or_insert_with(|| anyhow::Error::new(err).context(what.to_string()));
        }
    };
    note(terminal::disable_raw_mode(), "failed to leave raw mode");
    let mut out = io::stdout();
    if KEYBOARD.load(Ordering::SeqCst) == KeyboardProtocol::Kitty as i32 {
        note(
            execute!(out, PopKeyboardEnhancementFlags),
            "failed to pop keyboard flags",
        );
    }
    // The stronger resets, in case the terminal missed the pop: parent shells must not inherit
    // enhanced key reporting.
    note(
        out.write_all(b"\x1b[<u\x1b[>4;0m")
            .and_then(|()| out.flush()),
        "failed to reset keyboard reporting",
    );
    note(
        execute!(
            out,
            DisableFocusChange,
            DisableBracketedPaste,
            DisableMouseCapture,
            // Pi may have changed the cursor shape through us; reset it.
            cursor::SetCursorStyle::DefaultUserShape,
            LeaveAlternateScreen,
            cursor::Show
        ),
        "failed to restore terminal modes",
    );
    match first_error {
        Some(err) => Err(err),
        None => Ok(()),
    }
}

/// True while [`enter`] is in effect.
pub fn is_active() -> bool {
    ACTIVE.load(Ordering::SeqCst)
}

fn install_panic_hook() {
    static INSTALLED: AtomicBool = AtomicBool::new(false);
    if INSTALLED.swap(true, Ordering::SeqCst) {
        return;
    }
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let _ = restore();
        // SIGTERM, not SIGKILL: Pi gets to save its session; the workbench is exiting anyway.
        let pgid = CHILD_PGID.load(Ordering::SeqCst);
        if let Some(group) = u32::try_from(pgid)
            .ok()
            .and_then(crate::sys::ProcessGroup::of_leader)
        {
            let _ = group.signal(nix::sys::signal::Signal::SIGTERM);
        }
        for cleanup in lock(&PANIC_CLEANUP).iter() {
            cleanup();
        }
        tracing::error!("panic: {info}");
        previous(info);
    }));
}
