//! Web smart-fetch end to end: the real `unipi-tui` runs the real pinned Pi headless (`-p`)
//! against the scripted model, whose scenario calls `web_fetch` on a loopback server serving the
//! news-article fixture. The workbench answers the call through the bridge, and the markdown
//! must be in the next request the model receives. Without `allowPrivateNetwork` in the
//! workspace's `.unipi/config/web.json` the same call reaches the model as a typed refusal, and
//! the loopback server sees no request. The file is followed while the workbench runs: when the
//! model itself writes `allowPrivateNetwork` into it (through Pi's bash tool) after a refusal,
//! its next `web_fetch` in the same run reads the page. And the model can find the page first:
//! `web_search` on a SearXNG stand-in, then `web_fetch` on the result.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

use crate::support;
use crate::support::web as web_fixtures;

use std::time::Duration;

use support::pi::{PiLine, pi_install};
use support::sandbox::Sandbox;
use unipi_tui::pi::offline::write_agent_dir;
use unipi_tui::scripted::{Scenario, ServerHandle};
use web_fixtures::FixtureServer;

const RUN: Duration = Duration::from_secs(90);

/// The model asks for the article, then says whether the tool result it got back was the
/// markdown, a refusal, or something else.
fn scenario(url: &str) -> Scenario {
    let text = format!(
        r#"
model = "scripted-web"
chunk_chars = 32

[[rule]]
role = "user"
when = '(?i)^read the harbour article'
tool_calls = [{{ name = "web_fetch", arguments = {{ url = "{url}" }} }}]

[[rule]]
role = "tool"
when = '## Predictable, if not constant'
reply = "WEB-MARKDOWN-RECEIVED"

[[rule]]
role = "tool"
when = 'blocked_address'
reply = "WEB-REFUSED"

[[rule]]
role = "tool"
reply = "WEB-SOMETHING-ELSE"

[fallback]
reply = "WEB-FALLBACK"
"#
    );
    Scenario::from_toml_str(&text, "web_pi scenario").unwrap()
}

struct Run {
    stdout: String,
    stderr: String,
    code: Option<i32>,
    /// Every chat request the model received.
    requests: Vec<serde_json::Value>,
    log: String,
}

/// The model asks for the article; refused, it switches `allowPrivateNetwork` on in the
/// workspace's web.json with Pi's bash tool, asks again, and says what the second answer was.
fn live_scenario(url: &str) -> Scenario {
    let text = r#"
model = "scripted-web"
chunk_chars = 32

[[rule]]
role = "user"
when = '(?i)^read the harbour article'
tool_calls = [{ name = "web_fetch", arguments = { url = "URL" } }]

[[rule]]
role = "tool"
when = 'blocked_address'
times = 1
tool_calls = [{ name = "bash", arguments = { command = '''mkdir -p .unipi/config && printf '{ "allowPrivateNetwork": true }\n' > .unipi/config/web.json && echo CONFIG-WRITTEN''' } }]

[[rule]]
role = "tool"
when = 'CONFIG-WRITTEN'
tool_calls = [{ name = "web_fetch", arguments = { url = "URL" } }]

[[rule]]
role = "tool"
when = '## Predictable, if not constant'
reply = "WEB-MARKDOWN-RECEIVED"

[[rule]]
role = "tool"
when = 'blocked_address'
reply = "WEB-STILL-REFUSED"

[[rule]]
role = "tool"
reply = "WEB-SOMETHING-ELSE"

[fallback]
reply = "WEB-FALLBACK"
"#
    .replace("URL", url);
    Scenario::from_toml_str(&text, "web_pi live scenario").unwrap()
}

/// `unipi-tui -p "read the harbour article"` in a fresh sandbox whose workspace config is
/// `web_config`.
async fn run(server: &FixtureServer, web_config: Option<&str>) -> Run {
    run_scenario(scenario(&server.url("/news")), web_config).await
}

/// [`run`] with the model playing `scenario`.
async fn run_scenario(scenario: Scenario, web_config: Option<&str>) -> Run {
    let pi = pi_install(PiLine::Current).unwrap_or_else(|err| panic!("{err:#}"));
    let model: ServerHandle = unipi_tui::scripted::start(scenario).await.unwrap();
    let sandbox = Sandbox::new();
    let agent = write_agent_dir(&sandbox.dir("agent"), &model.base_url(), &model.models()).unwrap();
    if let Some(text) = web_config {
        sandbox.write(&sandbox.project.join(".unipi/config/web.json"), text);
    }
    let child = pi
        .workbench(&agent, &sandbox, &["-p", "read the harbour article"])
        .spawn()
        .unwrap();
    let output = tokio::time::timeout(RUN, child.wait_with_output())
        .await
        .expect("unipi-tui did not finish in time")
        .unwrap();
    Run {
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        code: output.status.code(),
        requests: model.requests(),
        log: sandbox.log(),
    }
}

