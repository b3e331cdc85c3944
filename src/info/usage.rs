//! Usage and cost from Pi's own session files (`<agent dir>/sessions/**/*.jsonl`), the way the
//! original Unipi's info screen counted them: every assistant message with a usage (both Pi
//! lines write `{"type":"message","message":{"role":"assistant","usage":{…},"model":…}}`), and on
//! Pi 1.x also the entries that record model work outside the conversation (`"type":"usage"`,
//! and the `usage` of compaction and branch summaries). An entry copied into a forked session is
//! counted once (by its time and token figures, as Unipi did). Tokens are input + output + cache
//! writes (cache reads are cheap re-reads, shown apart); periods start at local midnight, on
//! Monday and on the 1st, with the clock injected so the boundaries are testable.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::sys::time::{civil_date, days_from_civil, parse_iso_utc};

const DAY_MS: i64 = 86_400_000;

/// The moment the figures are for, and the local time zone's offset then.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Clock {
    pub now_ms: u64,
    /// Seconds east of UTC.
    pub utc_offset_s: i64,
}

impl Clock {
    /// Now, in the local time zone.
    pub(crate) fn local() -> Self {
        let now_ms = crate::sys::time::now_ms();
        Clock {
            now_ms,
            utc_offset_s: crate::sys::time::local_offset_seconds(now_ms),
        }
    }

    /// Where today, this week (from Monday) and this month start, in ms since the epoch.
    fn period_starts(&self) -> [i64; 3] {
        let offset_ms = self.utc_offset_s * 1000;
        let local = i64::try_from(self.now_ms).unwrap_or(i64::MAX / 2) + offset_ms;
        let day = local.div_euclid(DAY_MS);
        // 1970-01-01 was a Thursday: three days after a Monday.
        let weekday = (day + 3).rem_euclid(7);
        let (year, month, _) = civil_date(day);
        let month_day = days_from_civil(year, month, 1);
        [day, day - weekday, month_day].map(|start| start * DAY_MS - offset_ms)
    }
}

/// Token and cost totals over some messages.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Totals {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub cost: f64,
    /// Replies (and other model calls) counted.
    pub calls: u64,
}

impl Totals {
    /// Tokens as Unipi counted them: input + output + cache writes.
    pub(crate) fn tokens(&self) -> u64 {
        self.input + self.output + self.cache_write
    }

    fn add(&mut self, usage: &Usage) {
        self.input += usage.input;
        self.output += usage.output;
        self.cache_read += usage.cache_read;
        self.cache_write += usage.cache_write;
        self.cost += usage.cost;
        self.calls += 1;
    }
}

/// One period's figures: the totals and each model's.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Period {
    pub totals: Totals,
    pub models: BTreeMap<String, Totals>,
}

impl Period {
    fn add(&mut self, model: &str, usage: &Usage) {
        self.totals.add(usage);
        self.models.entry(model.to_owned()).or_default().add(usage);
    }

    /// The model that cost the most (most tokens when nothing cost anything), with its figures.
    pub(crate) fn top_model(&self) -> Option<(&str, &Totals)> {
        self.models
            .iter()
            .max_by(|(_, a), (_, b)| {
                a.cost
                    .total_cmp(&b.cost)
                    .then_with(|| a.tokens().cmp(&b.tokens()))
            })
            .map(|(name, totals)| (name.as_str(), totals))
    }
}

/// Usage over every session file.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct UsageStats {
    pub today: Period,
    pub week: Period,
    pub month: Period,
    pub all: Period,
    /// Session files with at least one counted call.
    pub sessions: usize,
    /// Files that could not be read (named in the log).
    pub unreadable: usize,
}

/// The usage in every `*.jsonl` below `sessions_dir` (a missing folder has none).
pub(crate) fn read_usage(sessions_dir: &Path, clock: &Clock) -> UsageStats {
    let mut files = Vec::new();
    collect_jsonl(sessions_dir, &mut files);
    files.sort();
    let mut usage = Aggregate::new(clock);
    for file in files {
        match std::fs::read_to_string(&file) {
            Ok(text) => usage.add_file(&text),
            Err(err) => {
                tracing::warn!("usage: cannot read {}: {err}", file.display());
                usage.stats.unreadable += 1;
            }
        }
    }
    usage.stats
}

