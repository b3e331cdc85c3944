//! MCP bridging: the workbench owns one process per configured MCP server, shared by the main
//! agent and every helper, and declares each server's tools to every connected Pi.

pub mod bus;
pub mod call;
pub mod capability;
pub mod client;
pub mod config;
pub mod manager;
pub mod module;
pub mod naming;
pub mod view;

pub use capability::REGISTRATION;
