//! Typed fetch failures. Every failure says what went wrong (`code`), where in the fetch it
//! happened (`phase`) and whether trying again could help (`retryable`), so the agent can decide
//! without guessing; its `message` is always a sentence (the original printed `[object Object]`
//! for a failed single fetch because it threw a plain object).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::bridge::{Card, CardTint, ToolError};

/// What went wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// Not a URL at all.
    InvalidUrl,
    /// A URL whose scheme is not http or https.
    UnsupportedProtocol,
    /// The host is (or resolves to, or redirects to) a private or loopback address, and
    /// `allowPrivateNetwork` is off.
    BlockedAddress,
    Timeout,
    /// The connection failed or broke off.
    NetworkError,
    TooManyRedirects,
    /// The server answered with a non-success status.
    HttpStatus,
    /// The answer cannot be used: too large, undecodable, a redirect without a target.
    UnexpectedResponse,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidUrl => "invalid_url",
            ErrorCode::UnsupportedProtocol => "unsupported_protocol",
            ErrorCode::BlockedAddress => "blocked_address",
            ErrorCode::Timeout => "timeout",
            ErrorCode::NetworkError => "network_error",
            ErrorCode::TooManyRedirects => "too_many_redirects",
            ErrorCode::HttpStatus => "http_status",
            ErrorCode::UnexpectedResponse => "unexpected_response",
        }
    }
}

/// Where in the fetch it went wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Checking the URL (before any request).
    Validation,
    /// Resolving the host and connecting.
    Connecting,
    /// Waiting for the response's status and headers.
    Waiting,
    /// Reading the body.
    Loading,
    /// Turning the body into content.
    Processing,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Validation => "validation",
            Phase::Connecting => "connecting",
            Phase::Waiting => "waiting",
            Phase::Loading => "loading",
            Phase::Processing => "processing",
        }
    }
}

/// One failed fetch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "camelCase")]
#[error("{message}")]
pub struct FetchError {
    pub code: ErrorCode,
    pub phase: Phase,
    pub retryable: bool,
    /// A readable sentence naming the URL.
    pub message: String,
    /// The URL that was asked for.
    pub url: String,
    /// The URL the failure happened at, when redirects led elsewhere.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub final_url: Option<String>,
    /// The HTTP status of an `http_status` failure.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub status: Option<u16>,
}

impl FetchError {
    pub fn new(
        code: ErrorCode,
        phase: Phase,
        retryable: bool,
        url: &str,
        message: impl Into<String>,
    ) -> Self {
        FetchError {
            code,
            phase,
            retryable,
            message: message.into(),
            url: url.to_owned(),
            final_url: None,
            status: None,
        }
    }

    /// Records where the failure happened when redirects led away from the asked URL.
    pub fn at(mut self, current: &str) -> Self {
        if current != self.url {
            self.final_url = Some(current.to_owned());
        }
        self
    }

    /// A non-success status: retrying helps for server errors, 408 and 429.
    pub fn http_status(url: &str, current: &str, status: u16, reason: &str) -> Self {
        let retryable = status >= 500 || status == 408 || status == 429;
        let reason = if reason.is_empty() {
            String::new()
        } else {
            format!(" {reason}")
        };
        let mut error = FetchError::new(
            ErrorCode::HttpStatus,
            Phase::Waiting,
            retryable,
            url,
            format!("{current} answered HTTP {status}{reason}"),
        )
        .at(current);
        error.status = Some(status);
        error
    }

    /// One line for the model: the message, then the code, phase and whether to retry.
    pub fn describe(&self) -> String {
        format!(
            "{} [code: {}, phase: {}, retryable: {}]",
            self.message,
            self.code.as_str(),
            self.phase.as_str(),
            if self.retryable { "yes" } else { "no" }
        )
    }

    /// As JSON (`details.error` of a tool result).
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The failed tool call: the described message, the error in `details.error`, and a card.
    pub(crate) fn into_tool_error(self) -> ToolError {
        let lines = [self.url.clone(), self.message.clone()];
        let message = format!("Fetch failed: {}", self.describe());
        let (code, error) = (self.code.as_str(), self.to_json());
        typed_tool_error(code, &lines, self.retryable, message, error)
    }
}

/// A typed failure as a failed tool call (a fetch's or a search's): `message` for the model,
/// `error` in `details.error`, and a card headed by the `code` with `lines` and whether
/// retrying may help.
pub(crate) fn typed_tool_error(
    code: &str,
    lines: &[String],
    retryable: bool,
    message: String,
    error: Value,
) -> ToolError {
    let card = lines.iter().fold(
        Card::new(format!("✗ {code}"), CardTint::Error),
        |card, line| card.line(line.clone()),
    );
    let card = card.footer(if retryable {
        "retrying may help"
    } else {
        "retrying will not help"
    });
    ToolError {
        message,
        details: card.attach(serde_json::json!({ "error": error })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_status_retries_only_what_can_change() {
        let cases = [
            (404, false),
            (403, false),
            (500, true),
            (503, true),
            (429, true),
            (408, true),
        ];
        for (status, retryable) in cases {
            let error = FetchError::http_status("http://a/", "http://a/", status, "Reason");
            assert_eq!(error.retryable, retryable, "{status}");
            assert_eq!(error.status, Some(status));
            assert_eq!(error.final_url, None);
        }
    }

    #[test]
    fn the_tool_error_is_a_sentence_with_the_typed_fields() {
        let error = FetchError::http_status("http://a/x", "http://b/y", 503, "Service Unavailable");
        let tool = error.into_tool_error();
        assert_eq!(
            tool.message,
            "Fetch failed: http://b/y answered HTTP 503 Service Unavailable \
             [code: http_status, phase: waiting, retryable: yes]"
        );
        assert!(!tool.message.contains("[object Object]"));
        let details = &tool.details["error"];
        assert_eq!(details["code"], "http_status");
        assert_eq!(details["phase"], "waiting");
        assert_eq!(details["retryable"], true);
        assert_eq!(details["status"], 503);
        assert_eq!(details["finalUrl"], "http://b/y");
        assert_eq!(tool.details["card"]["tint"], "error");
    }
}