/// Totals being added up, file by file.
pub(crate) struct Aggregate {
    starts: [i64; 3],
    seen: HashSet<(u64, u64)>,
    pub(crate) stats: UsageStats,
}

impl Aggregate {
    pub(crate) fn new(clock: &Clock) -> Self {
        Aggregate {
            starts: clock.period_starts(),
            seen: HashSet::new(),
            stats: UsageStats::default(),
        }
    }

    /// One session file's lines; lines that are not JSON or carry no usage are skipped.
    pub(crate) fn add_file(&mut self, text: &str) {
        let mut counted = false;
        for line in text.lines() {
            let Ok(entry) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            let Some((at, model, usage)) = entry_usage(&entry) else {
                continue;
            };
            let kept = usage.input > 0 || usage.output > 0 || usage.cost > 0.0;
            // A fork copies its parent's entries: count each call once.
            if !kept || !self.seen.insert((at, usage.all_tokens())) {
                continue;
            }
            counted = true;
            let at = i64::try_from(at).unwrap_or(i64::MAX);
            let [today, week, month] = self.starts;
            let stats = &mut self.stats;
            stats.all.add(&model, &usage);
            for (start, period) in [
                (month, &mut stats.month),
                (week, &mut stats.week),
                (today, &mut stats.today),
            ] {
                if at >= start {
                    period.add(&model, &usage);
                }
            }
        }
        if counted {
            self.stats.sessions += 1;
        }
    }
}

/// One call's usage.
#[derive(Debug, Default)]
struct Usage {
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
    cost: f64,
}

impl Usage {
    fn all_tokens(&self) -> u64 {
        self.input + self.output + self.cache_read + self.cache_write
    }
}

/// When, by which model and how much an entry used, if it records model work: an assistant
/// message (`message.usage`), a 1.x usage entry, or a summary made by a model.
fn entry_usage(entry: &Value) -> Option<(u64, String, Usage)> {
    let (usage, model, at) = match entry["type"].as_str()? {
        "message" => {
            let message = &entry["message"];
            if message["role"] != "assistant" {
                return None;
            }
            let at = message["timestamp"].as_u64();
            (&message["usage"], &message["model"], at)
        }
        "usage" => (&entry["usage"], &entry["model"], None),
        "compaction" | "branch_summary" => (&entry["usage"], &Value::Null, None),
        _ => return None,
    };
    let at = at.or_else(|| parse_iso_utc(entry["timestamp"].as_str()?))?;
    usage.as_object()?;
    let count = |key: &str| usage[key].as_u64().unwrap_or(0);
    let usage = Usage {
        input: count("input"),
        output: count("output"),
        cache_read: count("cacheRead"),
        cache_write: count("cacheWrite"),
        cost: usage["cost"]["total"].as_f64().unwrap_or(0.0),
    };
    let model = model.as_str().unwrap_or("summaries").to_owned();
    Some((at, model, usage))
}

/// Every `*.jsonl` below `dir`, depth first (symbolic links are not followed).
fn collect_jsonl(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        match entry.file_type() {
            Ok(kind) if kind.is_dir() => collect_jsonl(&path, files),
            Ok(kind) if kind.is_file() && path.extension().is_some_and(|ext| ext == "jsonl") => {
                files.push(path);
            }
            _ => {}
        }
    }
}

/// A cost as Unipi showed it: `$0.00`, `<$0.01`, `$1.23`.
pub(crate) fn format_cost(cost: f64) -> String {
    if cost <= 0.0 {
        "$0.00".to_owned()
    } else if cost < 0.01 {
        "<$0.01".to_owned()
    } else {
        format!("${cost:.2}")
    }
}

#[cfg(test)]
#[path = "usage_tests.rs"]
mod tests;
