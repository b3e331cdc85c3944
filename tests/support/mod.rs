//! Helpers shared by the integration tests. Each test binary compiles this module on its own and
//! uses only part of it, hence the `dead_code` allowance.
#![allow(dead_code, clippy::expect_used, clippy::unwrap_used)]

pub mod demo;
pub mod detach;
pub mod nobody;
pub mod ntfy;
pub mod pi;
pub mod procs;
pub mod sandbox;
pub mod term;
pub mod workbench;
