//! The HTTP side of the scripted model: an OpenAI-compatible chat-completions endpoint on
//! loopback that answers from a [`Scenario`]. It speaks just enough of the protocol for Pi's
//! `openai-completions` client (the `openai` npm SDK): streamed `chat.completion.chunk` events
//! with text or tool-call deltas, a finish reason, an optional usage chunk and `[DONE]`, or one
//! non-streamed `chat.completion`. Every request body is recorded so tests can assert on what Pi
//! sent; anything malformed gets a 4xx with an OpenAI-style error body instead of a panic.
//!
//! Per-run state (firing counts for `times`, ids, the request log) lives here, not in the
//! scenario, so the scenario stays a pure value.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{Method, StatusCode, Uri};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Json, Response};
use axum::routing::{get, post};
use futures_util::StreamExt as _;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::scenario::{Outcome, Pacing, Price, Scenario, ToolCall, UsageSpec, message_text};

/// A served model id and the price its scenario gives it (`None`: the nominal default).
#[derive(Debug, Clone, PartialEq)]
pub struct ServedModel {
    pub id: String,
    pub price: Option<Price>,
}
use crate::sys::{lock, unix_seconds};

/// Request bodies carry the whole conversation; a long demo session must not hit axum's 2 MiB
/// default.
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;
/// How long [`ServerHandle::shutdown`] waits for in-flight responses before cutting them off.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// A running scripted server. Dropping it stops accepting connections (in-flight responses
/// finish on their own); [`ServerHandle::shutdown`] also waits for them.
#[derive(Debug)]
pub struct ServerHandle {
    /// The bound loopback address (the real port when started on port 0).
    pub addr: SocketAddr,
    shared: Arc<ScenarioRun>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

/// Starts a server for `scenario` on 127.0.0.1 with a free port.
pub async fn start(scenario: Scenario) -> anyhow::Result<ServerHandle> {
    start_on(scenario, SocketAddr::from(([127, 0, 0, 1], 0))).await
}

/// Starts a server for `scenario` on `addr`.
pub async fn start_on(scenario: Scenario, addr: SocketAddr) -> anyhow::Result<ServerHandle> {
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("scripted model server cannot bind {addr}"))?;
    let addr = listener
        .local_addr()
        .context("scripted model server has no local address")?;
    let shared = Arc::new(ScenarioRun {
        fired: Mutex::new(vec![0; scenario.rule_count()]),
        scenario,
        requests: Mutex::new(Vec::new()),
        completions: AtomicU64::new(0),
    });
    let (stop, stopped) = oneshot::channel::<()>();
    let app = router(Arc::clone(&shared));
    let task = tokio::spawn(async move {
        let shutdown_signal = async {
            // A dropped sender means the handle is gone: stop too.
            let _ = stopped.await;
        };
        if let Err(err) = axum::serve(listener, app)
            .with_graceful_shutdown(shutdown_signal)
            .await
        {
            tracing::warn!(%addr, error = %err, "scripted model server stopped with an error");
        }
    });
    tracing::debug!(%addr, "scripted model server listening");
    Ok(ServerHandle {
        addr,
        shared,
        stop: Some(stop),
        task: Some(task),
    })
}

impl ServerHandle {
    /// The OpenAI base URL clients are configured with, e.g. `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The model ids served.
    pub fn models(&self) -> Vec<String> {
        self.shared.scenario.models().to_vec()
    }

    /// The models served with the price the scenario gives each (for Pi's `models.json`).
    pub fn served_models(&self) -> Vec<ServedModel> {
        let scenario = &self.shared.scenario;
        scenario
            .models()
            .iter()
            .map(|id| ServedModel {
                id: id.clone(),
                price: scenario.price(id),
            })
            .collect()
    }

    /// The JSON bodies of every chat-completions request received so far (including ones that
    /// were rejected for their shape), oldest first.
    pub fn requests(&self) -> Vec<Value> {
        lock(&self.shared.requests).clone()
    }

    /// Stops accepting connections and waits (up to a grace period) for in-flight responses.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(mut task) = self.task.take()
            && tokio::time::timeout(SHUTDOWN_GRACE, &mut task)
                .await
                .is_err()
        {
            tracing::warn!(addr = %self.addr, "scripted model server did not stop in time; aborting");
            task.abort();
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

// --- routing and handlers ------------------------------------------------------------------

#[derive(Debug)]
struct ScenarioRun {
    scenario: Scenario,
    /// How often each rule fired, for `times`.
    fired: Mutex<Vec<u32>>,
    requests: Mutex<Vec<Value>>,
    /// Sequence for completion and tool-call ids, so runs are reproducible.
    completions: AtomicU64,
}

fn router(shared: Arc<ScenarioRun>) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(chat_completions))
        .route("/chat/completions", post(chat_completions))
        .route("/v1/models", get(list_models))
        .route("/models", get(list_models))
        .fallback(no_route)
        .method_not_allowed_fallback(wrong_method)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(shared)
}

