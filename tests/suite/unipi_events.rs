//! A third-party Pi extension written against Unipi, loaded with Pi's `-e` beside the workbench:
//! it listens for `unipi:*` events on `pi.events` and reads Unipi's shared background-task
//! registry (`globalThis[Symbol.for("unipi.background-tasks.shared-registry")]`), and writes
//! what it saw to a file. The real `unipi-tui` and the real pinned Pi against the scripted model
//! server; the model starts a background task, and the extension must have seen it with Unipi's
//! names and payload fields.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

use crate::support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use support::pi::{PiInstall, PiLine, PiOutput, pi_install};
use support::sandbox::Sandbox;
use unipi_tui::pi::offline::{OfflineAgent, write_agent_dir};
use unipi_tui::scripted::{Scenario, ServerHandle};

const RUN: Duration = Duration::from_secs(90);

/// The extension a Unipi user might have written: what it hears and reads goes to `out` as
/// JSON lines, each `{name, data, registry, ...}`.
const LISTENER: &str = r#"
import * as fs from "node:fs";

const OUT = __OUT__;
const REGISTRY = Symbol.for("unipi.background-tasks.shared-registry");

function record(entry: Record<string, unknown>) {
	fs.appendFileSync(OUT, JSON.stringify(entry) + "\n");
}

export default function listener(pi: any) {
	for (const name of ["unipi:module:ready", "unipi:bg:task:started", "unipi:bg:task:finished"]) {
		pi.events.on(name, async (data: any) => {
			const registry = (globalThis as any)[REGISTRY];
			const entry: Record<string, unknown> = { name, data, registry: registry ? registry.allTasks() : null };
			if (registry && name !== "unipi:module:ready") {
				const task = registry.resolveTask(String(data.id).slice(0, 6));
				entry.resolved = task.id;
				entry.frozen = Object.isFrozen(task);
				try {
					registry.stopTask(task, "user");
					entry.stopped = "no error";
				} catch (err: any) {
					entry.stopped = String(err?.message ?? err);
				}
				if (name === "unipi:bg:task:finished") {
					entry.logs = (await registry.getTaskLogs(task, 4096, true)).text;
				}
			}
			record(entry);
		});
	}
}
"#;

/// A scripted server, an offline agent dir pointing at it, a sandbox whose HOME, project and
/// TMPDIR are three different directories, and the listener extension outside all of them.
struct Setup {
    pi: PiInstall,
    agent: OfflineAgent,
    sandbox: Sandbox,
    _server: ServerHandle,
    extension: PathBuf,
    out: PathBuf,
}

async fn setup(line: PiLine) -> Setup {
    let pi = pi_install(line).unwrap_or_else(|err| panic!("{err:#}"));
    let scenario =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/scenarios/headless.toml");
    let server = unipi_tui::scripted::start(Scenario::from_file(&scenario).unwrap())
        .await
        .unwrap();
    let sandbox = Sandbox::new();
    let agent_dir = sandbox.dir("agent");
    let agent = write_agent_dir(&agent_dir, &server.base_url(), &server.models()).unwrap();
    let extensions = sandbox.dir("third-party");
    let out = extensions.join("seen.jsonl");
    let extension = extensions.join("unipi-listener.ts");
    let literal = serde_json::to_string(&out.display().to_string()).unwrap();
    std::fs::write(&extension, LISTENER.replace("__OUT__", &literal)).unwrap();
    assert!(
        !extension.starts_with(&sandbox.home),
        "the extension is not under HOME"
    );
    Setup {
        pi,
        agent,
        sandbox,
        _server: server,
        extension,
        out,
    }
}

impl Setup {
    /// `unipi-tui -e <listener> -p <prompt>`, stdin closed, output captured.
    async fn run(&self, prompt: &str) -> PiOutput {
        let extension = self.extension.display().to_string();
        let mut command = self.pi.workbench(
            &self.agent,
            &self.sandbox,
            &["-e", &extension, "-p", prompt],
        );
        command.env("UNIPI_BG_TMP_DIR", self.sandbox.dir("bg-tasks"));
        let child = command.spawn().unwrap();
        let output = tokio::time::timeout(RUN, child.wait_with_output())
            .await
            .expect("unipi-tui did not finish in time")
            .unwrap();
        PiOutput {
            success: output.status.success(),
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// What the extension recorded, in order.
    fn seen(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.out)
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }
}

/// The one record of `name` (the test fails naming everything seen otherwise).
fn only<'a>(seen: &'a [Value], name: &str) -> &'a Value {
    let found: Vec<&Value> = seen.iter().filter(|entry| entry["name"] == name).collect();
    assert_eq!(found.len(), 1, "{name} once in {seen:#?}");
    found[0]
}

