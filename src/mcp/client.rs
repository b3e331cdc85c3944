//! One live connection to one MCP server, and the only place that speaks rmcp. A stdio server is
//! spawned here in its own process group (so wrappers like `npx` and their children are signalled
//! together), its stderr kept as a bounded tail, and its exit watched; a streamable HTTP server is
//! reached through rmcp's reqwest transport. Tool calls are driven by hand rather than through
//! rmcp's `call_tool` so that one `select!` owns the whole life of a call: the response, the idle
//! timeout that progress notifications restart, the caller's cancellation (sent on as
//! `notifications/cancelled`) and the server going away, which fails the call at once. The
//! manager above owns states, restarts and events; this type only connects, lists, calls and
//! stops.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, anyhow};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotification,
    CancelledNotificationParam, ClientCapabilities, ClientConfig, ClientRequest, Implementation,
    ProgressNotificationParam, ProgressToken, ServerResult,
};
use rmcp::service::ClientInitializeError;
use rmcp::service::{NotificationContext, PeerRequestOptions, RequestHandle, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, Peer, RoleClient, ServiceError, ServiceExt};
use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::call::{CallOutcome, McpContent, ProgressUpdate};
use super::config::{ServerConfig, Transport};
use crate::sys::{GroupGuard, ProcessGroup, Reach, SpawnGrouped as _, stop_group};

/// Over this many characters the stderr tail is cut back to [`STDERR_KEEP`].
pub(crate) const STDERR_LIMIT: usize = 10_000;
/// What is left of a trimmed stderr tail: its last characters.
pub const STDERR_KEEP: usize = 5_000;
/// Between SIGTERM and SIGKILL to a stopping server's process group.
pub const STOP_GRACE: Duration = Duration::from_secs(2);

/// A tool as the server lists it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ListedTool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

/// Why a call produced no result, before the manager names the server and tool.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CallFailure {
    Timeout,
    Cancelled,
    /// The process exited or the connection closed; the reason says how.
    Closed(String),
    Protocol(String),
}

/// The bounded tail of a server's stderr, kept for the status overlay and error texts.
#[derive(Debug, Default)]
pub struct StderrTail {
    text: Mutex<String>,
    /// Set when stderr reached its end (the process closed it or exited).
    ended: watch::Sender<bool>,
}

impl StderrTail {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// The tail as it is now.
    pub fn text(&self) -> String {
        self.text
            .lock()
            .map(|text| text.clone())
            .unwrap_or_default()
    }

    /// Appends output, trimming to the last [`STDERR_KEEP`] characters past [`STDERR_LIMIT`].
    pub fn push(&self, chunk: &str) {
        if let Ok(mut text) = self.text.lock() {
            text.push_str(chunk);
            trim_tail(&mut text);
        }
    }

    /// Waits (at most `limit`) for stderr to end, so an error text carries the last words of a
    /// dying process rather than whatever had been read when the exit was noticed.
    pub(crate) async fn wait_ended(&self, limit: Duration) {
        let mut ended = self.ended.subscribe();
        let _ = tokio::time::timeout(limit, ended.wait_for(|ended| *ended)).await;
    }

    /// The last non-empty line, for one-line error texts.
    pub fn last_line(&self) -> Option<String> {
        self.last_lines(1).pop()
    }

    /// The last `count` non-empty lines, oldest first.
    pub fn last_lines(&self, count: usize) -> Vec<String> {
        let text = self.text();
        let mut lines: Vec<String> = text
            .lines()
            .rev()
            .map(str::trim)
            .filter(|line| !line.is_empty())
            .take(count)
            .map(str::to_owned)
            .collect();
        lines.reverse();
        lines
    }

    fn mark_ended(&self) {
        self.ended.send_replace(true);
    }
}

/// One connected server.
pub struct Connection {
    peer: Peer<RoleClient>,
    /// Ends the rmcp service (which closes the transport: stdin for a stdio server).
    cancel: Mutex<Option<rmcp::service::RunningServiceCancellationToken>>,
    child: Option<ChildGroup>,
    /// `Some(reason)` once the process exited or the connection closed.
    closed: watch::Receiver<Option<String>>,
    routes: ProgressRoutes,
    stderr: Arc<StderrTail>,
}

