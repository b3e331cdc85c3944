//! The milestones' bridge module: it answers Pi's `before_agent_start` hook of the main Pi with
//! the progress of `MILESTONES.md` as read right then, which the extension appends to the system
//! prompt of that run (Unipi's `## Project Milestones` section). No milestones, or a helper's
//! Pi: no answer, and Pi runs with its own prompt.

use std::path::PathBuf;

use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use super::Progress;
use crate::bridge::{AgentId, HookCall, Module};

/// Pi's hook before each run (a prompt, a message that starts a turn).
pub(crate) const BEFORE_AGENT_START: &str = "before_agent_start";

pub(crate) struct MilestoneModule {
    pub workspace: PathBuf,
}

impl Module for MilestoneModule {
    fn name(&self) -> &'static str {
        "milestone"
    }

    fn hook(&self, hook: HookCall) -> Option<BoxFuture<'static, Value>> {
        if hook.name != BEFORE_AGENT_START || hook.agent != AgentId::main() {
            return None;
        }
        let workspace = self.workspace.clone();
        Some(Box::pin(async move {
            let section = tokio::task::spawn_blocking(move || {
                super::read(&workspace).and_then(|doc| Progress::of(&doc).prompt_section())
            })
            .await
            .ok()
            .flatten();
            match section {
                Some(text) => json!({ "append_system_prompt": text }),
                None => Value::Null,
            }
        }))
    }
}
