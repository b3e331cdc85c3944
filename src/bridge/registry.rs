//! The set of workbench modules and their state. A module's declarations (tools, message types,
//! and the [`Command`]s registered beside it) are read once when it registers and checked for
//! clashes, so the bridge's hot path (a tool call looking up its module, a command its handler)
//! never calls into module code; only modules that are
//! [`ModuleStatus::Ready`] are declared to Pi. Registering and status changes are announced on the
//! [`EventBus`] under Unipi's names (`unipi:module:ready` / `unipi:module:gone`).

use std::collections::HashSet;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use super::bus::{BusMessage, EventBus, ModuleAnnouncement, ModuleGone, ModuleReady};
use super::command::Command;
use super::module::{MessageTypeSpec, Module, Refusal, ToolSpec};
use super::protocol::{Declarations, ToolDecl};

/// A module's state as `/unipi:info` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModuleStatus {
    Ready,
    /// Turned off (by configuration, or a missing prerequisite), with why.
    Disabled {
        reason: String,
    },
    /// Failed to start or broke, with why.
    Error {
        message: String,
    },
}

/// One module, for display.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleInfo {
    pub name: &'static str,
    pub status: ModuleStatus,
    pub tools: Vec<String>,
    pub commands: Vec<String>,
}

/// Why a module could not be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    #[error("a module named `{0}` is already registered")]
    DuplicateModule(&'static str),
    #[error("module `{module}` declares tool `{tool}`, which module `{owner}` already declares")]
    DuplicateTool {
        module: &'static str,
        tool: String,
        owner: &'static str,
    },
    #[error(
        "module `{module}` declares command `/{command}`, which module `{owner}` already declares"
    )]
    DuplicateCommand {
        module: &'static str,
        command: String,
        owner: &'static str,
    },
    #[error(
        "module `{module}` declares tool `{tool}`: a tool name is 1-64 characters of a-z, A-Z, 0-9, _ and -"
    )]
    BadToolName { module: &'static str, tool: String },
    #[error("no module named `{0}` is registered")]
    UnknownModule(String),
    #[error(
        "module `{module}` declares command `{command}`: commands are named `unipi:<name>` (or a bare `<name>`) with a-z, 0-9 and -"
    )]
    BadCommandName {
        module: &'static str,
        command: String,
    },
}

/// The modules. Shared as `Arc<Registry>` between the app and the bridge host.
#[derive(Debug)]
pub struct Registry {
    entries: RwLock<Vec<Entry>>,
    bus: EventBus,
}

struct Entry {
    module: Arc<dyn Module>,
    status: ModuleStatus,
    tools: Vec<ToolSpec>,
    /// Its `/unipi:*` commands, given at registration (a refresh keeps them).
    commands: Vec<Command>,
    message_types: Vec<MessageTypeSpec>,
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("module", &self.module.name())
            .field("status", &self.status)
            .finish_non_exhaustive()
    }
}

impl Registry {
    /// An empty registry with its own bus.
    pub fn new() -> Self {
        Self::with_bus(EventBus::new())
    }

    /// An empty registry announcing on `bus`.
    pub(crate) fn with_bus(bus: EventBus) -> Self {
        Self {
            entries: RwLock::new(Vec::new()),
            bus,
        }
    }

    /// The bus module and bridge events go out on.
    pub fn bus(&self) -> &EventBus {
        &self.bus
    }

    /// Adds a ready module with no commands.
    pub fn register(&self, module: Arc<dyn Module>) -> Result<(), RegistryError> {
        self.register_with_commands(module, Vec::new())
    }

    /// Adds a ready module and the `/unipi:*` commands listed under it.
    pub fn register_with_commands(
        &self,
        module: Arc<dyn Module>,
        commands: Vec<Command>,
    ) -> Result<(), RegistryError> {
        self.register_with_status(module, commands, ModuleStatus::Ready)
    }

    /// Adds a module and its commands in the given state (a disabled module is listed but not
    /// declared to Pi).
    pub(crate) fn register_with_status(
        &self,
        module: Arc<dyn Module>,
        commands: Vec<Command>,
        status: ModuleStatus,
    ) -> Result<(), RegistryError> {
        let entry = Entry {
            tools: module.tools(),
            commands,
            message_types: module.message_types(),
            module,
            status,
        };
        let name = entry.module.name();
        {
            let mut entries = self.entries.write().unwrap_or_else(PoisonError::into_inner);
            check_new_entry(&entries, &entry)?;
            entries.push(entry);
        }
        tracing::info!("bridge module `{name}` registered");
        self.announce(name);
        Ok(())
    }