async fn list_models(State(shared): State<Arc<ScenarioRun>>) -> Json<Value> {
    let data: Vec<Value> = shared
        .scenario
        .models()
        .iter()
        .map(|id| json!({"id": id, "object": "model", "created": 0, "owned_by": "unipi-scripted"}))
        .collect();
    Json(json!({"object": "list", "data": data}))
}

async fn no_route(method: Method, uri: Uri) -> Response {
    api_error(
        StatusCode::NOT_FOUND,
        "not_found",
        &format!(
            "no route for {method} {}: this scripted server serves POST /v1/chat/completions and GET /v1/models",
            uri.path()
        ),
    )
}

async fn wrong_method(method: Method, uri: Uri) -> Response {
    api_error(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        &format!("{method} is not allowed on {}", uri.path()),
    )
}

async fn chat_completions(State(shared): State<Arc<ScenarioRun>>, body: Bytes) -> Response {
    let request: Value = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(err) => {
            return api_error(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                &format!("request body is not valid JSON: {err}"),
            );
        }
    };
    lock(&shared.requests).push(request.clone());
    let parsed = match ChatRequest::parse(&request, shared.scenario.models()) {
        Ok(parsed) => parsed,
        Err((status, message)) => return api_error(status, "invalid_request_error", &message),
    };
    let (rule, reply) = {
        let mut fired = lock(&shared.fired);
        let selection = shared.scenario.select_for(
            Some(&parsed.model),
            parsed.last_role,
            &parsed.last_text,
            &fired,
        );
        if let Some(count) = selection.rule.and_then(|rule| fired.get_mut(rule)) {
            *count += 1;
        }
        tracing::debug!(rule = ?selection.rule, role = parsed.last_role, "scripted reply chosen");
        (selection.rule, selection.reply.clone())
    };
    if reply.pacing.delay_ms > 0 {
        tokio::time::sleep(Duration::from_millis(reply.pacing.delay_ms)).await;
    }
    let (text, tool_calls) = match &reply.outcome {
        Outcome::Fail { status, message } => {
            let status = StatusCode::from_u16(*status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            return api_error(status, "scripted_error", message);
        }
        Outcome::Answer { text, tool_calls } => (text.as_str(), tool_calls.as_slice()),
    };
    let expanded: Vec<ToolCall> = tool_calls
        .iter()
        .map(|call| ToolCall {
            arguments: shared
                .scenario
                .expand_arguments(rule, &parsed.last_text, &call.arguments),
            ..call.clone()
        })
        .collect();
    let tool_calls = expanded.as_slice();
    let sequence = shared.completions.fetch_add(1, Ordering::Relaxed) + 1;
    let completion = Completion {
        id: format!("chatcmpl-scripted-{sequence}"),
        created: unix_seconds(),
        model: parsed.model,
        text,
        tool_calls: tool_calls
            .iter()
            .enumerate()
            .map(|(index, call)| IdentifiedCall {
                id: call
                    .id
                    .clone()
                    .unwrap_or_else(|| format!("call_scripted_{sequence}_{index}")),
                call,
            })
            .collect(),
        usage: usage_for(&reply.usage, parsed.prompt_chars, text, tool_calls),
    };
    if parsed.stream {
        stream_response(&completion, reply.pacing, parsed.include_usage)
    } else {
        Json(completion.whole()).into_response()
    }
}

/// The parts of a chat request the server acts on.
struct ChatRequest<'a> {
    model: String,
    stream: bool,
    include_usage: bool,
    last_role: &'a str,
    last_text: String,
    /// Characters of all message texts, for the derived prompt token count.
    prompt_chars: usize,
}

