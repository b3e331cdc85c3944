//! Model fusion's ledger in the session database: one row per model call the sidekick served
//! (`sidekick_calls`, schema version 3) with its tokens, its cost on the sidekick and what the
//! same tokens would have cost on the primary. Totals are summed in SQL, per session and source
//! or over the whole project file, so the footer's "all-time" figure survives restarts without a
//! second store.

use rusqlite::params;

use super::{DbError, SessionDb, to_i64, to_u64};

/// One call the sidekick served, as recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct SidekickCall {
    pub session_id: String,
    pub at_ms: i64,
    /// What asked: `helper`, `btw`, `naming`, `delegate`.
    pub source: String,
    /// `provider/id` of the sidekick that served it and of the primary it stood in for.
    pub sidekick_model: String,
    pub primary_model: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    pub sidekick_cost: f64,
    pub primary_cost: f64,
}

/// Sums over recorded calls.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SidekickTotals {
    pub calls: u64,
    pub tokens: u64,
    pub sidekick_cost: f64,
    pub primary_cost: f64,
}

impl SidekickTotals {
    /// What the sidekick saved: the primary's cost of the same tokens minus what they cost.
    pub fn saved(&self) -> f64 {
        self.primary_cost - self.sidekick_cost
    }

    /// These totals and `other`'s together.
    pub fn plus(self, other: SidekickTotals) -> SidekickTotals {
        SidekickTotals {
            calls: self.calls + other.calls,
            tokens: self.tokens + other.tokens,
            sidekick_cost: self.sidekick_cost + other.sidekick_cost,
            primary_cost: self.primary_cost + other.primary_cost,
        }
    }

    /// These totals with one more call in them.
    pub fn add(&mut self, call: &SidekickCall) {
        self.calls += 1;
        self.tokens += call.input_tokens
            + call.output_tokens
            + call.cache_read_tokens
            + call.cache_write_tokens;
        self.sidekick_cost += call.sidekick_cost;
        self.primary_cost += call.primary_cost;
    }
}

impl SessionDb {
    /// Appends one served call.
    pub fn record_sidekick_call(&self, call: &SidekickCall) -> Result<(), DbError> {
        self.conn
            .prepare_cached(
                "INSERT INTO sidekick_calls (session_id, at_ms, source, sidekick_model,
                     primary_model, input_tokens, output_tokens, cache_read_tokens,
                     cache_write_tokens, sidekick_cost, primary_cost)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            )
            .and_then(|mut stmt| {
                stmt.execute(params![
                    call.session_id,
                    call.at_ms,
                    call.source,
                    call.sidekick_model,
                    call.primary_model,
                    to_i64(call.input_tokens),
                    to_i64(call.output_tokens),
                    to_i64(call.cache_read_tokens),
                    to_i64(call.cache_write_tokens),
                    call.sidekick_cost,
                    call.primary_cost,
                ])
            })
            .map_err(|e| self.sqlite(e))?;
        Ok(())
    }

    /// Totals per source (sorted by source), for one session or (`None`) the whole project.
    pub fn sidekick_totals_by_source(
        &self,
        session_id: Option<&str>,
    ) -> Result<Vec<(String, SidekickTotals)>, DbError> {
        self.conn
            .prepare_cached(
                "SELECT source, count(*),
                     SUM(input_tokens + output_tokens + cache_read_tokens + cache_write_tokens),
                     SUM(sidekick_cost), SUM(primary_cost)
                 FROM sidekick_calls WHERE ?1 IS NULL OR session_id = ?1
                 GROUP BY source ORDER BY source",
            )
            .and_then(|mut stmt| {
                stmt.query_map([session_id], |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        SidekickTotals {
                            calls: to_u64(row.get(1)?),
                            tokens: to_u64(row.get(2)?),
                            sidekick_cost: row.get(3)?,
                            primary_cost: row.get(4)?,
                        },
                    ))
                })?
                .collect()
            })
            .map_err(|e| self.sqlite(e))
    }

    /// Totals over every source, for one session or (`None`) the whole project.
    pub fn sidekick_totals(&self, session_id: Option<&str>) -> Result<SidekickTotals, DbError> {
        Ok(self
            .sidekick_totals_by_source(session_id)?
            .into_iter()
            .fold(SidekickTotals::default(), |all, (_, totals)| {
                all.plus(totals)
            }))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed step should panic
mod tests {
    use super::*;

    fn call(session: &str, source: &str, input: u64, sidekick: f64, primary: f64) -> SidekickCall {
        SidekickCall {
            session_id: session.into(),
            at_ms: 1,
            source: source.into(),
            sidekick_model: "p/small".into(),
            primary_model: "p/big".into(),
            input_tokens: input,
            output_tokens: 10,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            sidekick_cost: sidekick,
            primary_cost: primary,
        }
    }

    #[test]
    fn calls_sum_per_session_per_source_and_over_the_project() {
        let db = SessionDb::open_in_memory().unwrap();
        for recorded in [
            call("s1", "helper", 100, 0.01, 0.5),
            call("s1", "btw", 50, 0.002, 0.1),
            call("s1", "helper", 200, 0.02, 1.0),
            call("s2", "naming", 20, 0.001, 0.04),
        ] {
            db.record_sidekick_call(&recorded).unwrap();
        }
        let s1 = db.sidekick_totals(Some("s1")).unwrap();
        assert_eq!((s1.calls, s1.tokens), (3, 380));
        assert!((s1.saved() - 1.568).abs() < 1e-9, "{s1:?}");
        let by_source = db.sidekick_totals_by_source(Some("s1")).unwrap();
        let names: Vec<&str> = by_source.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, ["btw", "helper"]);
        assert_eq!(by_source[1].1.calls, 2);
        let all = db.sidekick_totals(None).unwrap();
        assert_eq!(all.calls, 4);
        assert!((all.saved() - 1.607).abs() < 1e-9, "{all:?}");
        assert_eq!(
            db.sidekick_totals(Some("none")).unwrap(),
            SidekickTotals::default()
        );
        let mut running = SidekickTotals::default();
        running.add(&call("s", "btw", 5, 0.5, 1.5));
        assert_eq!(
            (running.calls, running.tokens, running.saved()),
            (1, 15, 1.0)
        );
    }
}