    /// Changes a module's state; `false` when there is no such module.
    #[cfg(test)]
    pub(crate) fn set_status(&self, module: &str, status: ModuleStatus) -> bool {
        let found = {
            let mut entries = self.entries.write().unwrap_or_else(PoisonError::into_inner);
            match entries
                .iter_mut()
                .find(|entry| entry.module.name() == module)
            {
                Some(entry) => {
                    entry.status = status;
                    true
                }
                None => false,
            }
        };
        if found {
            self.announce(module);
        }
        found
    }

    /// Re-reads a module's tools and message types (a module whose tools change at run
    /// time, like MCP servers arriving, calls this and then `BridgeHost::redeclare`). They are
    /// checked as at registration, against the other modules; on an error the old declarations
    /// stay and the error says which name clashed.
    pub fn refresh(&self, module: &str) -> Result<(), RegistryError> {
        {
            let mut entries = self.entries.write().unwrap_or_else(PoisonError::into_inner);
            let Some(index) = entries
                .iter()
                .position(|entry| entry.module.name() == module)
            else {
                return Err(RegistryError::UnknownModule(module.to_string()));
            };
            let current = entries.remove(index);
            let fresh = Entry {
                tools: current.module.tools(),
                commands: current.commands.clone(),
                message_types: current.module.message_types(),
                module: current.module.clone(),
                status: current.status.clone(),
            };
            let checked = check_new_entry(&entries, &fresh);
            entries.insert(index, if checked.is_ok() { fresh } else { current });
            checked?;
        }
        self.announce(module);
        Ok(())
    }

    /// Every declared tool as (module, tool), whatever the module's state: the names a module
    /// adding tools at run time must not take.
    pub fn tool_names(&self) -> Vec<(String, String)> {
        let entries = self.entries.read().unwrap_or_else(PoisonError::into_inner);
        entries
            .iter()
            .flat_map(|entry| {
                entry
                    .tools
                    .iter()
                    .map(|spec| (entry.module.name().to_string(), spec.name.clone()))
            })
            .collect()
    }

    /// Every module with its state and declarations, in registration order.
    pub fn modules(&self) -> Vec<ModuleInfo> {
        let entries = self.entries.read().unwrap_or_else(PoisonError::into_inner);
        entries.iter().map(Entry::info).collect()
    }

    /// What to declare to Pi: the ready modules' tools (with their effective timeout),
    /// commands and message types.
    pub(crate) fn declarations(&self, default_tool_timeout: Duration) -> Declarations {
        let entries = self.entries.read().unwrap_or_else(PoisonError::into_inner);
        let ready = entries
            .iter()
            .filter(|entry| entry.status == ModuleStatus::Ready);
        let mut declarations = Declarations::default();
        for entry in ready {
            declarations
                .tools
                .extend(entry.tools.iter().map(|spec| ToolDecl {
                    timeout_ms: millis(spec.timeout.unwrap_or(default_tool_timeout)),
                    spec: spec.clone(),
                }));
            declarations
                .commands
                .extend(entry.commands.iter().map(|command| command.spec.clone()));
            declarations
                .message_types
                .extend(entry.message_types.iter().cloned());
        }
        declarations
    }

    /// The module that handles `tool`, and the tool's own timeout; or why it cannot run.
    pub(crate) fn tool(&self, tool: &str) -> Result<(Arc<dyn Module>, Option<Duration>), Refusal> {
        let entries = self.entries.read().unwrap_or_else(PoisonError::into_inner);
        for entry in entries.iter() {
            if let Some(spec) = entry.tools.iter().find(|spec| spec.name == tool) {
                return match &entry.status {
                    ModuleStatus::Ready => Ok((entry.module.clone(), spec.timeout)),
                    ModuleStatus::Disabled { reason } => Err(format!(
                        "the unipi-tui module `{}` that provides `{tool}` is disabled: {reason}",
                        entry.module.name()
                    )
                    .into()),
                    ModuleStatus::Error { message } => Err(format!(
                        "the unipi-tui module `{}` that provides `{tool}` failed: {message}",
                        entry.module.name()
                    )
                    .into()),
                };
            }
        }
        Err(format!("unipi-tui has no tool named `{tool}`").into())
    }

