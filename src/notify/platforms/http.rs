//! The push services, over HTTP with the workbench's one client (rustls, the timeout of the
//! settings): each request is built by a pure function ([`ntfy_request`], [`gotify_request`],
//! [`telegram_request`]) so its exact shape is table-tested, then posted by [`post`].
//!
//! - ntfy: `POST <server>` with a JSON body `{topic, title, message, priority}` (JSON, so titles
//!   outside Latin-1 work), `Authorization: Bearer <token>` when a token is set; priority low 2,
//!   normal the file's `priority` (3), high 5.
//! - Gotify: `POST <server>/message` with `X-Gotify-Key: <app token>` and `{title, message,
//!   priority}`; priority low 2, normal the file's `priority` (5), high 8.
//! - Telegram: `POST <api>/bot<token>/sendMessage` with `{chat_id, text, parse_mode:
//!   "MarkdownV2"}`, the title in bold, both escaped as MarkdownV2 requires.
//!
//! Error texts never carry a URL (the Telegram URL holds the bot token): reqwest's errors are
//! stripped of theirs.

use serde_json::{Value, json};

use super::Notice;
use crate::notify::config::{GotifyConfig, NtfyConfig, Priority, TelegramConfig};

/// A request to send: where, its headers, its JSON body, and the service's name for errors.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    pub service: &'static str,
    pub url: String,
    pub headers: Vec<(&'static str, String)>,
    pub body: Value,
}

pub(crate) fn ntfy_request(config: &NtfyConfig, notice: &Notice) -> Request {
    let priority = match notice.priority {
        Priority::Low => 2,
        Priority::Normal => config.priority.clamp(1, 5),
        Priority::High => 5,
    };
    let mut headers = Vec::new();
    if let Some(token) = &config.token {
        headers.push(("Authorization", format!("Bearer {token}")));
    }
    Request {
        service: "ntfy",
        url: config.server_url.trim_end_matches('/').to_owned(),
        headers,
        body: json!({
            "topic": config.topic.clone().unwrap_or_default(),
            "title": notice.title,
            "message": notice.message,
            "priority": priority,
        }),
    }
}

pub(crate) fn gotify_request(config: &GotifyConfig, notice: &Notice) -> Request {
    let priority = match notice.priority {
        Priority::Low => 2,
        Priority::Normal => config.priority.clamp(1, 10),
        Priority::High => 8,
    };
    let server = config.server_url.clone().unwrap_or_default();
    Request {
        service: "Gotify",
        url: format!("{}/message", server.trim_end_matches('/')),
        headers: vec![("X-Gotify-Key", config.app_token.clone().unwrap_or_default())],
        body: json!({"title": notice.title, "message": notice.message, "priority": priority}),
    }
}

pub(crate) fn telegram_request(config: &TelegramConfig, notice: &Notice) -> Request {
    let token = config.bot_token.clone().unwrap_or_default();
    let chat_id = config.chat_id.clone().unwrap_or_default();
    // A numeric chat id goes as a number, as Telegram's own examples send it.
    let chat_id = chat_id
        .parse::<i64>()
        .map(Value::from)
        .unwrap_or(Value::String(chat_id));
    Request {
        service: "Telegram",
        url: format!(
            "{}/bot{token}/sendMessage",
            config.api_url.trim_end_matches('/')
        ),
        headers: Vec::new(),
        body: json!({
            "chat_id": chat_id,
            "text": format!("*{}*\n{}", escape_markdown_v2(&notice.title), escape_markdown_v2(&notice.message)),
            "parse_mode": "MarkdownV2",
        }),
    }
}

/// Telegram's MarkdownV2: every one of `_*[]()~`>#+-=|{}.!\` is escaped with a backslash.
pub(crate) fn escape_markdown_v2(text: &str) -> String {
    const SPECIAL: &str = "_*[]()~`>#+-=|{}.!\\";
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        if SPECIAL.contains(ch) {
            out.push('\\');
        }
        out.push(ch);
    }
    out
}

