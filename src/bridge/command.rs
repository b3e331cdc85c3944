//! A `/unipi:*` command, declared once with what answers it: its [`CommandSpec`] (the name Pi
//! shows, its description, fixed completions), the handler that runs it and, when its argument
//! completes from live state, the completer. As helix declares each typable command once and
//! looks it up by name, the registry keeps the [`Command`]s beside the module they are listed
//! under and the host dispatches an invocation, or a completion request, by name to the one that
//! declared it: no module matches command names.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::AgentId;
use super::events::CommandReply;
use super::specs::{CommandSpec, Completion};

/// One invocation of a `/unipi:*` command, handed to its [`Command`]'s handler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandCall {
    /// The Pi process whose user ran it.
    pub agent: AgentId,
    /// The full name without the slash (`unipi:info`).
    pub name: String,
    /// Everything typed after the name, as Pi passes it.
    pub args: String,
}

type Run = Arc<dyn Fn(CommandCall) -> BoxFuture<'static, CommandReply> + Send + Sync>;
type Complete = Arc<dyn Fn(&str) -> Vec<Completion> + Send + Sync>;

/// A `/unipi:*` command and what answers it (cheap to clone).
#[derive(Clone)]
pub struct Command {
    pub spec: CommandSpec,
    run: Run,
    complete: Option<Complete>,
}

impl Command {
    /// `spec`, answered by `run` over a clone of `state` taken for each call (the answer runs in
    /// a task of its own under the host's command timeout, so it owns what it uses; a panic or a
    /// timeout answers Pi with an error). What it returns is what Pi shows; a command that opens
    /// a view does so through the workbench's UI handle, which `state` holds.
    pub fn new<S, F, Fut>(spec: CommandSpec, state: S, run: F) -> Self
    where
        S: Clone + Send + Sync + 'static,
        F: Fn(S, CommandCall) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = CommandReply> + Send + 'static,
    {
        Command {
            spec,
            run: Arc::new(move |call| Box::pin(run(state.clone(), call))),
            complete: None,
        }
    }

    /// Completes the argument from live state, given what is typed so far (after the spec's
    /// fixed completions). Called on the connection's task: answer from memory, quickly.
    pub fn completer(
        mut self,
        complete: impl Fn(&str) -> Vec<Completion> + Send + Sync + 'static,
    ) -> Self {
        self.complete = Some(Arc::new(complete));
        self
    }

    /// Runs one invocation.
    pub fn run(&self, call: CommandCall) -> BoxFuture<'static, CommandReply> {
        (self.run)(call)
    }

    /// The completer's completions for what is typed (none without a completer).
    pub fn complete(&self, prefix: &str) -> Vec<Completion> {
        self.complete
            .as_ref()
            .map(|complete| complete(prefix))
            .unwrap_or_default()
    }
}

impl fmt::Debug for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Command")
            .field("spec", &self.spec)
            .field("completer", &self.complete.is_some())
            .finish_non_exhaustive()
    }
}
