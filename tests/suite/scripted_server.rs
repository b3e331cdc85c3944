//! The scripted model server over real loopback HTTP: first with a raw HTTP client (wire format,
//! errors, the request log), then with the real, pinned Pi of both lines in print mode, pointed
//! at the server through the offline agent directory.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

use crate::support;

use std::net::SocketAddr;

use anyhow::{Context as _, bail};
use serde_json::{Value, json};
use support::pi::{PiLine, pi_install};
use support::sandbox::Sandbox;
use support::wait::try_eventually_async;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use unipi_tui::pi::offline::write_agent_dir;
use unipi_tui::scripted::{Scenario, ServerHandle, start};

const SCENARIO: &str = r#"
model = ["scripted-test", "second-model"]
chunk_chars = 4

[[rule]]
role = "user"
when = "(?i)please fail"
error = { status = 503, message = "scripted overload" }
times = 1

[[rule]]
role = "user"
when = "(?i)list files"
reply = "Listing."
tool_calls = [{ name = "bash", arguments = { command = "printf 'tool-output-%s\\n' 42" } }]

[[rule]]
role = "tool"
when = "tool-output-42"
reply = "The command printed tool-output-42."

[[rule]]
role = "user"
when = "(?i)hello"
reply = "Hello from the scripted model!"
usage = { prompt_tokens = 11, completion_tokens = 7 }

[fallback]
reply = "Nothing scripted for that."
"#;

async fn start_test_server() -> anyhow::Result<ServerHandle> {
    start(Scenario::from_toml_str(SCENARIO, "SCENARIO")?).await
}

fn chat(prompt: &str, stream: bool) -> Value {
    json!({
        "model": "scripted-test",
        "stream": stream,
        "stream_options": {"include_usage": true},
        "messages": [
            {"role": "system", "content": "You are a test."},
            {"role": "user", "content": [{"type": "text", "text": prompt}]},
        ],
    })
}

// --- raw HTTP -------------------------------------------------------------------------------