impl<'a> ChatRequest<'a> {
    fn parse(request: &'a Value, served: &[String]) -> Result<Self, (StatusCode, String)> {
        let bad = |message: String| (StatusCode::BAD_REQUEST, message);
        if !request.is_object() {
            return Err(bad("request body must be a JSON object".to_string()));
        }
        let model = request
            .get("model")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("`model` is required and must be a string".to_string()))?;
        if !served.iter().any(|id| id == model) {
            return Err((
                StatusCode::NOT_FOUND,
                format!(
                    "the model `{model}` does not exist on this scripted server (it serves: {})",
                    served.join(", ")
                ),
            ));
        }
        let messages = request
            .get("messages")
            .and_then(Value::as_array)
            .filter(|messages| !messages.is_empty())
            .ok_or_else(|| {
                bad("`messages` is required and must be a non-empty array".to_string())
            })?;
        let mut prompt_chars = 0;
        for (index, message) in messages.iter().enumerate() {
            if message.get("role").and_then(Value::as_str).is_none() {
                return Err(bad(format!(
                    "`messages[{index}].role` is required and must be a string"
                )));
            }
            prompt_chars += message_text(message).chars().count();
        }
        let last = &messages[messages.len() - 1];
        let last_role = last.get("role").and_then(Value::as_str).unwrap_or_default();
        let stream = match request.get("stream") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(stream)) => *stream,
            Some(other) => return Err(bad(format!("`stream` must be a boolean, not {other}"))),
        };
        let include_usage = request
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        Ok(Self {
            model: model.to_string(),
            stream,
            include_usage,
            last_role,
            last_text: message_text(last),
            prompt_chars,
        })
    }
}

// --- response building -----------------------------------------------------------------------

struct IdentifiedCall<'a> {
    id: String,
    call: &'a ToolCall,
}

struct Completion<'a> {
    id: String,
    created: u64,
    model: String,
    text: &'a str,
    tool_calls: Vec<IdentifiedCall<'a>>,
    usage: Value,
}

impl Completion<'_> {
    fn finish_reason(&self) -> &'static str {
        if self.tool_calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        }
    }

    /// The non-streamed `chat.completion` object.
    fn whole(&self) -> Value {
        let mut message = json!({
            "role": "assistant",
            "content": if self.text.is_empty() && !self.tool_calls.is_empty() { Value::Null } else { json!(self.text) },
        });
        if !self.tool_calls.is_empty() {
            let calls: Vec<Value> = self
                .tool_calls
                .iter()
                .map(|call| {
                    json!({
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.call.name, "arguments": call.call.arguments},
                    })
                })
                .collect();
            message["tool_calls"] = json!(calls);
        }
        json!({
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": self.finish_reason()}],
            "usage": self.usage,
        })
    }

    /// One `chat.completion.chunk` with a single choice carrying `delta`.
    fn chunk(&self, delta: Value, finish_reason: Option<&str>) -> String {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}],
        })
        .to_string()
    }

    /// The streamed chunks as OpenAI sends them, each with the pause to take before it.
    fn chunks(&self, pacing: Pacing, include_usage: bool) -> Vec<(Duration, String)> {
        let pause = Duration::from_millis(pacing.chunk_delay_ms);
        let mut chunks = vec![(
            Duration::ZERO,
            self.chunk(json!({"role": "assistant", "content": ""}), None),
        )];
        for piece in split_chars(self.text, pacing.chunk_chars) {
            chunks.push((pause, self.chunk(json!({"content": piece}), None)));
        }
        for (index, call) in self.tool_calls.iter().enumerate() {
            // The first delta of a call names it; the arguments follow in pieces.
            let opening = json!({"tool_calls": [{
                "index": index,
                "id": call.id,
                "type": "function",
                "function": {"name": call.call.name, "arguments": ""},
            }]});
            chunks.push((pause, self.chunk(opening, None)));
            for piece in split_chars(&call.call.arguments, pacing.chunk_chars) {
                let delta =
                    json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]});
                chunks.push((pause, self.chunk(delta, None)));
            }
        }
        chunks.push((
            Duration::ZERO,
            self.chunk(json!({}), Some(self.finish_reason())),
        ));
        if include_usage {
            let usage_chunk = json!({
                "id": self.id,
                "object": "chat.completion.chunk",
                "created": self.created,
                "model": self.model,
                "choices": [],
                "usage": self.usage,
            });
            chunks.push((Duration::ZERO, usage_chunk.to_string()));
        }
        chunks.push((Duration::ZERO, "[DONE]".to_string()));
        chunks
    }
}

fn stream_response(completion: &Completion<'_>, pacing: Pacing, include_usage: bool) -> Response {
    let events = futures_util::stream::iter(completion.chunks(pacing, include_usage)).then(
        |(pause, data)| async move {
            if !pause.is_zero() {
                tokio::time::sleep(pause).await;
            }
            Ok::<_, Infallible>(Event::default().data(data))
        },
    );
    Sse::new(events).into_response()
}