/// What [`Connection::connect`] hands back: the connection, its first tool list, and a channel
/// that ticks on every `notifications/tools/list_changed`.
pub struct Connected {
    pub connection: Connection,
    pub(crate) tools: Vec<ListedTool>,
    pub tools_changed: mpsc::UnboundedReceiver<()>,
}

impl Connection {
    /// Spawns or reaches the server, initializes it and lists its tools, all within the server's
    /// start-up timeout. stderr goes to `stderr` from the first byte, so a server that dies at
    /// start leaves its words there. On failure nothing is left running.
    pub async fn connect(
        config: &ServerConfig,
        stderr: Arc<StderrTail>,
    ) -> anyhow::Result<Connected> {
        let (tools_changed_tx, tools_changed) = mpsc::unbounded_channel();
        let routes = ProgressRoutes::default();
        let handler = ClientEvents {
            routes: routes.clone(),
            tools_changed: tools_changed_tx,
        };
        let (closed_tx, closed) = watch::channel(None);
        let closed_tx = Arc::new(closed_tx);
        let (service, child) = match &config.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let (child, stdout, stdin) =
                    spawn_stdio(command, args, env, cwd, &stderr, &closed_tx)?;
                let started =
                    tokio::time::timeout(config.startup_timeout, handler.serve((stdout, stdin)));
                match started.await {
                    Ok(Ok(service)) => (service, Some(child)),
                    Ok(Err(err)) => {
                        tracing::debug!("mcp: initialize failed: {err}");
                        let reason = closed_reason(&closed, &stderr).await;
                        let exited = child.exit_reason();
                        child.terminate_in_background();
                        // The process's end says why; rmcp's error would only add its types.
                        let words = exited.is_none().then(|| init_error_words(&err)).flatten();
                        return Err(anyhow!("{}", start_failure(words, reason, &stderr)));
                    }
                    Err(_) => {
                        child.terminate_in_background();
                        return Err(timeout_failure(config.startup_timeout, &stderr));
                    }
                }
            }
            Transport::Http { url, headers } => {
                let transport =
                    StreamableHttpClientTransport::from_config(http_config(url, headers)?);
                match tokio::time::timeout(config.startup_timeout, handler.serve(transport)).await {
                    Ok(Ok(service)) => (service, None),
                    Ok(Err(err)) => {
                        tracing::debug!("mcp: initialize failed: {err}");
                        let words = init_error_words(&err)
                            .unwrap_or_else(|| "the connection closed".to_owned());
                        return Err(anyhow!("cannot connect to {url}: {words}"));
                    }
                    Err(_) => return Err(timeout_failure(config.startup_timeout, &stderr)),
                }
            }
        };
        let connection = Connection::watch(service, child, closed, closed_tx, routes, stderr);
        let tools =
            match tokio::time::timeout(config.startup_timeout, connection.list_tools()).await {
                Ok(Ok(tools)) => tools,
                Ok(Err(err)) => {
                    connection.close().await;
                    return Err(err.context("listing its tools failed"));
                }
                Err(_) => {
                    connection.close().await;
                    return Err(timeout_failure(config.startup_timeout, &connection.stderr));
                }
            };
        Ok(Connected {
            connection,
            tools,
            tools_changed,
        })
    }

    /// The process id of a stdio server (also its process group id).
    pub fn pid(&self) -> Option<u32> {
        self.child
            .as_ref()
            .map(|child| child.group.raw().unsigned_abs())
    }

    /// `Some(reason)` once the server went away.
    pub(crate) fn closed_reason(&self) -> Option<String> {
        self.closed.borrow().clone()
    }

    /// Resolves when the server goes away (process exit or closed connection), with the reason.
    pub fn closed(&self) -> impl Future<Output = String> + Send + 'static {
        let mut closed = self.closed.clone();
        async move {
            match closed.wait_for(Option::is_some).await {
                Ok(reason) => reason.clone().unwrap_or_default(),
                Err(_) => "connection closed".to_owned(),
            }
        }
    }

    /// The server's tools, sorted by name.
    pub(crate) async fn list_tools(&self) -> anyhow::Result<Vec<ListedTool>> {
        let tools = self
            .peer
            .list_all_tools()
            .await
            .context("tools/list failed")?;
        let mut listed: Vec<ListedTool> = tools
            .iter()
            .filter_map(|tool| {
                let value = serde_json::to_value(tool).ok()?;
                Some(ListedTool {
                    name: value.get("name")?.as_str()?.to_owned(),
                    description: value
                        .get("description")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    input_schema: value
                        .get("inputSchema")
                        .cloned()
                        .unwrap_or_else(|| serde_json::json!({"type": "object"})),
                })
            })
            .collect();
        listed.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(listed)
    }

    /// Calls `tool`. `timeout` is an idle timeout: every progress notification restarts it.
    /// `cancelled` resolving sends `notifications/cancelled` and ends the call at once.
    pub(crate) async fn call(
        &self,
        tool: &str,
        arguments: Value,
        timeout: Duration,
        progress: Option<mpsc::UnboundedSender<ProgressUpdate>>,
        mut cancelled: Pin<Box<dyn Future<Output = ()> + Send>>,
    ) -> Result<CallOutcome, CallFailure> {
        let mut params = CallToolRequestParams::new(tool.to_owned());
        match arguments {
            Value::Null => {}
            Value::Object(arguments) => params = params.with_arguments(arguments),
            other => {
                return Err(CallFailure::Protocol(format!(
                    "tool arguments must be a JSON object, not {other}"
                )));
            }
        }
        if let Some(reason) = self.closed_reason() {
            return Err(CallFailure::Closed(reason));
        }
        let request = ClientRequest::from(CallToolRequest::new(params));
        let handle = self
            .peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(|err| self.failure(err))?;
        let RequestHandle {
            mut rx,
            id,
            progress_token,
            ..
        } = handle;
        let mut resets = self.routes.register(progress_token.clone(), progress);
        let mut closed = self.closed.clone();
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let result = loop {
            tokio::select! {
                response = &mut rx => break match response {
                    Ok(Ok(ServerResult::CallToolResult(result))) => Ok(outcome(result)),
                    Ok(Ok(ServerResult::EmptyResult(_))) => Ok(outcome(CallToolResult::default())),
                    Ok(Ok(other)) => Err(CallFailure::Protocol(format!("unexpected answer to tools/call: {other:?}"))),
                    Ok(Err(ServiceError::TransportClosed)) | Err(_) => {
                        Err(CallFailure::Closed(closed_reason(&self.closed, &self.stderr).await))
                    }
                    Ok(Err(err)) => Err(self.failure(err)),
                },
                Some(()) = resets.recv() => deadline.as_mut().reset(Instant::now() + timeout),
                () = &mut deadline => {
                    self.send_cancel(id.clone(), "timeout");
                    break Err(CallFailure::Timeout);
                }
                () = &mut cancelled => {
                    self.send_cancel(id.clone(), "cancelled by the user");
                    break Err(CallFailure::Cancelled);
                }
                () = wait_closed(&mut closed) => {
                    break Err(CallFailure::Closed(closed_reason(&self.closed, &self.stderr).await));
                }
            }
        };
        self.routes.remove(&progress_token);
        result
    }

    /// Stops the server: ends the session (closing a stdio server's stdin), SIGTERM to its
    /// process group, SIGKILL after [`STOP_GRACE`]. Returns when nothing of it is left.
    pub async fn close(&self) {
        let cancel = self.cancel.lock().ok().and_then(|mut cancel| cancel.take());
        if let Some(cancel) = cancel {
            cancel.cancel();
        }
        if let Some(child) = &self.child {
            child.terminate().await;
        }
    }

    /// SIGKILL to the process group now, synchronously: the last resort when the manager is
    /// dropped without having stopped its servers.
    pub fn kill_now(&self) {
        if let Some(child) = &self.child {
            child.kill_now();
        }
    }

    /// The stderr tail this connection writes to.
    pub fn stderr(&self) -> &Arc<StderrTail> {
        &self.stderr
    }

    fn watch(
        service: RunningService<RoleClient, ClientEvents>,
        child: Option<ChildGroup>,
        closed: watch::Receiver<Option<String>>,
        closed_tx: Arc<watch::Sender<Option<String>>>,
        routes: ProgressRoutes,
        stderr: Arc<StderrTail>,
    ) -> Self {
        let peer = service.peer().clone();
        let cancel = service.cancellation_token();
        // The service task ends when the transport does (stdout closed, HTTP session gone) or
        // when we cancel it; either way the connection is over.
        tokio::spawn(async move {
            let reason = match service.waiting().await {
                Ok(reason) => format!("connection closed ({reason:?})"),
                Err(err) => format!("connection task failed: {err}"),
            };
            closed_tx.send_if_modified(|closed| {
                let first = closed.is_none();
                if first {
                    *closed = Some(reason);
                }
                first
            });
        });
        Self {
            peer,
            cancel: Mutex::new(Some(cancel)),
            child,
            closed,
            routes,
            stderr,
        }
    }

    fn failure(&self, err: ServiceError) -> CallFailure {
        match err {
            ServiceError::TransportClosed => CallFailure::Closed(
                self.closed_reason()
                    .unwrap_or_else(|| "connection closed".to_owned()),
            ),
            ServiceError::McpError(error) => CallFailure::Protocol(error.message.to_string()),
            // The transport's error names rmcp's types; the server's end says it in words.
            ServiceError::TransportSend(error) => match self.closed_reason() {
                Some(reason) => CallFailure::Closed(reason),
                None => {
                    CallFailure::Protocol(format!("cannot write to the server: {}", error.error))
                }
            },
            other => CallFailure::Protocol(other.to_string()),
        }
    }

    /// Tells the server to stop working on request `id`; never waits for it.
    fn send_cancel(&self, id: rmcp::model::RequestId, reason: &str) {
        let peer = self.peer.clone();
        let notification = CancelledNotification::new(CancelledNotificationParam::new(
            Some(id),
            Some(reason.to_owned()),
        ));
        tokio::spawn(async move {
            let sent = peer.send_notification(notification.into());
            let _ = tokio::time::timeout(Duration::from_secs(5), sent).await;
        });
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        if let Some(cancel) = self.cancel.get_mut().ok().and_then(Option::take) {
            cancel.cancel();
        }
    }
}

