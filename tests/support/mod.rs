//! Helpers shared by the integration tests' suites.
#![allow(clippy::expect_used, clippy::unwrap_used)]

pub mod demo;
pub mod detach;
pub mod nobody;
pub mod ntfy;
pub mod pi;
pub mod procs;
pub mod sandbox;
pub mod term;
pub mod unipi;
pub mod wait;
pub mod web;
pub mod workbench;