/// The tool result the model received: the text of the `tool` message in the last request.
fn tool_result(requests: &[serde_json::Value]) -> String {
    let last = requests.last().expect("the model got requests");
    last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| match &message["content"] {
            serde_json::Value::String(text) => text.clone(),
            serde_json::Value::Array(parts) => parts
                .iter()
                .filter_map(|part| part["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            other => other.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn the_scripted_model_reads_a_page_through_web_fetch() {
    let server = FixtureServer::start().await;
    let run = run(&server, Some(r#"{ "allowPrivateNetwork": true }"#)).await;
    assert_eq!(
        (run.code, run.stdout.trim()),
        (Some(0), "WEB-MARKDOWN-RECEIVED"),
        "stderr:\n{}\nlog:\n{}",
        run.stderr,
        run.log
    );
    assert_eq!(server.hits("/news"), 1);
    let result = tool_result(&run.requests);
    for wanted in [
        "# Harbour city switches on tidal energy pilot",
        "Author: Maren Holt",
        "## Predictable, if not constant",
        "- A public viewing platform opens on the pier in the summer.",
    ] {
        assert!(
            result.contains(wanted),
            "{wanted:?} not in what the model got:\n{result}"
        );
    }
    assert!(!result.contains("Most read"), "{result}");
}

#[tokio::test]
async fn without_the_config_switch_the_model_gets_a_typed_refusal() {
    let server = FixtureServer::start().await;
    let run = run(&server, None).await;
    assert_eq!(
        (run.code, run.stdout.trim()),
        (Some(0), "WEB-REFUSED"),
        "stderr:\n{}\nlog:\n{}",
        run.stderr,
        run.log
    );
    let result = tool_result(&run.requests);
    assert!(
        result.contains("[code: blocked_address, phase: validation, retryable: no]"),
        "{result}"
    );
    assert!(result.contains("allowPrivateNetwork"), "{result}");
    assert_eq!(server.total_hits(), 0, "the loopback server was reached");
}

/// The refusal asks for the switch; the model sets it in the workspace's web.json during the
/// run, and the next fetch of the same run reads the page: no restart.
#[tokio::test]
async fn switching_private_network_on_during_a_run_lets_the_next_fetch_through() {
    let server = FixtureServer::start().await;
    let run = run_scenario(live_scenario(&server.url("/news")), None).await;
    assert_eq!(
        (run.code, run.stdout.trim()),
        (Some(0), "WEB-MARKDOWN-RECEIVED"),
        "stderr:\n{}\nlog:\n{}",
        run.stderr,
        run.log
    );
    assert_eq!(server.hits("/news"), 1, "one request: the second fetch");
    // The first tool result (in the request that answered it) was the refusal, asking for the
    // key that was not set yet.
    let refused = run
        .requests
        .iter()
        .map(|request| tool_result(std::slice::from_ref(request)))
        .find(|result| result.contains("blocked_address"))
        .expect("the model saw the refusal");
    assert!(
        refused.contains(
            "set \"allowPrivateNetwork\": true in ~/.unipi/config/web.json or the workspace's"
        ),
        "{refused}"
    );
    let last = tool_result(&run.requests);
    assert!(
        last.contains("# Harbour city switches on tidal energy pilot"),
        "{last}"
    );
}

/// The model searches (SearXNG, the fixture server's stand-in), then reads the result it got.
fn search_scenario(url: &str) -> Scenario {
    let text = r#"
model = "scripted-web"
chunk_chars = 32

[[rule]]
role = "user"
when = '(?i)^read the harbour article'
tool_calls = [{ name = "web_search", arguments = { query = "harbour tidal energy pilot" } }]

[[rule]]
role = "tool"
when = '(?s)Search results for .*1\. Harbour city switches on tidal energy pilot\n   URL'
tool_calls = [{ name = "web_fetch", arguments = { url = "URL" } }]

[[rule]]
role = "tool"
when = '## Predictable, if not constant'
reply = "WEB-SEARCHED-AND-READ"

[[rule]]
role = "tool"
reply = "WEB-SOMETHING-ELSE"

[fallback]
reply = "WEB-FALLBACK"
"#
    .replace("URL", url);
    Scenario::from_toml_str(&text, "web_pi search scenario").unwrap()
}

#[tokio::test]
async fn the_scripted_model_searches_then_reads_a_result() {
    let server = FixtureServer::start().await;
    let config = format!(
        r#"{{ "allowPrivateNetwork": true, "search": {{ "default": "searxng", "providers": {{
            "searxng": {{ "url": "{}" }}, "duckduckgo": {{ "enabled": false }} }} }} }}"#,
        server.url("/searxng")
    );
    let run = run_scenario(search_scenario(&server.url("/news")), Some(&config)).await;
    assert_eq!(
        (run.code, run.stdout.trim()),
        (Some(0), "WEB-SEARCHED-AND-READ"),
        "stderr:\n{}\nlog:\n{}",
        run.stderr,
        run.log
    );
    assert_eq!(server.hits("/searxng/search"), 1);
    assert_eq!(server.hits("/news"), 1);
    let results = tool_result(&run.requests);
    assert!(
        results.contains("Search results for \"harbour tidal energy pilot\" (searxng, 1 results)"),
        "{results}"
    );
}