/// A stdio server's process group. Dropping it while armed SIGKILLs the group: the last resort
/// when the workbench goes away without stopping its servers.
pub(crate) struct ChildGroup {
    group: ProcessGroup,
    guard: GroupGuard,
    /// How the leader ended, once it has (from its watcher task).
    exited: watch::Receiver<Option<String>>,
}

impl ChildGroup {
    /// How the process ended, once it has.
    fn exit_reason(&self) -> Option<String> {
        self.exited.borrow().clone()
    }

    /// SIGTERM to the group, SIGKILL after [`STOP_GRACE`] if any member is left; then disarmed.
    /// The leader is reaped by its watcher task meanwhile; the rest of the group by whoever
    /// adopted them.
    pub(crate) async fn terminate(&self) {
        if let Some(group) = self.guard.group() {
            stop_group(group, STOP_GRACE).await;
        }
        self.guard.disarm();
    }

    fn kill_now(&self) {
        self.guard.kill_now();
        self.guard.disarm();
    }

    /// The same in a task, for failure paths that must not wait for the grace period.
    fn terminate_in_background(self) {
        tokio::spawn(async move { self.terminate().await });
    }
}

type StdioParts = (
    ChildGroup,
    tokio::process::ChildStdout,
    tokio::process::ChildStdin,
);