    /// The first ready module that answers `hook`, with its answer's future.
    pub(crate) fn hook(
        &self,
        hook: &super::module::HookCall,
    ) -> Option<(
        &'static str,
        futures_util::future::BoxFuture<'static, serde_json::Value>,
    )> {
        let modules: Vec<Arc<dyn Module>> = {
            let entries = self.entries.read().unwrap_or_else(PoisonError::into_inner);
            entries
                .iter()
                .filter(|entry| entry.status == ModuleStatus::Ready)
                .map(|entry| entry.module.clone())
                .collect()
        };
        modules.into_iter().find_map(|module| {
            module
                .hook(hook.clone())
                .map(|answer| (module.name(), answer))
        })
    }

    /// The command named `command` (full name), with the name of the module it is listed under.
    pub(crate) fn command(&self, command: &str) -> Option<(&'static str, Command)> {
        let entries = self.entries.read().unwrap_or_else(PoisonError::into_inner);
        entries.iter().find_map(|entry| {
            entry
                .commands
                .iter()
                .find(|listed| listed.spec.name == command)
                .map(|listed| (entry.module.name(), listed.clone()))
        })
    }

    fn announce(&self, module: &str) {
        let info = {
            let entries = self.entries.read().unwrap_or_else(PoisonError::into_inner);
            entries
                .iter()
                .find(|entry| entry.module.name() == module)
                .map(Entry::info)
        };
        let Some(info) = info else {
            return;
        };
        let ready = info.status == ModuleStatus::Ready;
        let name = info.name;
        let announcement = announcement(info);
        if ready {
            self.bus.publish(name, &ModuleReady(announcement));
        } else {
            self.bus.publish(name, &ModuleGone(announcement));
        }
    }

    /// Each ready module's `unipi:module:ready` for Pi's `pi.events` (name and payload), as
    /// Unipi's packages emitted it at every session start: what a Pi that connects is told.
    pub(crate) fn ready_for_pi(&self) -> Vec<(&'static str, serde_json::Value)> {
        self.modules()
            .into_iter()
            .filter(|info| info.status == ModuleStatus::Ready)
            .filter_map(|info| ModuleReady(announcement(info)).pi_event())
            .map(|data| (ModuleReady::NAME, data))
            .collect()
    }
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl Entry {
    fn info(&self) -> ModuleInfo {
        ModuleInfo {
            name: self.module.name(),
            status: self.status.clone(),
            tools: self.tools.iter().map(|spec| spec.name.clone()).collect(),
            commands: self
                .commands
                .iter()
                .map(|command| command.spec.name.clone())
                .collect(),
        }
    }
}

/// What the bus says of a module that came or went.
fn announcement(info: ModuleInfo) -> ModuleAnnouncement {
    ModuleAnnouncement {
        name: info.name.to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        commands: info.commands,
        tools: info.tools,
    }
}

fn check_new_entry(entries: &[Entry], entry: &Entry) -> Result<(), RegistryError> {
    let module = entry.module.name();
    if entries.iter().any(|other| other.module.name() == module) {
        return Err(RegistryError::DuplicateModule(module));
    }
    let tools = |entry: &Entry| entry.tools.iter().map(|spec| spec.name.clone()).collect();
    match first_clash(entries, entry, tools, is_tool_name) {
        Some(Clash::Bad(tool)) => return Err(RegistryError::BadToolName { module, tool }),
        Some(Clash::Taken(tool, owner)) => {
            return Err(RegistryError::DuplicateTool {
                module,
                tool,
                owner,
            });
        }
        None => {}
    }
    let commands = |entry: &Entry| {
        entry
            .commands
            .iter()
            .map(|command| command.spec.name.clone())
            .collect()
    };
    match first_clash(entries, entry, commands, is_command_name) {
        Some(Clash::Bad(command)) => Err(RegistryError::BadCommandName { module, command }),
        Some(Clash::Taken(command, owner)) => Err(RegistryError::DuplicateCommand {
            module,
            command,
            owner,
        }),
        None => Ok(()),
    }
}

/// What is wrong with one of the names a new module declares.
enum Clash {
    /// Not a valid name.
    Bad(String),
    /// Already declared, by the module named second (the new module itself, when it repeats it).
    Taken(String, &'static str),
}

/// The first of the new `entry`'s `names` (its tools, or its commands) that is not `valid`, or
/// that one of the registered `entries` or `entry` itself already declares.
fn first_clash(
    entries: &[Entry],
    entry: &Entry,
    names: impl Fn(&Entry) -> Vec<String>,
    valid: fn(&str) -> bool,
) -> Option<Clash> {
    let mut own = HashSet::new();
    for name in names(entry) {
        if !valid(&name) {
            return Some(Clash::Bad(name));
        }
        let owner = entries
            .iter()
            .find(|other| names(other).contains(&name))
            .map(|other| other.module.name());
        if let Some(owner) = owner.or((!own.insert(name.clone())).then(|| entry.module.name())) {
            return Some(Clash::Taken(name, owner));
        }
    }
    None
}

/// The tool names every provider accepts.
fn is_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}

/// `unipi:<name>`, or a bare `<name>` for the few short commands a module offers in Pi's own
/// namespace (`/btw`), or `btw:<name>` (Unipi's `/btw:new` and its kin); either way a-z, 0-9
/// and -.
fn is_command_name(name: &str) -> bool {
    let rest = name
        .strip_prefix("unipi:")
        .or_else(|| name.strip_prefix("btw:"))
        .unwrap_or(name);
    !rest.is_empty()
        && rest
            .bytes()
            .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-')
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bridge::CommandReply;
    use crate::bridge::bus::{BusEvent, BusMessage};
    use crate::bridge::module::{CommandSpec, ToolSpec};
    use serde_json::json;

    struct Fixed {
        name: &'static str,
        tools: Vec<&'static str>,
    }

    impl Module for Fixed {
        fn name(&self) -> &'static str {
            self.name
        }
        fn tools(&self) -> Vec<ToolSpec> {
            self.tools
                .iter()
                .map(|name| ToolSpec::new(*name, *name, "test tool"))
                .collect()
        }
    }

