//! Reading the outer terminal's input (stdin) on a thread of its own, since reads block: the
//! workbench's loop and the detach client both take raw bytes this way and learn when input ends.

use std::io::Read as _;

use anyhow::{Context, Result};
use tokio::sync::mpsc;

/// Starts the thread `thread`: every chunk read goes to `tx` as `input(bytes)` until the receiver
/// is gone; when stdin ends, `ended(None)` at its end, `ended(Some(err))` on a read error, is
/// sent last. An interrupted read is retried.
pub fn spawn_reader<T: Send + 'static>(
    thread: &str,
    tx: mpsc::Sender<T>,
    input: impl Fn(Vec<u8>) -> T + Send + 'static,
    ended: impl FnOnce(Option<std::io::Error>) -> T + Send + 'static,
) -> Result<()> {
    std::thread::Builder::new()
        .name(thread.into())
        .spawn(move || {
            let mut stdin = std::io::stdin();
            let mut buf = vec![0u8; 16 * 1024];
            let error = loop {
                match stdin.read(&mut buf) {
                    Ok(0) => break None,
                    Ok(n) => {
                        if tx.blocking_send(input(buf[..n].to_vec())).is_err() {
                            return;
                        }
                    }
                    Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(err) => break Some(err),
                }
            };
            let _ = tx.blocking_send(ended(error));
        })
        .context("failed to start the input thread")?;
    Ok(())
}
