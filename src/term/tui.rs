//! Owning the outer terminal: entering the workbench's modes, and restoring the terminal on every
//! exit path (normal exit, error, panic, SIGHUP/SIGTERM/SIGINT).
//!
//! Restoration is a free function guarded by one atomic flag, so the panic hook, the signal path
//! and the normal path can all call it and only the first does the work. Every restore step runs
//! even when an earlier one fails; the first error is reported (codex `tui.rs`). Raw mode is
//! disabled first: it has the widest side effects (ratatui's `restore`).
//!
//! The terminal can also vanish under us (its window closed, `tmux kill-pane`, an SSH drop):
//! then there is nothing to restore, every write to it fails, and the errors are only logged.
//! [`release_gone_terminal`] points stdout and stderr at `/dev/null`, so nothing written later
//! (ratatui showing its cursor on drop, an error message) fails or panics on the dead terminal.

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

/// The keyboard protocol [`enter`] set up on the outer terminal, while the workbench has it.
pub fn keyboard_protocol() -> Option<KeyboardProtocol> {
    if !ACTIVE.load(Ordering::SeqCst) {
        return None;
    }
    [
        KeyboardProtocol::Kitty,
        KeyboardProtocol::ModifyOtherKeys,
        KeyboardProtocol::Legacy,
    ]
    .into_iter()
    .find(|protocol| *protocol as i32 == KEYBOARD.load(Ordering::SeqCst))
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
    set_up(&mut io::stdout(), protocol)?;
    Ok(protocol)
}

/// A detachable session's terminal attached — another one than before, or the same one back
/// (its client restored it when it left): every mode [`enter`] set is set up again on it, for
/// its keyboard `protocol`, and the screen is cleared for a full repaint. Raw mode is the
/// session's PTY's and never changed.
pub fn reenter(out: &mut impl Write, protocol: KeyboardProtocol) -> Result<()> {
    set_up(out, protocol)?;
    execute!(
        out,
        crossterm::terminal::Clear(crossterm::terminal::ClearType::All)
    )
    .context("failed to clear the screen")
}

/// The alternate screen, mouse, paste and focus reporting, a hidden cursor, and the keyboard
/// `protocol` (remembered for [`restore`]).
fn set_up(out: &mut impl Write, protocol: KeyboardProtocol) -> Result<()> {
    KEYBOARD.store(protocol as i32, Ordering::SeqCst);
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
    Ok(())
}

/// Records the child's process group so an abnormal exit (panic) can stop it.
pub fn set_child_process_group(pgid: u32) {
    CHILD_PGID.store(i32::try_from(pgid).unwrap_or(0), Ordering::SeqCst);
}

/// Why [`restore`] could not put the terminal back.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    /// The terminal is gone ([`terminal_gone`]): nothing is left to restore.
    #[error("the terminal is gone ({what}: {source})")]
    TerminalGone {
        what: &'static str,
        #[source]
        source: io::Error,
    },
    /// The terminal is there but refused a step.
    #[error("{what}: {source}")]
    Failed {
        what: &'static str,
        #[source]
        source: io::Error,
    },
}

/// Whether an I/O error on the terminal means it no longer exists: its PTY was hung up (the
/// window closed, `tmux kill-pane`, the SSH connection dropped). Reads and writes then fail with
/// EIO, terminal ioctls with ENXIO, a closed pipe with EPIPE.
pub fn terminal_gone(err: &io::Error) -> bool {
    use nix::errno::Errno;
    err.kind() == io::ErrorKind::BrokenPipe
        || err
            .raw_os_error()
            .is_some_and(|code| [Errno::EIO, Errno::ENXIO].contains(&Errno::from_raw(code)))
}

/// Whether any cause in `err`'s chain is [`terminal_gone`].
pub fn error_means_terminal_gone(err: &anyhow::Error) -> bool {
    err.chain()
        .any(|cause| cause.downcast_ref::<io::Error>().is_some_and(terminal_gone))
}

/// The terminal is gone: points stdout and stderr at `/dev/null`, so later writes to them
/// succeed and vanish instead of failing (ratatui prints "Failed to show the cursor" when it
/// cannot, and `eprintln!` panics when stderr fails).
pub fn release_gone_terminal() {
    let released = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/null")
        .map_err(anyhow::Error::new)
        .and_then(|null| {
            nix::unistd::dup2_stdout(&null)?;
            nix::unistd::dup2_stderr(&null)?;
            Ok(())
        });
    match released {
        Ok(()) => tracing::info!("the terminal is gone; stdout and stderr now go to /dev/null"),
        Err(err) => {
            tracing::warn!("the terminal is gone, and /dev/null could not replace it: {err:#}")
        }
    }
}

/// Puts the terminal back the way we found it. Idempotent; safe from the panic hook. When the
/// terminal is gone ([`RestoreError::TerminalGone`]) it is released ([`release_gone_terminal`]).
pub fn restore() -> Result<(), RestoreError> {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return Ok(());
    }
    let mut first_error: Option<RestoreError> = None;
    let mut note = |result: io::Result<()>, what: &'static str| {
        let Err(source) = result else { return };
        let gone = terminal_gone(&source);
        match &first_error {
            // One step found the terminal gone: the rest only confirm it.
            Some(RestoreError::TerminalGone { .. }) => {}
            _ if gone => {
                release_gone_terminal();
                first_error = Some(RestoreError::TerminalGone { what, source });
            }
            Some(RestoreError::Failed { .. }) => {}
            None => first_error = Some(RestoreError::Failed { what, source }),
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

/// The panic hook: the terminal restored, the child's group and whatever was registered
/// ([`register_panic_cleanup`]) stopped, then the default hook. Installed once.
pub(crate) fn install_panic_hook() {
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
