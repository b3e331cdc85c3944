//! Typed search failures, in the shape of the fetch's
//! ([`FetchError`](crate::web::error::FetchError)): what went wrong (`code`), which provider
//! (`provider`), whether trying again could help (`retryable`), and a sentence. A key never appears
//! in one: the provider's URL is left out of network errors, since a provider may carry its key in
//! the query (SerpAPI's `api_key`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::bridge::ToolError;
use crate::web::error::typed_tool_error;

/// What went wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum SearchErrorCode {
    /// No provider can run: none configured, or the one asked for lacks its key or URL.
    NotConfigured,
    /// A provider name that is not one of the providers.
    UnknownProvider,
    /// The provider refused the key (401, 403).
    Unauthorized,
    /// The provider's rate limit or quota (429).
    RateLimited,
    /// The provider failed (5xx).
    ServerError,
    /// Another non-success status.
    HttpStatus,
    Timeout,
    /// The connection failed or broke off.
    NetworkError,
    /// The answer is not in the provider's documented shape.
    BadResponse,
}

impl SearchErrorCode {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SearchErrorCode::NotConfigured => "not_configured",
            SearchErrorCode::UnknownProvider => "unknown_provider",
            SearchErrorCode::Unauthorized => "unauthorized",
            SearchErrorCode::RateLimited => "rate_limited",
            SearchErrorCode::ServerError => "server_error",
            SearchErrorCode::HttpStatus => "http_status",
            SearchErrorCode::Timeout => "timeout",
            SearchErrorCode::NetworkError => "network_error",
            SearchErrorCode::BadResponse => "bad_response",
        }
    }
}

/// One failed search (of one provider, or of all of them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "camelCase")]
#[error("{message}")]
pub(crate) struct SearchError {
    pub code: SearchErrorCode,
    /// The provider that failed (none for a failure before any provider ran).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub provider: Option<String>,
    pub retryable: bool,
    /// A readable sentence naming the provider.
    pub message: String,
    /// The HTTP status of a status failure.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub status: Option<u16>,
}

impl SearchError {
    pub(crate) fn new(
        code: SearchErrorCode,
        provider: Option<&str>,
        retryable: bool,
        message: impl Into<String>,
    ) -> Self {
        SearchError {
            code,
            provider: provider.map(str::to_owned),
            retryable,
            message: message.into(),
            status: None,
        }
    }

    /// A non-success status from `provider`: a refused key and a rate limit say what to do.
    pub(crate) fn http_status(provider: &str, status: u16) -> Self {
        let (code, retryable, what) = match status {
            401 | 403 => (
                SearchErrorCode::Unauthorized,
                false,
                "refused the API key; check its apiKey in web.json or its environment variable",
            ),
            429 => (
                SearchErrorCode::RateLimited,
                true,
                "is rate limited or out of quota; try again later",
            ),
            500..=599 => (
                SearchErrorCode::ServerError,
                true,
                "failed on its side; try again later",
            ),
            408 => (SearchErrorCode::HttpStatus, true, "timed out on its side"),
            _ => (SearchErrorCode::HttpStatus, false, "did not search"),
        };
        let mut error = SearchError::new(
            code,
            Some(provider),
            retryable,
            format!("{provider} answered HTTP {status}: it {what}"),
        );
        error.status = Some(status);
        error
    }

    /// One line for the model: the message, then the code and whether to retry.
    pub(crate) fn describe(&self) -> String {
        format!(
            "{} [code: {}, retryable: {}]",
            self.message,
            self.code.as_str(),
            if self.retryable { "yes" } else { "no" }
        )
    }

    /// As JSON (`details.error` of a tool result).
    pub(crate) fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The failed tool call: the described message, the error in `details.error`, and a card.
    pub(crate) fn into_tool_error(self) -> ToolError {
        let message = format!("Search failed: {}", self.describe());
        let lines = [self.message.clone()];
        let (code, error) = (self.code.as_str(), self.to_json());
        typed_tool_error(code, &lines, self.retryable, message, error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_say_which_provider_and_whether_to_retry() {
        let cases = [
            (401, SearchErrorCode::Unauthorized, false),
            (403, SearchErrorCode::Unauthorized, false),
            (429, SearchErrorCode::RateLimited, true),
            (500, SearchErrorCode::ServerError, true),
            (503, SearchErrorCode::ServerError, true),
            (404, SearchErrorCode::HttpStatus, false),
        ];
        for (status, code, retryable) in cases {
            let error = SearchError::http_status("brave", status);
            assert_eq!(
                (error.code, error.retryable, error.status),
                (code, retryable, Some(status)),
                "{status}"
            );
            assert!(
                error
                    .message
                    .starts_with(&format!("brave answered HTTP {status}")),
                "{}",
                error.message
            );
        }
        let tool = SearchError::http_status("tavily", 429).into_tool_error();
        assert_eq!(
            tool.message,
            "Search failed: tavily answered HTTP 429: it is rate limited or out of quota; try \
             again later [code: rate_limited, retryable: yes]"
        );
        assert_eq!(tool.details["error"]["provider"], "tavily");
        assert_eq!(tool.details["error"]["code"], "rate_limited");
    }
}
