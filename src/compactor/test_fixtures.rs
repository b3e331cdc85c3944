//! Test fixtures shared by the compactor's unit tests: a small Pi branch (the hook, the resume
//! check and the module all run on it). A leaf: it imports only `entries`.

use serde_json::{Value, json};

use super::entries::{SessionEntry, parse_entry};

/// A small branch: three user turns with answers, the first one with an early fact.
pub(super) fn small_branch() -> Vec<Value> {
    let mut entries = Vec::new();
    let mut parent = Value::Null;
    for turn in 0..3 {
        let user = format!("u{turn}");
        let assistant = format!("a{turn}");
        entries.push(json!({"type": "message", "id": user, "parentId": parent,
            "timestamp": "2026-11-30T10:00:00.000Z",
            "message": {"role": "user", "content": [{"type": "text",
                "text": format!("Request {turn}: the build flag is ZETA-{turn}. {}", "Details. ".repeat(40))}]}}));
        entries.push(json!({"type": "message", "id": assistant, "parentId": user,
            "timestamp": "2026-11-30T10:00:01.000Z",
            "message": {"role": "assistant", "content": [{"type": "text",
                "text": format!("Done with request {turn}. {}", "Explanation. ".repeat(40))}]}}));
        parent = json!(assistant);
    }
    entries
}

/// [`small_branch`], parsed.
pub(super) fn small_branch_entries() -> Vec<SessionEntry> {
    small_branch().iter().filter_map(parse_entry).collect()
}
