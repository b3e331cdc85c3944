//! Keeping what strangers send out of the log in bulk. Anyone who can reach the socket can make
//! the host refuse connections as fast as it accepts them, and a client can send lines of
//! megabytes: logged as they came, 2,000 refusals wrote 600 KB in 0.04 s. So refusals are
//! logged at most [`RefusalLog::BURST`] per [`RefusalLog::WINDOW`] (the next logged one says how
//! many were left out), and every text that came from a client is cut ([`clip`]) before it is
//! logged.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::sys::lock;

/// The most characters of a client's text that go into one log line.
pub(crate) const CLIP_CHARS: usize = 300;

/// `text` as it may go into the log: at most [`CLIP_CHARS`] characters, then how much more
/// there was.
pub(crate) fn clip(text: &str) -> String {
    match text.char_indices().nth(CLIP_CHARS) {
        None => text.to_string(),
        Some((cut, _)) => format!(
            "{}… ({} more bytes not shown)",
            &text[..cut],
            text.len() - cut
        ),
    }
}

/// How many refusals may be logged now.
#[derive(Debug)]
pub(crate) struct RefusalLog {
    state: Mutex<Window>,
}

#[derive(Debug)]
struct Window {
    started: Option<Instant>,
    logged: u32,
    /// Refusals left out of the log since the last one that went in.
    left_out: u64,
}

/// What to do with one refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admit {
    /// Log it, after saying that `left_out` refusals before it were not logged.
    Log { left_out: u64 },
    /// Leave it out (it is counted).
    Skip,
}

impl Default for RefusalLog {
    fn default() -> Self {
        Self {
            state: Mutex::new(Window {
                started: None,
                logged: 0,
                left_out: 0,
            }),
        }
    }
}

impl RefusalLog {
    /// Refusals logged per window.
    pub(crate) const BURST: u32 = 5;
    /// The window.
    pub(crate) const WINDOW: Duration = Duration::from_secs(10);

    /// Whether the refusal happening `now` goes into the log.
    pub(crate) fn admit(&self, now: Instant) -> Admit {
        let mut window = lock(&self.state);
        let expired = window
            .started
            .is_none_or(|started| now.duration_since(started) >= Self::WINDOW);
        if expired {
            window.started = Some(now);
            window.logged = 0;
        }
        if window.logged < Self::BURST {
            window.logged += 1;
            Admit::Log {
                left_out: std::mem::take(&mut window.left_out),
            }
        } else {
            window.left_out += 1;
            Admit::Skip
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_is_logged_then_the_rest_counted_until_the_next_window() {
        let log = RefusalLog::default();
        let start = Instant::now();
        for _ in 0..RefusalLog::BURST {
            assert_eq!(log.admit(start), Admit::Log { left_out: 0 });
        }
        for _ in 0..1000 {
            assert_eq!(log.admit(start + Duration::from_secs(1)), Admit::Skip);
        }
        let next = start + RefusalLog::WINDOW;
        assert_eq!(log.admit(next), Admit::Log { left_out: 1000 });
        assert_eq!(log.admit(next), Admit::Log { left_out: 0 });
    }

    #[test]
    fn long_texts_are_cut_on_a_character_boundary() {
        assert_eq!(clip("short"), "short");
        let long = "é".repeat(CLIP_CHARS + 10);
        let cut = clip(&long);
        assert!(cut.starts_with(&"é".repeat(CLIP_CHARS)), "{cut}");
        assert!(cut.ends_with("… (20 more bytes not shown)"), "{cut}");
    }
}
