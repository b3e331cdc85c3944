//! The integration tests, one binary: each area's tests are a module of `suite/` (run one with
//! `cargo test --test all suite::<area>::`), and they share the helpers of `support/`, compiled
//! once. Snapshots keep the names they had when each area was a binary of its own
//! (`snapshots/<area>__<name>.snap`).

mod suite;
mod support;
