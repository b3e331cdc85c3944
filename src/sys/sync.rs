//! The poison-tolerant mutex lock. A poisoned mutex only says that some holder panicked while
//! it held the lock; the data behind our locks (maps of runs and tasks, queues, tails) stays
//! consistent between statements, so the lock is used as is rather than taking every later
//! caller down with the first panic.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `mutex`, taking the guard of a poisoned one as it is.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poisoned_lock_still_gives_its_data() {
        let mutex = std::sync::Arc::new(Mutex::new(1));
        let held = mutex.clone();
        let panicked = std::thread::spawn(move || {
            let mut value = lock(&held);
            *value = 2;
            panic!("poison the lock");
        })
        .join();
        assert!(panicked.is_err());
        assert!(mutex.is_poisoned());
        assert_eq!(*lock(&mutex), 2);
    }
}
