//! Background tasks: the agent (or the user) starts long-running shell commands that run beside
//! the conversation, and a task's end comes back as one durable notification instead of polling.
//!
//! Shape: [`TaskService`] owns the processes (one process group each, output straight to a file,
//! durable JSON snapshot per task) and is the only thing that starts or stops them;
//! [`TaskRegistry`] is its read-only view (a snapshot plus a change signal) for the dock, the
//! footer and other modules; [`TasksModule`] is the bridge face (`bg_run`, `bg_status`,
//! `bg_logs`, `bg_kill` and the notification card), and [`commands`] the `/unipi:bg*` commands.
//! Pure text — names, guidance, status lines, the notification block — lives in `model`, `logs` and
//! `notify` so it is table-tested without processes. What the tasks tell other capabilities goes
//! on the event bus as the messages in `bus` (a task's end, the running counts).

pub mod bus;
mod capability;
mod capture;
mod config;
pub mod dock;
mod logs;
mod model;
mod module;
mod notify;
mod orphans;
mod service;

pub use capability::{REGISTRATION, commands};
pub use config::{TASKS_CONFIG_FILE, TasksConfig};
pub use logs::{last_line, last_lines};
pub(crate) use model::format_task_list;
pub use model::{KillKind, TaskInfo, TaskOrigin, TaskStatus, format_size};
pub use module::TasksModule;
pub use notify::{NOTIFICATION_TYPE, notification_content};
pub(crate) use service::DEFAULT_MAX_OUTPUT_BYTES;
pub use service::{KILL_GRACE, RunRequest, TaskError, TaskRegistry, TaskService, TaskSettings};