/// Spawns a stdio server in a new process group, with tasks that copy its stderr into `stderr`
/// and report its exit to `closed`.
fn spawn_stdio(
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    cwd: &Path,
    stderr: &Arc<StderrTail>,
    closed: &Arc<watch::Sender<Option<String>>>,
) -> anyhow::Result<StdioParts> {
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(args)
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // The watcher task owns the child; if the runtime drops it, the leader dies too.
        .kill_on_drop(true)
        .current_dir(cwd);
    let (mut child, group) = cmd
        .spawn_grouped()
        .with_context(|| format!("cannot start `{command}`"))?;
    let (Some(stdout), Some(stdin), Some(mut err_pipe)) =
        (child.stdout.take(), child.stdin.take(), child.stderr.take())
    else {
        return Err(anyhow!("`{command}`: stdio pipes were not created"));
    };
    let tail = stderr.clone();
    tokio::spawn(async move {
        let mut buf = vec![0u8; 8192];
        // Invalid UTF-8 split across reads shows as replacement characters; it is a log tail.
        while let Ok(n) = err_pipe.read(&mut buf).await {
            if n == 0 {
                break;
            }
            tail.push(&String::from_utf8_lossy(&buf[..n]));
        }
        tail.mark_ended();
    });
    let (exited_tx, exited) = watch::channel(None);
    let closed = closed.clone();
    tokio::spawn(async move {
        let reason = match child.wait().await {
            Ok(status) => exit_words(status),
            Err(err) => format!("waiting for the server process failed: {err}"),
        };
        exited_tx.send_replace(Some(reason.clone()));
        // The process's end is the better reason than the connection's, even if the closed
        // connection was noticed first.
        closed.send_modify(|closed| *closed = Some(reason));
    });
    let group = ChildGroup {
        group,
        guard: GroupGuard::new(group, Reach::Group),
        exited,
    };
    Ok((group, stdout, stdin))
}

