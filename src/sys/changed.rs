//! The "something changed" signal: a version counter in a `watch` channel. Whoever owns state
//! that others show bumps it on every change; readers wait on a receiver and then read the state
//! itself (nothing is carried in the signal, so bursts coalesce). Services keep one to tell their
//! capability, and a capability hands the app one through `Capability::changes`.

use std::sync::Arc;

use tokio::sync::watch;

/// A change signal. Cheap to clone: every clone bumps the same counter.
#[derive(Clone, Debug)]
pub struct Changed(Arc<watch::Sender<u64>>);

impl Default for Changed {
    fn default() -> Self {
        Changed(Arc::new(watch::channel(0).0))
    }
}

impl Changed {
    /// Tells every receiver that something changed.
    pub fn bump(&self) {
        self.0
            .send_modify(|version| *version = version.wrapping_add(1));
    }

    /// A receiver that sees every later bump (and none before it).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.0.subscribe()
    }

    /// Bumps this signal whenever `source` changes, until either side is gone.
    pub fn follow(&self, mut source: watch::Receiver<u64>) {
        let this = self.clone();
        tokio::spawn(async move {
            while source.changed().await.is_ok() {
                this.bump();
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_clone_bumps_the_one_counter() {
        let changed = Changed::default();
        let mut seen = changed.subscribe();
        assert!(!seen.has_changed().unwrap());
        changed.clone().bump();
        assert!(seen.has_changed().unwrap());
        seen.borrow_and_update();
        assert!(!seen.has_changed().unwrap());
    }
}
