//! Fusion's side of the session database: each served call is appended to `sidekick_calls` in
//! the project's database (`~/.unipi/db/<project>.sqlite`, the compactor's file), and the totals
//! are read back from it — the session's and the project's all-time — so the footer's figures
//! survive a restart. All database work runs on one thread of its own, in the order it was
//! asked for: a read asked after a write sees it, which is what lets the engine add the calls
//! recorded since a read to that read's totals without counting any twice. The connection is
//! opened at the first use; a database that cannot be opened is logged and the savings are kept
//! in memory only.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, mpsc};

use anyhow::Context as _;
use tokio::sync::oneshot;

use crate::sessiondb::{SessionDb, SidekickCall, SidekickTotals};
use crate::sys::lock;

/// Totals per source, for the session and for all time.
pub(crate) type Breakdown = (Vec<(String, SidekickTotals)>, Vec<(String, SidekickTotals)>);

/// One piece of database work, run on the ledger's thread.
type Job = Box<dyn FnOnce(&mut Option<SessionDb>) + Send>;

/// The database, opened lazily on its own thread.
#[derive(Clone)]
pub struct Ledger {
    path: Option<PathBuf>,
    /// The worker's queue, started at the first use.
    jobs: Arc<Mutex<Option<mpsc::Sender<Job>>>>,
}

impl Ledger {
    /// The project's database under `home` (none without a home: nothing is stored).
    pub(crate) fn for_project(home: Option<&Path>, workspace: &Path) -> Self {
        let path = home.map(|home| {
            crate::sessiondb::project_db_path(&crate::sessiondb::default_db_dir(home), workspace)
        });
        Ledger {
            path,
            jobs: Arc::new(Mutex::new(None)),
        }
    }

    /// Appends `call`.
    pub async fn record(&self, call: SidekickCall) -> anyhow::Result<()> {
        self.with_db(move |db| Ok(db.record_sidekick_call(&call)?))
            .await
    }

    /// The session's totals and the project's all-time totals.
    pub async fn totals(
        &self,
        session: Option<String>,
    ) -> anyhow::Result<(SidekickTotals, SidekickTotals)> {
        self.session_and_all_time(session, SessionDb::sidekick_totals)
            .await
    }

    /// Per-source totals for the session and for all time.
    pub async fn breakdown(&self, session: Option<String>) -> anyhow::Result<Breakdown> {
        self.session_and_all_time(session, SessionDb::sidekick_totals_by_source)
            .await
    }

    /// `query` for the session (empty without one) and for all time, in one job.
    async fn session_and_all_time<T: Default + Send + 'static>(
        &self,
        session: Option<String>,
        query: fn(&SessionDb, Option<&str>) -> Result<T, crate::sessiondb::DbError>,
    ) -> anyhow::Result<(T, T)> {
        self.with_db(move |db| {
            let in_session = match &session {
                Some(id) => query(db, Some(id))?,
                None => T::default(),
            };
            Ok((in_session, query(db, None)?))
        })
        .await
    }

    /// Runs `work` on the ledger's thread after everything asked before it.
    async fn with_db<T: Send + 'static>(
        &self,
        work: impl FnOnce(&SessionDb) -> anyhow::Result<T> + Send + 'static,
    ) -> anyhow::Result<T> {
        let Some(path) = self.path.clone() else {
            anyhow::bail!("no home directory: the savings are not stored");
        };
        let (reply, answer) = oneshot::channel();
        let job: Job = Box::new(move |slot: &mut Option<SessionDb>| {
            let _ = reply.send(run_job(slot, &path, work));
        });
        self.queue()?
            .send(job)
            .map_err(|_| anyhow::anyhow!("the ledger's thread has ended"))?;
        answer
            .await
            .context("the ledger's thread dropped the work (it panicked)")?
    }

    fn queue(&self) -> anyhow::Result<mpsc::Sender<Job>> {
        let mut jobs = lock(&self.jobs);
        if let Some(sender) = jobs.as_ref() {
            return Ok(sender.clone());
        }
        let (sender, receiver) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("fusion-ledger".to_owned())
            .spawn(move || {
                let mut db = None;
                // Ends when every sender is gone (the ledger was dropped).
                while let Ok(job) = receiver.recv() {
                    job(&mut db);
                }
            })
            .context("start the ledger's thread")?;
        *jobs = Some(sender.clone());
        Ok(sender)
    }
}

/// Opens the database if it is not open, then does `work` with it.
fn run_job<T>(
    slot: &mut Option<SessionDb>,
    path: &Path,
    work: impl FnOnce(&SessionDb) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    if slot.is_none() {
        let opened = SessionDb::open(path)
            .with_context(|| format!("open the session database {}", path.display()))?;
        if let Some(recovered) = &opened.recovered {
            tracing::warn!(
                "fusion: the session database was damaged and moved to {}",
                recovered.moved_to.display()
            );
        }
        *slot = Some(opened.db);
    }
    match slot.as_ref() {
        Some(db) => work(db),
        None => anyhow::bail!("the session database is not open"),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use super::*;

    #[tokio::test]
    async fn calls_are_stored_in_the_projects_database_and_summed_back() {
        let root = tempfile::tempdir().unwrap();
        let (home, workspace) = (root.path().join("home"), root.path().join("work"));
        std::fs::create_dir_all(&workspace).unwrap();
        let ledger = Ledger::for_project(Some(&home), &workspace);
        let call = SidekickCall {
            session_id: "s1".into(),
            at_ms: 1,
            source: "btw".into(),
            sidekick_model: "p/small".into(),
            primary_model: "p/big".into(),
            input_tokens: 1000,
            output_tokens: 100,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            sidekick_cost: 0.001,
            primary_cost: 0.02,
        };
        ledger.record(call.clone()).await.unwrap();
        ledger
            .record(SidekickCall {
                session_id: "s0".into(),
                ..call
            })
            .await
            .unwrap();
        let (session, all) = ledger.totals(Some("s1".into())).await.unwrap();
        assert_eq!((session.calls, all.calls), (1, 2));
        // A second ledger (a restart) reads the same file.
        let again = Ledger::for_project(Some(&home), &workspace);
        let (rows, all_rows) = again.breakdown(Some("s1".into())).await.unwrap();
        assert_eq!(rows[0].0, "btw");
        assert_eq!(all_rows[0].1.calls, 2);
        assert!(
            Ledger::for_project(None, &workspace)
                .totals(None)
                .await
                .is_err()
        );
    }
}