    /// A module with these tools, and these commands listed under it.
    fn fixed(
        name: &'static str,
        tools: &[&'static str],
        commands: &[&'static str],
    ) -> (Arc<dyn Module>, Vec<Command>) {
        let module = Arc::new(Fixed {
            name,
            tools: tools.to_vec(),
        });
        let commands = commands
            .iter()
            .map(|name| {
                let spec = CommandSpec::new(*name, "test command");
                Command::new(spec, (), |(), _| async { CommandReply::Done })
            })
            .collect();
        (module, commands)
    }

    fn register(
        registry: &Registry,
        (module, commands): (Arc<dyn Module>, Vec<Command>),
    ) -> Result<(), RegistryError> {
        registry.register_with_commands(module, commands)
    }

    /// A module whose tools change at run time (MCP servers arriving and leaving).
    struct Changing {
        tools: std::sync::Mutex<Vec<&'static str>>,
    }

    impl Module for Changing {
        fn name(&self) -> &'static str {
            "changing"
        }
        fn tools(&self) -> Vec<ToolSpec> {
            let tools = self.tools.lock().unwrap_or_else(PoisonError::into_inner);
            tools
                .iter()
                .map(|name| ToolSpec::new(*name, *name, "test tool"))
                .collect()
        }
    }

    #[test]
    fn refresh_rereads_tools_and_keeps_the_old_ones_on_a_clash() {
        let registry = Registry::new();
        register(&registry, fixed("a", &["taken"], &[])).expect("register a");
        let changing = Arc::new(Changing {
            tools: std::sync::Mutex::new(vec!["first"]),
        });
        registry
            .register(changing.clone() as Arc<dyn Module>)
            .expect("register changing");
        let declared = |registry: &Registry| -> Vec<String> {
            let mut names: Vec<String> = registry
                .declarations(Duration::from_secs(1))
                .tools
                .into_iter()
                .map(|tool| tool.spec.name)
                .collect();
            names.sort();
            names
        };
        *changing.tools.lock().expect("lock") = vec!["first", "second"];
        assert_eq!(registry.refresh("changing"), Ok(()));
        assert_eq!(declared(&registry), ["first", "second", "taken"]);
        assert!(
            registry
                .tool_names()
                .contains(&("changing".to_string(), "second".to_string()))
        );
        *changing.tools.lock().expect("lock") = vec!["taken"];
        assert_eq!(
            registry.refresh("changing"),
            Err(RegistryError::DuplicateTool {
                module: "changing",
                tool: "taken".into(),
                owner: "a",
            })
        );
        assert_eq!(declared(&registry), ["first", "second", "taken"]);
        *changing.tools.lock().expect("lock") = vec![];
        assert_eq!(registry.refresh("changing"), Ok(()));
        assert_eq!(declared(&registry), ["taken"]);
        assert_eq!(
            registry.refresh("nobody"),
            Err(RegistryError::UnknownModule("nobody".into()))
        );
    }

    #[test]
    fn refuses_clashes_and_bad_names() {
        let registry = Registry::new();
        assert_eq!(
            register(&registry, fixed("a", &["one"], &["unipi:a"])),
            Ok(())
        );
        // (module, expected error)
        let cases = [
            (fixed("a", &[], &[]), RegistryError::DuplicateModule("a")),
            (
                fixed("b", &["one"], &[]),
                RegistryError::DuplicateTool {
                    module: "b",
                    tool: "one".into(),
                    owner: "a",
                },
            ),
            (
                fixed("b", &["two", "two"], &[]),
                RegistryError::DuplicateTool {
                    module: "b",
                    tool: "two".into(),
                    owner: "b",
                },
            ),
            (
                fixed("b", &[], &["unipi:a"]),
                RegistryError::DuplicateCommand {
                    module: "b",
                    command: "unipi:a".into(),
                    owner: "a",
                },
            ),
            (
                fixed("b", &["has space"], &[]),
                RegistryError::BadToolName {
                    module: "b",
                    tool: "has space".into(),
                },
            ),
            (
                fixed("b", &[], &["unipi:"]),
                RegistryError::BadCommandName {
                    module: "b",
                    command: "unipi:".into(),
                },
            ),
            (
                fixed("b", &[], &["b tw"]),
                RegistryError::BadCommandName {
                    module: "b",
                    command: "b tw".into(),
                },
            ),
            (
                fixed("b", &[], &["unipi:Info"]),
                RegistryError::BadCommandName {
                    module: "b",
                    command: "unipi:Info".into(),
                },
            ),
        ];
        for (module, expected) in cases {
            assert_eq!(register(&registry, module), Err(expected));
        }
        assert_eq!(registry.modules().len(), 1, "refused modules are not kept");
    }

    #[test]
    fn only_ready_modules_are_declared_and_callable() {
        let registry = Registry::new();
        let ok = register(&registry, fixed("a", &["one"], &["unipi:a"]));
        assert_eq!(ok, Ok(()));
        let (module, commands) = fixed("b", &["two"], &["unipi:b"]);
        let ok = registry.register_with_status(
            module,
            commands,
            ModuleStatus::Disabled {
                reason: "no config".into(),
            },
        );
        assert_eq!(ok, Ok(()));

        let declared = registry.declarations(Duration::from_secs(120));
        let tools: Vec<&str> = declared
            .tools
            .iter()
            .map(|tool| tool.spec.name.as_str())
            .collect();
        assert_eq!(tools, ["one"]);
        assert_eq!(declared.tools[0].timeout_ms, 120_000);
        assert_eq!(declared.commands.len(), 1);

        assert!(registry.tool("one").is_ok());
        let refusal = registry.tool("two").err().unwrap_or_default();
        assert!(refusal.contains("disabled: no config"), "{refusal}");
        let refusal = registry.tool("three").err().unwrap_or_default();
        assert!(refusal.contains("no tool named `three`"), "{refusal}");

        assert!(registry.set_status("b", ModuleStatus::Ready));
        assert!(!registry.set_status("zzz", ModuleStatus::Ready));
        assert_eq!(registry.declarations(Duration::from_secs(1)).tools.len(), 2);
        assert!(registry.command("unipi:b").is_some());
        assert!(registry.command("unipi:zzz").is_none());
    }

    #[tokio::test]
    async fn announces_ready_and_gone_on_the_bus() -> anyhow::Result<()> {
        let registry = Registry::new();
        let mut events = registry.bus().subscribe();
        register(&registry, fixed("a", &["one"], &["unipi:a"]))?;
        registry.set_status(
            "a",
            ModuleStatus::Error {
                message: "broken".into(),
            },
        );
        let mut seen = Vec::new();
        for _ in 0..2 {
            if let BusEvent::Module { name, data, .. } = events.recv().await? {
                seen.push((name, data["tools"].clone()));
            }
        }
        assert_eq!(
            seen,
            [
                (ModuleReady::NAME.to_string(), json!(["one"])),
                (ModuleGone::NAME.to_string(), json!(["one"])),
            ]
        );
        Ok(())
    }
}