#[tokio::test]
async fn streams_text_in_chunks_then_finish_usage_and_done() -> anyhow::Result<()> {
    let server = start_test_server().await?;
    let response = http(
        server.addr,
        "POST",
        "/v1/chat/completions",
        &chat("hello", true).to_string(),
    )
    .await?;
    assert_eq!(response.status, 200, "{}", response.body);
    assert!(
        response
            .header("content-type")
            .is_some_and(|value| value.starts_with("text/event-stream"))
    );

    let events = sse_data(&response.body);
    assert_eq!(
        events.last().map(String::as_str),
        Some("[DONE]"),
        "{events:?}"
    );
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|data| serde_json::from_str(data))
        .collect::<Result<_, _>>()?;
    assert!(
        chunks
            .iter()
            .all(|chunk| chunk["object"] == "chat.completion.chunk")
    );
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let pieces: Vec<&str> = chunks
        .iter()
        .filter_map(|chunk| chunk["choices"][0]["delta"]["content"].as_str())
        .filter(|piece| !piece.is_empty())
        .collect();
    assert_eq!(pieces.concat(), "Hello from the scripted model!");
    assert!(
        pieces.iter().all(|piece| piece.chars().count() <= 4),
        "{pieces:?}"
    );

    let finish = &chunks[chunks.len() - 2];
    assert_eq!(finish["choices"][0]["finish_reason"], "stop");
    let usage = &chunks[chunks.len() - 1];
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(
        usage["usage"],
        json!({"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18})
    );
    Ok(())
}

#[tokio::test]
async fn streams_tool_calls_with_arguments_in_pieces() -> anyhow::Result<()> {
    let server = start_test_server().await?;
    let mut request = chat("list files", true);
    request["stream_options"] = json!({"include_usage": false});
    let response = http(
        server.addr,
        "POST",
        "/chat/completions",
        &request.to_string(),
    )
    .await?;
    assert_eq!(response.status, 200, "{}", response.body);

    let events = sse_data(&response.body);
    let chunks: Vec<Value> = events
        .iter()
        .filter(|data| *data != "[DONE]")
        .map(|data| serde_json::from_str(data))
        .collect::<Result<_, _>>()?;
    let calls: Vec<&Value> = chunks
        .iter()
        .filter_map(|chunk| chunk["choices"][0]["delta"].get("tool_calls"))
        .map(|calls| &calls[0])
        .collect();
    assert!(
        calls.len() > 2,
        "arguments should arrive in several deltas: {calls:?}"
    );
    assert_eq!(calls[0]["index"], 0);
    assert_eq!(calls[0]["type"], "function");
    assert_eq!(calls[0]["function"]["name"], "bash");
    assert!(calls[0]["id"].as_str().is_some_and(|id| !id.is_empty()));
    let arguments: String = calls
        .iter()
        .filter_map(|call| call["function"]["arguments"].as_str())
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&arguments)?,
        json!({"command": "printf 'tool-output-%s\\n' 42"})
    );
    let text: String = chunks
        .iter()
        .filter_map(|chunk| chunk["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "Listing.", "text comes before the tool calls");
    let last = &chunks[chunks.len() - 1];
    assert_eq!(
        last["choices"][0]["finish_reason"], "tool_calls",
        "no usage chunk was asked for"
    );
    assert_eq!(events.last().map(String::as_str), Some("[DONE]"));
    Ok(())
}

#[tokio::test]
async fn answers_without_streaming_and_lists_models() -> anyhow::Result<()> {
    let server = start_test_server().await?;
    let response = http(
        server.addr,
        "POST",
        "/v1/chat/completions",
        &chat("hello", false).to_string(),
    )
    .await?;
    assert_eq!(response.status, 200, "{}", response.body);
    let completion: Value = serde_json::from_str(&response.body)?;
    assert_eq!(completion["object"], "chat.completion");
    assert_eq!(
        completion["choices"][0]["message"]["content"],
        "Hello from the scripted model!"
    );
    assert_eq!(completion["choices"][0]["finish_reason"], "stop");
    assert_eq!(completion["usage"]["total_tokens"], 18);

    let models = http(server.addr, "GET", "/v1/models", "").await?;
    assert_eq!(models.status, 200);
    let models: Value = serde_json::from_str(&models.body)?;
    let ids: Vec<&str> = models["data"]
        .as_array()
        .map(|data| {
            data.iter()
                .filter_map(|model| model["id"].as_str())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(ids, ["scripted-test", "second-model"]);
    Ok(())
}

#[tokio::test]
async fn scripted_errors_fire_the_given_number_of_times() -> anyhow::Result<()> {
    let server = start_test_server().await?;
    let body = chat("please fail", true).to_string();
    let first = http(server.addr, "POST", "/v1/chat/completions", &body).await?;
    assert_eq!(first.status, 503);
    let error: Value = serde_json::from_str(&first.body)?;
    assert_eq!(error["error"]["message"], "scripted overload");

    // `times = 1`: the next identical request falls through to the fallback.
    let second = http(server.addr, "POST", "/v1/chat/completions", &body).await?;
    assert_eq!(second.status, 200);
    let text: String = sse_data(&second.body)
        .iter()
        .filter_map(|data| serde_json::from_str::<Value>(data).ok())
        .filter_map(|chunk| {
            chunk["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_string)
        })
        .collect();
    assert_eq!(text, "Nothing scripted for that.");
    Ok(())
}

#[tokio::test]
async fn malformed_requests_get_openai_style_errors() -> anyhow::Result<()> {
    let server = start_test_server().await?;
    let unknown_model =
        json!({"model": "gpt-9", "messages": [{"role": "user", "content": "hi"}]}).to_string();
    // (method, path, body, expected status, fragment of error.message)
    let cases = [
        (
            "GET",
            "/v1/nowhere",
            String::new(),
            404,
            "no route for GET /v1/nowhere",
        ),
        (
            "POST",
            "/v1/chat/completions",
            "{not json".to_string(),
            400,
            "not valid JSON",
        ),
        ("POST", "/v1/chat/completions", unknown_model, 404, "gpt-9"),
        (
            "POST",
            "/v1/chat/completions",
            json!({"model": "scripted-test"}).to_string(),
            400,
            "`messages`",
        ),
        (
            "GET",
            "/v1/chat/completions",
            String::new(),
            405,
            "GET is not allowed",
        ),
    ];
    for (method, path, body, status, fragment) in cases {
        let response = http(server.addr, method, path, &body).await?;
        assert_eq!(
            response.status, status,
            "{method} {path} {body}: {}",
            response.body
        );
        let error: Value = serde_json::from_str(&response.body).with_context(|| {
            format!("{method} {path}: error body is not JSON: {}", response.body)
        })?;
        let message = error["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(fragment),
            "{method} {path}: {message:?} lacks {fragment:?}"
        );
    }
    // The server is still healthy afterwards.
    let ok = http(
        server.addr,
        "POST",
        "/v1/chat/completions",
        &chat("hello", false).to_string(),
    )
    .await?;
    assert_eq!(ok.status, 200);
    Ok(())
}

#[tokio::test]
async fn records_requests_and_stops_on_shutdown() -> anyhow::Result<()> {
    let server = start_test_server().await?;
    assert_eq!(
        server.base_url(),
        format!("http://127.0.0.1:{}/v1", server.addr.port())
    );
    http(
        server.addr,
        "POST",
        "/v1/chat/completions",
        &chat("hello", false).to_string(),
    )
    .await?;
    http(
        server.addr,
        "POST",
        "/v1/chat/completions",
        &chat("again", true).to_string(),
    )
    .await?;
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0]["messages"][1]["content"][0]["text"], "hello");
    assert_eq!(requests[1]["stream"], true);

    let addr = server.addr;
    server.shutdown().await;
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "{addr} still accepts connections"
    );
    Ok(())
}

#[tokio::test]
async fn dropping_the_handle_stops_the_server() -> anyhow::Result<()> {
    let server = start_test_server().await?;
    let addr = server.addr;
    drop(server);
    // The stop is signalled on drop and takes effect on the server task; give it a moment.
    try_eventually_async(
        format!("{addr} to refuse connections after the handle was dropped"),
        std::time::Duration::from_secs(2),
        async || TcpStream::connect(addr).await.is_err(),
    )
    .await
}

// --- the real Pi ---------------------------------------------------------------------------

/// Temp directories for one Pi run: Pi's working directory, a fake `HOME` and TMPDIR (see
/// `support::sandbox`), and the agent dir beside them.
fn pi_sandbox() -> anyhow::Result<Sandbox> {
    Ok(Sandbox::new())
}

/// `pi -p <prompt>` against `server`; fails with Pi's output if it did not exit cleanly.
async fn pi_print(
    line: PiLine,
    server: &ServerHandle,
    sandbox: &Sandbox,
    prompt: &str,
) -> anyhow::Result<String> {
    let pi = pi_install(line)?;
    let agent = write_agent_dir(&sandbox.dir("agent"), &server.base_url(), &server.models())?;
    let output = pi.run(&agent, sandbox, &["-p", prompt]).await?;
    if !output.success {
        bail!(
            "Pi {} exited with {:?}\nstdout:\n{}\nstderr:\n{}",
            pi.version,
            output.code,
            output.stdout,
            output.stderr
        );
    }
    assert!(
        !sandbox.home.join(".pi").exists(),
        "Pi {} wrote to ~/.pi despite the offline agent directory",
        pi.version
    );
    Ok(output.stdout)
}

async fn pi_prints_the_scripted_reply(line: PiLine) -> anyhow::Result<()> {
    let server = start_test_server().await?;
    let sandbox = pi_sandbox()?;
    let stdout = pi_print(line, &server, &sandbox, "hello").await?;
    assert!(
        stdout.contains("Hello from the scripted model!"),
        "stdout: {stdout}"
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 1, "{requests:#?}");
    assert_eq!(requests[0]["model"], "scripted-test");
    assert_eq!(requests[0]["stream"], true);
    let last = last_message(&requests[0])?;
    assert_eq!(last["role"], "user");
    assert!(
        unipi_tui::scripted::message_text(last).contains("hello"),
        "{last}"
    );
    Ok(())
}

async fn pi_runs_the_scripted_bash_call(line: PiLine) -> anyhow::Result<()> {
    let server = start_test_server().await?;
    let sandbox = pi_sandbox()?;
    let stdout = pi_print(line, &server, &sandbox, "list files").await?;
    assert!(
        stdout.contains("The command printed tool-output-42."),
        "stdout: {stdout}"
    );

    let requests = server.requests();
    assert_eq!(
        requests.len(),
        2,
        "a tool call and the answer to its result: {requests:#?}"
    );
    let tools: Vec<&str> = requests[0]["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|tool| tool["function"]["name"].as_str())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        tools.contains(&"bash"),
        "Pi must offer the bash tool: {tools:?}"
    );

    let messages = requests[1]["messages"].as_array().context("no messages")?;
    let call = messages
        .iter()
        .filter_map(|message| message["tool_calls"].as_array())
        .flatten()
        .next()
        .context("the replayed history lacks the assistant's tool call")?;
    assert_eq!(call["function"]["name"], "bash");
    let result = last_message(&requests[1])?;
    assert_eq!(result["role"], "tool");
    assert_eq!(result["tool_call_id"], call["id"]);
    let output = unipi_tui::scripted::message_text(result);
    assert!(output.contains("tool-output-42"), "tool result: {output:?}");
    Ok(())
}

async fn pi_walks_through_the_builtin_demo(line: PiLine) -> anyhow::Result<()> {
    let server = start(Scenario::builtin_demo()?).await?;
    let sandbox = pi_sandbox()?;
    std::fs::write(sandbox.project.join("visible-in-the-listing.txt"), "x")?;
    let stdout = pi_print(line, &server, &sandbox, "list files").await?;
    assert!(
        stdout.contains("That listing came from Pi's `bash` tool"),
        "stdout: {stdout}"
    );
    let requests = server.requests();
    let result = requests
        .last()
        .map(last_message)
        .transpose()?
        .context("no requests")?;
    assert_eq!(result["role"], "tool");
    assert!(
        unipi_tui::scripted::message_text(result).contains("visible-in-the-listing.txt"),
        "the demo's `ls -la` ran in Pi's working directory: {result}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pi_current_prints_the_scripted_reply() -> anyhow::Result<()> {
    pi_prints_the_scripted_reply(PiLine::Current).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pi_legacy_prints_the_scripted_reply() -> anyhow::Result<()> {
    pi_prints_the_scripted_reply(PiLine::Legacy).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pi_current_runs_the_scripted_bash_call() -> anyhow::Result<()> {
    pi_runs_the_scripted_bash_call(PiLine::Current).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pi_legacy_runs_the_scripted_bash_call() -> anyhow::Result<()> {
    pi_runs_the_scripted_bash_call(PiLine::Legacy).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pi_current_walks_through_the_builtin_demo() -> anyhow::Result<()> {
    pi_walks_through_the_builtin_demo(PiLine::Current).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pi_legacy_walks_through_the_builtin_demo() -> anyhow::Result<()> {
    pi_walks_through_the_builtin_demo(PiLine::Legacy).await
}

// --- helpers -------------------------------------------------------------------------------

fn last_message(request: &Value) -> anyhow::Result<&Value> {
    request["messages"]
        .as_array()
        .and_then(|messages| messages.last())
        .with_context(|| format!("request without messages: {request}"))
}

struct HttpResponse {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl HttpResponse {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// One HTTP/1.1 request on a fresh connection (`Connection: close`), read to the end; chunked
/// bodies (SSE) are de-chunked.
async fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: &str,
) -> anyhow::Result<HttpResponse> {
    let mut stream = TcpStream::connect(addr).await?;
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await?;
    let mut raw = Vec::new();
    tokio::time::timeout(
        std::time::Duration::from_secs(10),
        stream.read_to_end(&mut raw),
    )
    .await
    .context("the server did not close the connection")??;
    let raw = String::from_utf8(raw)?;
    let (head, rest) = raw.split_once("\r\n\r\n").context("no end of headers")?;
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|code| code.parse().ok())
        .context("no status line")?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(key, value)| (key.trim().to_string(), value.trim().to_string()))
        .collect();
    let chunked = headers.iter().any(|(key, value)| {
        key.eq_ignore_ascii_case("transfer-encoding") && value.contains("chunked")
    });
    let body = if chunked {
        dechunk(rest)?
    } else {
        rest.to_string()
    };
    Ok(HttpResponse {
        status,
        headers,
        body,
    })
}

fn dechunk(mut rest: &str) -> anyhow::Result<String> {
    let mut body = String::new();
    loop {
        let (size, after) = rest.split_once("\r\n").context("truncated chunk size")?;
        let size = usize::from_str_radix(size.trim(), 16)?;
        if size == 0 {
            return Ok(body);
        }
        let chunk = after.get(..size).context("truncated chunk")?;
        body.push_str(chunk);
        rest = after.get(size + 2..).context("truncated chunk end")?;
    }
}

/// The `data:` payloads of an SSE body, in order.
fn sse_data(body: &str) -> Vec<String> {
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| data.trim_start().to_string())
        .collect()
}