/// rmcp's settings for a streamable HTTP server: the URL and the configured headers.
fn http_config(
    url: &str,
    headers: &BTreeMap<String, String>,
) -> anyhow::Result<StreamableHttpClientTransportConfig> {
    use axum::http::{HeaderName, HeaderValue};
    let mut custom = HashMap::new();
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    for (name, value) in headers {
        // rmcp sends `auth_header` as `Authorization: Bearer …` itself.
        if name.eq_ignore_ascii_case("authorization")
            && let Some(token) = value.strip_prefix("Bearer ")
        {
            config = config.auth_header(token.to_owned());
            continue;
        }
        let name = HeaderName::from_bytes(name.as_bytes())
            .with_context(|| format!("invalid header name `{name}`"))?;
        let value = HeaderValue::from_str(value)
            .with_context(|| format!("invalid value for header `{name}`"))?;
        custom.insert(name, value);
    }
    Ok(config.custom_headers(custom))
}

/// Resolves once `closed` holds a reason (or its sender is gone, which also means closed).
async fn wait_closed(closed: &mut watch::Receiver<Option<String>>) {
    // The borrowed value must not live across an await of the caller's select.
    let _ = closed.wait_for(Option::is_some).await.is_ok();
}

/// The reason the server went away, waiting briefly for its exit and its last stderr words.
async fn closed_reason(closed: &watch::Receiver<Option<String>>, stderr: &StderrTail) -> String {
    let mut closed = closed.clone();
    let _ =
        tokio::time::timeout(Duration::from_millis(500), closed.wait_for(Option::is_some)).await;
    stderr.wait_ended(Duration::from_millis(500)).await;
    let reason = closed.borrow().clone();
    reason.unwrap_or_else(|| "connection closed".to_owned())
}

/// Lines of stderr an error text quotes.
const QUOTED_STDERR_LINES: usize = 3;

/// `exited with status 3 during start-up: <its last stderr lines>`, with what went wrong in
/// the protocol (in words) when the process did not simply end.
fn start_failure(words: Option<String>, reason: String, stderr: &StderrTail) -> String {
    let mut text = format!("{reason} during start-up");
    if let Some(words) = words {
        text.push_str(&format!(" ({words})"));
    }
    let tail = stderr.last_lines(QUOTED_STDERR_LINES);
    if !tail.is_empty() {
        text.push_str(": ");
        text.push_str(&tail.join("; "));
    }
    text
}

/// How a server process ended, in words: `exited with status 3`, `was killed by SIGKILL`.
fn exit_words(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(signal)) => match nix::sys::signal::Signal::try_from(signal) {
            Ok(signal) => format!("was killed by {signal}"),
            Err(_) => format!("was killed by signal {signal}"),
        },
        (None, None) => format!("ended ({status})"),
    }
}

