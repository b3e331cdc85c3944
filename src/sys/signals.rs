//! Listening for a set of Unix signals in a foreground loop (the workbench, the detach client,
//! Pi run without a pane): the handlers are installed when the set is made, so a signal that
//! arrives before the loop first waits is kept rather than ending the process with the default
//! action, and the loop waits on the whole set in one `select!` arm.

use anyhow::{Context, Result};
use nix::sys::signal::Signal;
use tokio::signal::unix::{SignalKind, signal};

/// Handlers for a set of signals, in the order given: when several are pending at once, the
/// first listed is answered first.
pub struct Signals {
    listening: Vec<(Signal, tokio::signal::unix::Signal)>,
}

impl Signals {
    /// Installs a handler for each of `signals` now.
    pub fn listen(signals: &[Signal]) -> Result<Signals> {
        let listening = signals
            .iter()
            .map(|&wanted| {
                let handler = signal(SignalKind::from_raw(wanted as i32))
                    .with_context(|| format!("failed to install a handler for {wanted}"))?;
                Ok((wanted, handler))
            })
            .collect::<Result<_>>()?;
        Ok(Signals { listening })
    }

    /// The next of the signals to arrive. Cancel-safe: one that arrives while nothing waits is
    /// returned by the next call.
    pub async fn next(&mut self) -> Signal {
        std::future::poll_fn(|cx| {
            for (wanted, handler) in &mut self.listening {
                // `Ready(None)` (the runtime's signal driver is gone) ends the wait too, as a
                // plain `recv()` in a `select!` arm did.
                if handler.poll_recv(cx).is_ready() {
                    return std::task::Poll::Ready(*wanted);
                }
            }
            std::task::Poll::Pending
        })
        .await
    }
}

/// The exit code a shell reports for a process ended by `signal`: 128 + N.
pub fn exit_code(signal: Signal) -> i32 {
    128 + signal as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_first_listed_pending_signal_is_answered_first_and_none_is_lost() {
        // SIGWINCH and SIGURG are ignored by default, so a signal that missed its handler would
        // not end the test process.
        let mut signals = Signals::listen(&[Signal::SIGWINCH, Signal::SIGURG]).unwrap();
        nix::sys::signal::raise(Signal::SIGURG).unwrap();
        nix::sys::signal::raise(Signal::SIGWINCH).unwrap();
        // Both must be delivered before the first wait, or this does not test the order: the
        // handlers' wake-up pipe is shared by every runtime in the process, and another test's
        // runtime may pass SIGURG on before SIGWINCH has arrived. While this runtime sleeps its
        // own signal driver reads whatever is left in the pipe.
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        assert_eq!(signals.next().await, Signal::SIGWINCH);
        assert_eq!(signals.next().await, Signal::SIGURG);
        assert_eq!(exit_code(Signal::SIGTERM), 143);
    }
}
