//! `/unipi:ralph start|stop|resume|status|list|cancel|archive|clean|nuke` over the loops' state
//! files: the words are `args.rs`'s, the loop's life `engine.rs`'s, the files `state.rs`'s.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::args::{self, Sub};
use super::engine::{Engine, Task, status_word};
use super::state::{self, LoopStatus, Options};
use crate::bridge::{CommandCall, CommandReply, NotifyLevel, Refusal};

fn info(message: String) -> CommandReply {
    CommandReply::Notify {
        message,
        level: NotifyLevel::Info,
    }
}

fn warning(message: String) -> CommandReply {
    CommandReply::Notify {
        message,
        level: NotifyLevel::Warning,
    }
}

/// Runs one `/unipi:ralph` invocation.
pub(crate) async fn run(engine: Arc<Engine>, call: CommandCall) -> CommandReply {
    let sub = match args::parse(&call.args) {
        Ok(sub) => sub,
        Err(refusal) => return refusal.into(),
    };
    let reply = match sub {
        Sub::Start { target, options } => start(&engine, &call, &target, options).await,
        Sub::Stop => Ok(match engine.stop().await {
            Some(state) => info(format!(
                "Stopped Ralph loop: {} (iteration {})",
                state.name,
                state.progress()
            )),
            None => warning("No Ralph loop is running".to_owned()),
        }),
        Sub::Resume(name) => engine.resume(&call.agent, &name).await.map(|state| {
            info(format!(
                "Resumed Ralph loop {} at iteration {}",
                state.name,
                state.progress()
            ))
        }),
        Sub::Status => Ok(status(&engine).await),
        Sub::List { archived } => Ok(list(&engine, archived).await),
        Sub::Cancel(name) => files(&engine, move |workspace| cancel(workspace, &name)).await,
        Sub::Archive(name) => archive(&engine, name).await,
        Sub::Clean { all } => files(&engine, move |workspace| clean(workspace, all)).await,
        Sub::Nuke { yes: false } => Ok(warning(
            "This deletes .unipi/ralph with every loop's state and task file in it: \
             /unipi:ralph nuke --yes"
                .to_owned(),
        )),
        Sub::Nuke { yes: true } => nuke(&engine).await,
    };
    reply.unwrap_or_else(Into::into)
}

async fn start(
    engine: &Engine,
    call: &CommandCall,
    target: &str,
    options: Options,
) -> Result<CommandReply, Refusal> {
    // A name with a slash is a task file's path: the loop is named after it.
    let (name, file) = if target.contains('/') || target.contains('\\') {
        let path = PathBuf::from(target);
        if path.is_absolute() || target.contains("..") {
            return Err(Refusal::new(format!(
                "{target:?}: name a task file inside the project, relative to it"
            )));
        }
        (state::sanitize(target), path)
    } else {
        let name = state::sanitize(target);
        let file = state::default_task_file(&name);
        (name, file)
    };
    let (state, templated) = engine
        .start(&call.agent, &name, Task::File(file), options)
        .await?;
    let mut message = format!(
        "Started Ralph loop {} (iteration {}) on {}",
        state.name,
        state.progress(),
        state.task_file.display()
    );
    if templated {
        message.push_str(" — it had no task file: a template was written, edit it");
    }
    Ok(info(message))
}

async fn status(engine: &Engine) -> CommandReply {
    let current = engine.current();
    let workspace = engine.workspace.clone();
    let loops = tokio::task::spawn_blocking(move || state::list(&workspace, state::RALPH_DIR))
        .await
        .unwrap_or_default();
    let mut lines = Vec::new();
    match &current {
        Some(current) => lines.push(format!(
            "Ralph loop {} is {} at iteration {} on {}{}",
            current.state.name,
            status_word(current.state.status),
            current.state.progress(),
            current.state.task_file.display(),
            match current.state.status {
                LoopStatus::Active => " — /unipi:ralph stop ends it".to_owned(),
                _ => format!(" — /unipi:ralph resume {} continues it", current.state.name),
            }
        )),
        None => lines.push("No Ralph loop is running".to_owned()),
    }
    let others: Vec<String> = loops
        .iter()
        .filter(|s| current.as_ref().is_none_or(|c| c.state.name != s.name))
        .map(state::Summary::line)
        .collect();
    if !others.is_empty() {
        lines.push(format!("Other loops: {}", others.join(" · ")));
    }
    info(lines.join("\n"))
}