/// rmcp's initialize error in plain words, without the type names its messages carry; `None`
/// when the transport closing is all it says (the process's end or the closed connection says
/// that better).
fn init_error_words(err: &ClientInitializeError) -> Option<String> {
    match err {
        ClientInitializeError::ConnectionClosed(_) | ClientInitializeError::Cancelled => None,
        ClientInitializeError::TransportError { error, .. } => Some(error.error.to_string()),
        ClientInitializeError::JsonRpcError(data) => {
            Some(format!("it refused to initialize: {}", data.message))
        }
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => init_error_words(fallback),
        ClientInitializeError::ExpectedInitResponse(_)
        | ClientInitializeError::ExpectedInitResult(_)
        | ClientInitializeError::ConflictInitResponseId(..)
        | ClientInitializeError::UncorrelatedErrorResponse { .. } => {
            Some("it did not answer initialize with an initialize result".to_owned())
        }
        other => Some(other.to_string()),
    }
}

fn timeout_failure(after: Duration, stderr: &StderrTail) -> anyhow::Error {
    let mut text = format!("no answer to initialize within {after:?} (start-up timeout)");
    if let Some(line) = stderr.last_line() {
        text.push_str("; last stderr line: ");
        text.push_str(&line);
    }
    anyhow!(text)
}

/// Cuts `text` to its last [`STDERR_KEEP`] characters once it is over [`STDERR_LIMIT`].
pub(crate) fn trim_tail(text: &mut String) {
    if text.chars().count() <= STDERR_LIMIT {
        return;
    }
    let cut = text
        .char_indices()
        .rev()
        .nth(STDERR_KEEP - 1)
        .map_or(0, |(index, _)| index);
    text.drain(..cut);
}

/// An MCP result as the workbench's own type.
fn outcome(result: CallToolResult) -> CallOutcome {
    let content = result
        .content
        .iter()
        .filter_map(|block| serde_json::to_value(block).ok())
        .map(content_of)
        .collect();
    CallOutcome {
        content,
        structured: result.structured_content,
        is_error: result.is_error.unwrap_or(false),
    }
}

/// One content block, read from its wire form so every rmcp content variant maps the same way.
fn content_of(value: Value) -> McpContent {
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
    match value.get("type").and_then(Value::as_str) {
        Some("text") => McpContent::Text(text(&value, "text").unwrap_or_default()),
        Some("image") => McpContent::Image {
            data: text(&value, "data").unwrap_or_default(),
            mime: text(&value, "mimeType").unwrap_or_default(),
        },
        Some("resource") => {
            let resource = value.get("resource").cloned().unwrap_or(Value::Null);
            McpContent::Resource {
                uri: text(&resource, "uri").unwrap_or_default(),
                text: text(&resource, "text"),
            }
        }
        Some("resource_link") => McpContent::Resource {
            uri: text(&value, "uri").unwrap_or_default(),
            text: None,
        },
        _ => McpContent::Other(value),
    }
}

/// Where progress notifications go: per progress token, the caller's sender and the call's
/// timeout reset. A notification can beat the registration (the request is on the wire before
/// `call` learns its token), so unknown tokens are held briefly.
#[derive(Clone, Default)]
struct ProgressRoutes {
    inner: Arc<Mutex<RouteTable>>,
}

#[derive(Default)]
struct RouteTable {
    routes: HashMap<ProgressToken, Route>,
    early: VecDeque<(ProgressToken, ProgressUpdate)>,
}

struct Route {
    updates: Option<mpsc::UnboundedSender<ProgressUpdate>>,
    reset: mpsc::UnboundedSender<()>,
}

/// Notifications for tokens nobody registered yet; older ones are dropped.
const EARLY_PROGRESS_LIMIT: usize = 64;

