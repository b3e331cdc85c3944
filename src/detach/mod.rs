//! Detachable sessions: the workbench survives a dropped SSH connection (the dtach/abduco model,
//! no tmux). `unipi-tui --detachable NAME` starts a **session process** ([`daemon`]) that owns a
//! PTY in which the ordinary workbench runs, and attaches a thin **client** ([`client`]) that
//! relays the user's terminal to it. Losing the terminal (SIGHUP, the SSH client killed) or the
//! detach key only lets the client go; the workbench, Pi and everything they started keep
//! running, and `unipi-tui attach NAME` brings any terminal back to it.
//!
//! | file | owns |
//! |---|---|
//! | `protocol.rs` | the socket's frames: terminal bytes as they are, control messages as JSON |
//! | `registry.rs` | `<runtime root>/sessions/<name>/` (socket, info, owner), names, stale ones |
//! | `server.rs` | the session's core: accept (peer credentials), attach/takeover/detach, the relay |
//! | `daemon.rs` | the session process: `setsid`, its log, its watchdog, `ready` to the launcher |
//! | `launch.rs` | `--detachable NAME` / `workbench.json`: start the session process, attach |
//! | `client.rs` + `terminal.rs` + `modes.rs` | attach (relay, resize, signals, the terminal given back), `ls`, `kill` |
//! | `inside.rs` | the workbench's side: its control link, the detach key, Pi's state, attached |
//! | `config.rs` | `workbench.json`'s `detach` settings |
//! | `commands.rs` | `unipi-tui ls`, `attach NAME`, `kill NAME` |

pub mod client;
pub mod commands;
pub mod config;
pub mod daemon;
pub mod inside;
pub mod launch;
pub mod modes;
pub mod protocol;
pub mod registry;
pub mod server;
pub mod terminal;

pub use inside::REGISTRATION;