/// The background tasks announced themselves as Unipi's package did, with their tools.
fn assert_tasks_ready(seen: &[Value]) {
    let ready = seen
        .iter()
        .find(|entry| {
            entry["name"] == "unipi:module:ready"
                && entry["data"]["name"] == "@pi-unipi/background-tasks"
        })
        .unwrap_or_else(|| panic!("no ready background tasks in {seen:#?}"));
    let tools = ready["data"]["tools"].as_array().unwrap();
    assert!(tools.iter().any(|tool| tool == "bg_run"), "{ready}");
    assert!(ready["data"]["version"].is_string(), "{ready}");
    assert!(ready["data"]["commands"].is_array(), "{ready}");
}

/// The start as heard: the task in the event with Unipi's snapshot fields, and already in the
/// registry, read-only.
fn assert_started(seen: &[Value], task_name: &str, trigger: bool) -> String {
    let started = only(seen, "unipi:bg:task:started");
    let data = &started["data"];
    let id = data["id"].as_str().unwrap().to_owned();
    assert_eq!(data["name"], task_name, "{started}");
    let task = &data["task"];
    for field in ["id", "name", "command", "cwd", "outputPath"] {
        assert!(task[field].is_string(), "{field} in {started}");
    }
    for field in ["startTime", "bytesWritten"] {
        assert!(task[field].is_u64(), "{field} in {started}");
    }
    for field in ["isAgent", "notified", "notifyOnCompletion"] {
        assert!(task[field].is_boolean(), "{field} in {started}");
    }
    assert_eq!(task["id"], id.as_str(), "{started}");
    assert_eq!(task["status"], "running", "{started}");
    assert_eq!(task["triggerOnCompletion"], trigger, "{started}");
    let registry = started["registry"].as_array().unwrap();
    assert!(
        registry
            .iter()
            .any(|listed| listed["id"] == id.as_str() && listed["status"] == "running"),
        "{started}"
    );
    assert_eq!(started["resolved"], id.as_str(), "a prefix resolves");
    assert_eq!(started["frozen"], true, "{started}");
    assert!(
        started["stopped"].as_str().unwrap().contains("read-only"),
        "{started}"
    );
    id
}

/// `-p "start the build"` under Pi 1.x: the model starts a build that wakes it; the extension
/// heard the module ready, the start and the end (Unipi's `completed`, the exit code), found
/// the task in the registry each time, read its output through it, and could not stop it.
#[tokio::test]
async fn a_unipi_extension_hears_a_background_task_and_reads_the_shared_registry() {
    let s = setup(PiLine::Current).await;
    let ours = s.run("start the build").await;
    assert_eq!(
        (ours.code, ours.stdout.trim()),
        (Some(0), "HEADLESS-FOLLOW-UP: the build is done"),
        "stderr:\n{}\nlog:\n{}",
        ours.stderr,
        s.sandbox.log()
    );
    let seen = s.seen();
    assert_tasks_ready(&seen);
    let id = assert_started(&seen, "headless build", true);
    let finished = only(&seen, "unipi:bg:task:finished");
    let data = &finished["data"];
    assert_eq!(data["id"], id.as_str(), "{finished}");
    assert_eq!(data["status"], "completed", "{finished}");
    assert_eq!(data["exitCode"], 0, "{finished}");
    assert_eq!(data["wakesAgent"], true, "{finished}");
    assert_eq!(data["task"]["status"], "completed", "{finished}");
    assert!(data["task"]["endTime"].is_u64(), "{finished}");
    let listed = finished["registry"]
        .as_array()
        .unwrap()
        .iter()
        .find(|task| task["id"] == id.as_str())
        .unwrap_or_else(|| panic!("{finished}"));
    assert_eq!(listed["status"], "completed", "the registry is current");
    assert!(
        finished["logs"]
            .as_str()
            .unwrap()
            .contains("HEADLESS-BUILD-OUTPUT"),
        "{finished}"
    );
}

/// Pi 0.73.1 (`@mariozechner`): the same extension hears the module ready and a task's start,
/// and finds it in the registry.
#[tokio::test]
async fn a_unipi_extension_under_pi_0_7x_hears_a_task_start_and_reads_the_registry() {
    let s = setup(PiLine::Legacy).await;
    let ours = s.run("start a headless task").await;
    assert_eq!(
        (ours.code, ours.stdout.trim()),
        (Some(0), "HEADLESS-TOOL-OK: the workbench started the task"),
        "stderr:\n{}\nlog:\n{}",
        ours.stderr,
        s.sandbox.log()
    );
    let seen = s.seen();
    assert_tasks_ready(&seen);
    assert_started(&seen, "headless probe", false);
}