impl ProgressRoutes {
    fn register(
        &self,
        token: ProgressToken,
        updates: Option<mpsc::UnboundedSender<ProgressUpdate>>,
    ) -> mpsc::UnboundedReceiver<()> {
        let (reset, resets) = mpsc::unbounded_channel();
        if let Ok(mut inner) = self.inner.lock() {
            let early: Vec<ProgressUpdate> = {
                let (mine, others): (VecDeque<_>, VecDeque<_>) =
                    inner.early.drain(..).partition(|(t, _)| *t == token);
                inner.early = others;
                mine.into_iter().map(|(_, update)| update).collect()
            };
            for update in early {
                let _ = reset.send(());
                if let Some(updates) = &updates {
                    let _ = updates.send(update);
                }
            }
            inner.routes.insert(token, Route { updates, reset });
        }
        resets
    }

    fn remove(&self, token: &ProgressToken) {
        if let Ok(mut inner) = self.inner.lock() {
            inner.routes.remove(token);
        }
    }

    fn deliver(&self, params: ProgressNotificationParam) {
        let update = ProgressUpdate {
            progress: params.progress,
            total: params.total,
            message: params.message,
        };
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        match inner.routes.get(&params.progress_token) {
            Some(route) => {
                let _ = route.reset.send(());
                if let Some(updates) = &route.updates {
                    let _ = updates.send(update);
                }
            }
            None => {
                if inner.early.len() == EARLY_PROGRESS_LIMIT {
                    inner.early.pop_front();
                }
                inner.early.push_back((params.progress_token, update));
            }
        }
    }
}

/// The client side of the session: routes progress, reports tool-list changes.
#[derive(Clone)]
struct ClientEvents {
    routes: ProgressRoutes,
    tools_changed: mpsc::UnboundedSender<()>,
}

impl ClientHandler for ClientEvents {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.routes.deliver(params);
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.tools_changed.send(());
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("unipi-tui", env!("CARGO_PKG_VERSION")),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_table::check_table;

    #[test]
    fn stderr_tail_is_trimmed_to_its_last_characters() {
        let cases: &[(usize, usize)] = &[
            (10, 10),
            (STDERR_LIMIT, STDERR_LIMIT),
            (STDERR_LIMIT + 1, STDERR_KEEP),
        ];
        for (len, kept) in cases {
            let mut text: String = (0..*len)
                .map(|i| char::from(b'a' + (i % 26) as u8))
                .collect();
            let expected_end = text[text.len() - kept..].to_owned();
            trim_tail(&mut text);
            assert_eq!(text.chars().count(), *kept, "len {len}");
            assert_eq!(text, expected_end, "len {len}");
        }
        // Multi-byte characters are cut on a boundary.
        let mut text = "é".repeat(STDERR_LIMIT + 5);
        trim_tail(&mut text);
        assert_eq!(text.chars().count(), STDERR_KEEP);
    }

    #[test]
    fn stderr_tail_accumulates_and_trims() {
        let tail = StderrTail::new();
        tail.push("first line\n");
        tail.push("second\n\n");
        assert_eq!(tail.text(), "first line\nsecond\n\n");
        assert_eq!(tail.last_line().as_deref(), Some("second"));
        tail.push(&"x".repeat(STDERR_LIMIT));
        assert_eq!(tail.text(), "x".repeat(STDERR_KEEP));
    }

    #[test]
    fn content_blocks_map_by_type() {
        let cases = [
            (
                serde_json::json!({"type": "text", "text": "hi"}),
                McpContent::Text("hi".into()),
            ),
            (
                serde_json::json!({"type": "image", "data": "AAA=", "mimeType": "image/png"}),
                McpContent::Image {
                    data: "AAA=".into(),
                    mime: "image/png".into(),
                },
            ),
            (
                serde_json::json!({"type": "resource", "resource": {"uri": "file:///a", "text": "body"}}),
                McpContent::Resource {
                    uri: "file:///a".into(),
                    text: Some("body".into()),
                },
            ),
            (
                serde_json::json!({"type": "resource_link", "uri": "file:///b", "name": "b"}),
                McpContent::Resource {
                    uri: "file:///b".into(),
                    text: None,
                },
            ),
            (
                serde_json::json!({"type": "audio", "data": "x"}),
                McpContent::Other(serde_json::json!({"type": "audio", "data": "x"})),
            ),
        ];
        check_table(cases, |value| content_of(value.clone()));
    }
}
