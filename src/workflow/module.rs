//! The workflow's bridge module: what its `/unipi:*` commands (the twenty-two steps, the board, the
//! loop) are listed under in `/unipi:info`. The commands themselves — declared with their
//! handlers and their completions from the files on disk — are the capability's
//! (`capability.rs`), which holds the screen and the bridge.

use crate::bridge::Module;

pub(crate) struct WorkflowModule;

impl Module for WorkflowModule {
    fn name(&self) -> &'static str {
        "workflow"
    }
}
