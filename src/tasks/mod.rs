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
pub use logs::{
    LogRead, MAX_LOG_BYTES, bounded_read, format_log_text, last_line, last_lines, last_lines_of,
    normalize_max_bytes,
};
pub use model::{
    DeliveryMode, KillKind, TaskInfo, TaskOrigin, TaskStatus, delivery_guidance,
    derive_task_name_from_command, format_duration, format_size, format_task_line,
    format_task_list, normalize_task_name, resolve_task_name, sort_tasks,
};
pub use module::{BgCommand, TasksModule, parse_bg_command};
pub use notify::{
    NOTIFICATION_GUIDANCE, NOTIFICATION_TYPE, build_notice, notification_content,
    notification_details,
};
pub use service::{
    DEFAULT_MAX_OUTPUT_BYTES, KILL_GRACE, MAX_RECENT_TASKS, RunRequest, STOP_WAIT, TaskError,
    TaskRegistry, TaskService, TaskSettings,
};