/// Posts `request`; an answer outside 2xx is `<Service> API error <status>: <body>`.
pub async fn post(client: &reqwest::Client, request: Request) -> Result<(), String> {
    let service = request.service;
    let mut builder = client.post(&request.url).json(&request.body);
    for (name, value) in &request.headers {
        builder = builder.header(*name, value);
    }
    let response = builder
        .send()
        .await
        .map_err(|err| format!("{service}: {}", err.without_url()))?;
    let status = response.status();
    if status.is_success() {
        return Ok(());
    }
    let body = response.text().await.unwrap_or_default();
    Err(format!(
        "{service} API error {}: {}",
        status.as_u16(),
        body.trim()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notice(priority: Priority) -> Notice {
        Notice::new(
            "Pi — Question Asked",
            "Agent asks: deploy v1.2 (yes/no)?",
            priority,
        )
    }

    /// The requests `request_for` builds for a Low, a Normal and a High notice, each checked to
    /// carry the service priority `want` lists for it, in that order.
    #[track_caller]
    fn requests_by_priority(
        request_for: impl Fn(&Notice) -> Request,
        want: [i64; 3],
    ) -> Vec<Request> {
        let mut requests = Vec::new();
        for (priority, want) in [Priority::Low, Priority::Normal, Priority::High]
            .into_iter()
            .zip(want)
        {
            let request = request_for(&notice(priority));
            assert_eq!(request.body["priority"], want, "{priority:?}");
            requests.push(request);
        }
        requests
    }

    #[test]
    fn ntfy_posts_json_to_the_server_root_with_the_priority_map() {
        let mut config = NtfyConfig {
            enabled: true,
            server_url: "http://127.0.0.1:8080/".into(),
            topic: Some("pi".into()),
            token: None,
            priority: 3,
        };
        for request in requests_by_priority(|notice| ntfy_request(&config, notice), [2, 3, 5]) {
            assert_eq!(request.url, "http://127.0.0.1:8080");
            assert_eq!(request.body["topic"], "pi");
            assert!(request.headers.is_empty());
        }
        config.token = Some("tk_1".into());
        config.priority = 4;
        let request = ntfy_request(&config, &notice(Priority::Normal));
        assert_eq!(
            request.headers,
            vec![("Authorization", "Bearer tk_1".to_owned())]
        );
        assert_eq!(request.body["priority"], 4, "normal follows the file");
    }

    #[test]
    fn gotify_posts_to_message_with_the_app_token() {
        let config = GotifyConfig {
            enabled: true,
            server_url: Some("http://127.0.0.1:9000/".into()),
            app_token: Some("AbC".into()),
            priority: 5,
        };
        for request in requests_by_priority(|notice| gotify_request(&config, notice), [2, 5, 8]) {
            assert_eq!(request.url, "http://127.0.0.1:9000/message");
            assert_eq!(request.headers, vec![("X-Gotify-Key", "AbC".to_owned())]);
        }
    }

    #[test]
    fn telegram_escapes_markdown_v2() {
        assert_eq!(
            escape_markdown_v2("a_b*c[d](e)~f`g>h#i+j-k=l|m{n}o.p!q\\r"),
            "a\\_b\\*c\\[d\\]\\(e\\)\\~f\\`g\\>h\\#i\\+j\\-k\\=l\\|m\\{n\\}o\\.p\\!q\\\\r"
        );
        let config = TelegramConfig {
            enabled: true,
            bot_token: Some("123:ABC".into()),
            chat_id: Some("-100".into()),
            api_url: "http://127.0.0.1:7000/".into(),
        };
        let request = telegram_request(&config, &notice(Priority::High));
        assert_eq!(request.url, "http://127.0.0.1:7000/bot123:ABC/sendMessage");
        assert_eq!(
            request.body,
            json!({"chat_id": -100,
                   "text": "*Pi — Question Asked*\nAgent asks: deploy v1\\.2 \\(yes/no\\)?",
                   "parse_mode": "MarkdownV2"})
        );
    }
}