/// Scripted counts where given, otherwise characters / 4 (at least 1), so clients show tokens.
fn usage_for(spec: &UsageSpec, prompt_chars: usize, text: &str, tool_calls: &[ToolCall]) -> Value {
    let completion_chars = text.chars().count()
        + tool_calls
            .iter()
            .map(|call| call.name.chars().count() + call.arguments.chars().count())
            .sum::<usize>();
    let estimate = |chars: usize| (chars as u64).div_ceil(4).max(1);
    let prompt_tokens = spec.prompt_tokens.unwrap_or_else(|| estimate(prompt_chars));
    let completion_tokens = spec
        .completion_tokens
        .unwrap_or_else(|| estimate(completion_chars));
    json!({
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    })
}

/// Splits text into pieces of at most `size` characters (never inside a UTF-8 sequence).
fn split_chars(text: &str, size: usize) -> Vec<String> {
    let size = size.max(1);
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(size)
        .map(|piece| piece.iter().collect())
        .collect()
}

fn api_error(status: StatusCode, kind: &str, message: &str) -> Response {
    let body = json!({"error": {"message": message, "type": kind, "param": null, "code": null}});
    (status, Json(body)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn completion<'a>(text: &'a str, calls: &'a [ToolCall]) -> Completion<'a> {
        Completion {
            id: "chatcmpl-scripted-1".to_string(),
            created: 0,
            model: "m".to_string(),
            text,
            tool_calls: calls
                .iter()
                .enumerate()
                .map(|(index, call)| IdentifiedCall {
                    id: format!("call_{index}"),
                    call,
                })
                .collect(),
            usage: json!({"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}),
        }
    }

    fn data_of(chunks: &[(Duration, String)]) -> anyhow::Result<Vec<Value>> {
        chunks
            .iter()
            .filter(|(_, data)| data != "[DONE]")
            .map(|(_, data)| Ok(serde_json::from_str(data)?))
            .collect()
    }

    #[test]
    fn split_chars_respects_size_and_utf8() {
        let cases: &[(&str, usize, &[&str])] = &[
            ("", 3, &[]),
            ("abcdefg", 3, &["abc", "def", "g"]),
            ("héllo wörld", 4, &["héll", "o wö", "rld"]),
            ("ab", 0, &["a", "b"]),
        ];
        for (text, size, expected) in cases {
            assert_eq!(split_chars(text, *size), *expected, "{text:?} by {size}");
        }
    }

    #[test]
    fn text_stream_is_role_deltas_finish_usage_done() -> anyhow::Result<()> {
        let pacing = Pacing {
            delay_ms: 0,
            chunk_chars: 5,
            chunk_delay_ms: 0,
        };
        let chunks = completion("Hello world", &[]).chunks(pacing, true);
        assert_eq!(chunks.last().map(|(_, data)| data.as_str()), Some("[DONE]"));
        let values = data_of(&chunks)?;
        let deltas: Vec<&Value> = values
            .iter()
            .map(|chunk| &chunk["choices"][0]["delta"])
            .collect();
        assert_eq!(deltas[0], &json!({"role": "assistant", "content": ""}));
        let content: Vec<&str> = deltas
            .iter()
            .filter_map(|delta| delta["content"].as_str())
            .collect();
        assert_eq!(content, ["", "Hello", " worl", "d"]);
        let finish = &values[values.len() - 2];
        assert_eq!(finish["choices"][0]["finish_reason"], "stop");
        let usage = &values[values.len() - 1];
        assert_eq!(usage["choices"], json!([]));
        assert_eq!(usage["usage"]["total_tokens"], 2);
        Ok(())
    }

    #[test]
    fn tool_call_stream_names_the_call_then_streams_arguments() -> anyhow::Result<()> {
        let call = ToolCall {
            id: None,
            name: "bash".to_string(),
            arguments: r#"{"command":"ls -la"}"#.to_string(),
        };
        let calls = [call];
        let pacing = Pacing {
            delay_ms: 0,
            chunk_chars: 7,
            chunk_delay_ms: 0,
        };
        let chunks = completion("", &calls).chunks(pacing, false);
        let values = data_of(&chunks)?;
        let tool_deltas: Vec<&Value> = values
            .iter()
            .filter_map(|chunk| chunk["choices"][0]["delta"].get("tool_calls"))
            .map(|calls| &calls[0])
            .collect();
        assert_eq!(
            tool_deltas[0],
            &json!({"index": 0, "id": "call_0", "type": "function", "function": {"name": "bash", "arguments": ""}})
        );
        let arguments: String = tool_deltas[1..]
            .iter()
            .filter_map(|delta| delta["function"]["arguments"].as_str())
            .collect();
        assert_eq!(arguments, r#"{"command":"ls -la"}"#);
        assert!(tool_deltas.len() > 2, "arguments arrive in several pieces");
        let last = &values[values.len() - 1];
        assert_eq!(
            last["choices"][0]["finish_reason"], "tool_calls",
            "no usage chunk requested"
        );
        Ok(())
    }

    #[test]
    fn whole_completion_has_null_content_for_tool_only_replies() {
        let call = ToolCall {
            id: None,
            name: "read".to_string(),
            arguments: "{}".to_string(),
        };
        let calls = [call];
        let whole = completion("", &calls).whole();
        assert_eq!(whole["choices"][0]["message"]["content"], Value::Null);
        assert_eq!(
            whole["choices"][0]["message"]["tool_calls"][0]["function"]["name"],
            "read"
        );
        assert_eq!(whole["choices"][0]["finish_reason"], "tool_calls");
        let plain = completion("hi", &[]).whole();
        assert_eq!(plain["choices"][0]["message"]["content"], "hi");
        assert!(plain["choices"][0]["message"].get("tool_calls").is_none());
    }

    #[test]
    fn usage_is_scripted_or_estimated() {
        let call = ToolCall {
            id: None,
            name: "bash".to_string(),
            arguments: "{}".to_string(),
        };
        // (spec, prompt chars, text, calls, expected prompt, expected completion)
        let cases = [
            (UsageSpec::default(), 40, "12345678", vec![], 10, 2),
            (UsageSpec::default(), 0, "", vec![], 1, 1),
            (UsageSpec::default(), 3, "", vec![call], 1, 2),
            (
                UsageSpec {
                    prompt_tokens: Some(7),
                    completion_tokens: None,
                },
                400,
                "abcd",
                vec![],
                7,
                1,
            ),
        ];
        for (spec, prompt_chars, text, calls, prompt, completion) in cases {
            let usage = usage_for(&spec, prompt_chars, text, &calls);
            assert_eq!(
                usage,
                json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}),
                "{spec:?} {prompt_chars} {text:?}"
            );
        }
    }

    #[test]
    fn requests_are_checked_before_a_reply_is_chosen() {
        let served = ["m".to_string()];
        // (request, expected status, fragment of the message)
        let cases = [
            (json!([1]), StatusCode::BAD_REQUEST, "JSON object"),
            (json!({"messages": []}), StatusCode::BAD_REQUEST, "`model`"),
            (
                json!({"model": "other", "messages": [{"role": "user"}]}),
                StatusCode::NOT_FOUND,
                "serves: m",
            ),
            (
                json!({"model": "m", "messages": []}),
                StatusCode::BAD_REQUEST,
                "non-empty",
            ),
            (
                json!({"model": "m", "messages": [{"content": "x"}]}),
                StatusCode::BAD_REQUEST,
                "messages[0].role",
            ),
            (
                json!({"model": "m", "messages": [{"role": "user"}], "stream": "yes"}),
                StatusCode::BAD_REQUEST,
                "`stream`",
            ),
        ];
        for (request, status, fragment) in cases {
            match ChatRequest::parse(&request, &served) {
                Err((got, message)) => {
                    assert_eq!(got, status, "{request}");
                    assert!(message.contains(fragment), "{message:?} lacks {fragment:?}");
                }
                Ok(_) => panic!("{request} should be rejected"),
            }
        }
    }

    #[test]
    fn a_good_request_yields_its_last_message_and_flags() -> anyhow::Result<()> {
        let request = json!({
            "model": "m",
            "stream": true,
            "stream_options": {"include_usage": true},
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": [{"type": "text", "text": "list files"}]},
            ],
        });
        let served = ["m".to_string()];
        let parsed = ChatRequest::parse(&request, &served)
            .map_err(|(_, message)| anyhow::anyhow!(message))?;
        assert_eq!(
            (parsed.last_role, parsed.last_text.as_str()),
            ("user", "list files")
        );
        assert!(parsed.stream && parsed.include_usage);
        assert_eq!(parsed.prompt_chars, "be brief".len() + "list files".len());
        Ok(())
    }
}