async fn list(engine: &Engine, archived: bool) -> CommandReply {
    let workspace = engine.workspace.clone();
    let dir = if archived {
        state::ARCHIVE_DIR
    } else {
        state::RALPH_DIR
    };
    let loops = tokio::task::spawn_blocking(move || state::list(&workspace, dir))
        .await
        .unwrap_or_default();
    if loops.is_empty() {
        return info(format!("No Ralph loops in {dir}"));
    }
    let lines: Vec<String> = loops.iter().map(state::Summary::line).collect();
    info(format!("Ralph loops in {dir}:\n{}", lines.join("\n")))
}

/// File work off the async workers, then the loop in this workbench is forgotten when it was
/// among the loops removed (the work names them).
async fn files(
    engine: &Engine,
    work: impl FnOnce(&Path) -> anyhow::Result<(String, Vec<String>)> + Send + 'static,
) -> Result<CommandReply, Refusal> {
    let workspace = engine.workspace.clone();
    let done = tokio::task::spawn_blocking(move || work(&workspace)).await;
    match done {
        Ok(Ok((message, removed))) => {
            for name in &removed {
                engine.forget(Some(name.as_str()));
            }
            Ok(info(message))
        }
        Ok(Err(err)) => Err(Refusal::new(format!("{err:#}"))),
        Err(err) => Err(Refusal::new(format!("the loops' file work failed: {err}"))),
    }
}

/// `cancel <name>`: its state goes, its task file stays.
fn cancel(workspace: &Path, name: &str) -> anyhow::Result<(String, Vec<String>)> {
    let file = state::state_file(state::RALPH_DIR, name);
    if !state::remove(workspace, &file)? {
        anyhow::bail!("no loop named \"{name}\" (see /unipi:ralph list)");
    }
    Ok((
        format!("Cancelled Ralph loop {name}: its state is deleted, its task file kept"),
        vec![name.to_owned()],
    ))
}

/// `archive <name>`: refused for the running loop.
async fn archive(engine: &Engine, name: String) -> Result<CommandReply, Refusal> {
    if engine
        .current()
        .is_some_and(|c| c.state.name == name && c.state.status == LoopStatus::Active)
    {
        return Err(Refusal::new(format!(
            "loop \"{name}\" is running: /unipi:ralph stop it first"
        )));
    }
    files(engine, move |workspace| {
        let state = state::load(workspace, &name)?
            .ok_or_else(|| anyhow::anyhow!("no loop named \"{name}\" (see /unipi:ralph list)"))?;
        if state.status == LoopStatus::Active {
            anyhow::bail!("loop \"{name}\" is active: /unipi:ralph stop it first");
        }
        let moved = state::archive(workspace, &state)?;
        let moved: Vec<String> = moved.iter().map(|p| p.display().to_string()).collect();
        Ok((
            format!("Archived Ralph loop {name}: {}", moved.join(", ")),
            vec![name],
        ))
    })
    .await
}

/// `clean [--all]`: the state of every finished loop goes (`--all`: its task file in the loops'
/// folder too).
fn clean(workspace: &Path, all: bool) -> anyhow::Result<(String, Vec<String>)> {
    let mut removed = Vec::new();
    for summary in state::list(workspace, state::RALPH_DIR) {
        if summary.status.resumable() {
            continue;
        }
        state::remove(
            workspace,
            &state::state_file(state::RALPH_DIR, &summary.name),
        )?;
        if all && summary.plan.is_none() {
            state::remove(workspace, &state::default_task_file(&summary.name))?;
        }
        removed.push(summary.name);
    }
    let message = match removed.len() {
        0 => "No finished Ralph loops to clean".to_owned(),
        _ => format!(
            "Cleaned {} finished Ralph loop(s){}: {}",
            removed.len(),
            if all { " and their task files" } else { "" },
            removed.join(", ")
        ),
    };
    Ok((message, removed))
}

async fn nuke(engine: &Engine) -> Result<CommandReply, Refusal> {
    let workspace = engine.workspace.clone();
    let removed = tokio::task::spawn_blocking(move || state::nuke(&workspace))
        .await
        .map_err(|err| Refusal::new(format!("deleting the loops failed: {err}")))?
        .map_err(|err| Refusal::new(format!("{err:#}")))?;
    engine.forget(None);
    Ok(info(if removed {
        format!("Deleted {} and every Ralph loop in it", state::RALPH_DIR)
    } else {
        format!("There is no {} to delete", state::RALPH_DIR)
    }))
}
