//! `web_search` as the model calls it, through the web module: the numbered list from the
//! default provider, fallback from a failing one and what it says, the error when none can run,
//! and the cache (each provider's own request and answer are `search/tests.rs`'s).

use std::path::Path;

use serde_json::{Value, json};

use crate::bridge::{AgentId, CancelToken, ContentBlock, Module, ToolCall, ToolOutput};
use crate::config::module_file::ModuleConfig as _;
use crate::web::config::WebConfig;
use crate::web::module::WebModule;
use crate::web::search::tests::stand_in;

fn module(config: &str) -> WebModule {
    let (config, errors) = WebConfig::from_sources(&[(Path::new("/w/web.json"), config)]);
    assert!(errors.is_empty(), "{errors:?}");
    WebModule::new(config, None)
}

async fn search(module: &WebModule, args: Value) -> Result<ToolOutput, crate::bridge::ToolError> {
    module
        .call_tool(ToolCall {
            agent: AgentId::main(),
            tool: "web_search".to_owned(),
            call_id: "call-1".to_owned(),
            args,
            updates: crate::bridge::UpdateSender::detached(),
            cancel: CancelToken::never(),
        })
        .await
}

fn text(output: &ToolOutput) -> String {
    output
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text { text } => text.clone(),
            other => panic!("unexpected block {other:?}"),
        })
        .collect()
}

fn searxng_answer() -> String {
    json!({"query": "q", "results": [
        {"url": "https://tokio.rs/", "title": "Tokio", "content": "An async runtime."},
        {"url": "https://tokio.rs/#top", "title": "Tokio again", "content": "The same page."},
        {"url": "https://docs.rs/futures", "title": "futures", "content": "Zero-cost futures."}
    ]})
    .to_string()
}

#[tokio::test]
async fn the_model_reads_a_ranked_deduplicated_list_from_the_default_provider() {
    let (searxng, seen) = stand_in(200, "application/json", searxng_answer()).await;
    let module = module(&format!(
        r#"{{"search": {{"default": "searxng", "providers": {{"searxng": {{"url": "{searxng}"}}}}}}}}"#
    ));
    let output = search(&module, json!({"query": "rust async", "count": 5}))
        .await
        .unwrap();
    assert_eq!(
        text(&output),
        "Search results for \"rust async\" (searxng, 2 results)\n\n\
         1. Tokio\n   https://tokio.rs/\n   An async runtime.\n\n\
         2. futures\n   https://docs.rs/futures\n   Zero-cost futures."
    );
    assert_eq!(output.details["provider"], "searxng");
    assert_eq!(
        output.details["results"][1]["url"],
        "https://docs.rs/futures"
    );
    assert_eq!(seen.lock().unwrap().len(), 1);

    let refused = search(&module, json!({"query": "q", "count": 50}))
        .await
        .unwrap_err();
    assert!(
        refused
            .message
            .starts_with("`count` must be an integer from 1 to 20")
    );
    let refused = search(&module, json!({"query": "q", "provider": "altavista"}))
        .await
        .unwrap_err();
    assert!(
        refused
            .message
            .starts_with("`provider` must be one of duckduckgo, searxng")
    );
}

#[tokio::test]
async fn a_failing_provider_falls_back_to_the_next_configured_one_and_says_so() {
    let (brave, brave_seen) = stand_in(401, "application/json", "{}".to_owned()).await;
    let (searxng, _) = stand_in(200, "application/json", searxng_answer()).await;
    let module = module(&format!(
        r#"{{"search": {{"default": "brave", "providers": {{
            "brave": {{"url": "{brave}/res/v1/web/search", "apiKey": "BSA-secret-key"}},
            "duckduckgo": {{"enabled": false}},
            "searxng": {{"url": "{searxng}"}}}}}}}}"#
    ));
    let output = search(&module, json!({"query": "rust async", "count": 1}))
        .await
        .unwrap();
    let shown = text(&output);
    assert!(
        shown.starts_with(
            "Search results for \"rust async\" (searxng, 1 results)\nFell back to searxng: \
             brave answered HTTP 401: it refused the API key"
        ),
        "{shown}"
    );
    assert!(!shown.contains("BSA-secret-key"));
    assert_eq!(brave_seen.lock().unwrap().len(), 1);
    assert_eq!(output.details["fellBack"].as_array().unwrap().len(), 1);

    // The provider asked for cannot run: said, and the others answer.
    let output = search(&module, json!({"query": "q", "provider": "jina"}))
        .await
        .unwrap();
    assert!(
        text(&output).contains("Fell back to searxng: jina needs an API key"),
        "{}",
        text(&output)
    );

    // Every one fails: the error names each, typed as the last.
    let only_brave = self::module(&format!(
        r#"{{"search": {{"providers": {{
            "brave": {{"url": "{brave}", "apiKey": "BSA-secret-key"}},
            "duckduckgo": {{"enabled": false}}}}}}}}"#
    ));
    let failed = search(&only_brave, json!({"query": "q"}))
        .await
        .unwrap_err();
    assert!(
        failed
            .message
            .starts_with("Search failed: every search provider failed: duckduckgo is switched off"),
        "{}",
        failed.message
    );
    assert_eq!(failed.details["error"]["code"], "unauthorized");
    assert_eq!(failed.details["error"]["provider"], "brave");
}

#[tokio::test]
async fn with_no_provider_able_to_run_the_error_says_how_to_configure_one() {
    let module = module(r#"{"search": {"providers": {"duckduckgo": {"enabled": false}}}}"#);
    let failed = search(&module, json!({"query": "q"})).await.unwrap_err();
    assert!(
        failed
            .message
            .starts_with("Search failed: no search provider can run: duckduckgo is switched off"),
        "{}",
        failed.message
    );
    assert!(
        failed
            .message
            .contains("configure another under \"search\" in .unipi/config/web.json")
    );
    assert_eq!(failed.details["error"]["code"], "not_configured");
    assert_eq!(failed.details["error"]["retryable"], false);
}

#[tokio::test]
async fn results_are_cached_like_pages_and_cleared_with_them() {
    let (searxng, seen) = stand_in(200, "application/json", searxng_answer()).await;
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"{{"search": {{"default": "searxng", "providers": {{"searxng": {{"url": "{searxng}"}}}}}}}}"#
    );
    let (config, _) = WebConfig::from_sources(&[(Path::new("/w/web.json"), text.as_str())]);
    let module = WebModule::new(config, Some(dir.path().to_path_buf()));
    let first = search(&module, json!({"query": "rust async"}))
        .await
        .unwrap();
    let again = search(&module, json!({"query": "rust async"}))
        .await
        .unwrap();
    assert_eq!(
        seen.lock().unwrap().len(),
        1,
        "the second came from the cache"
    );
    assert_eq!(
        (
            first.details["cached"].clone(),
            again.details["cached"].clone()
        ),
        (json!(false), json!(true))
    );
    assert_eq!(first.details["results"], again.details["results"]);
    // Another count is another search.
    search(&module, json!({"query": "rust async", "count": 1}))
        .await
        .unwrap();
    assert_eq!(seen.lock().unwrap().len(), 2);

    // The dashboard's tab counts what is on disk, without removing it.
    let tab = module.info_group().await;
    assert_eq!(tab.id, "web");
    assert!(tab.rows[0].value.starts_with("2 entries · "), "{tab:?}");
    assert_eq!(tab.rows[0].detail[0], "kept 3600 s");
    assert_eq!(module.info_group().await.rows[0].value, tab.rows[0].value);

    let reply = module.clear_cache().await;
    assert!(
        matches!(&reply, crate::bridge::CommandReply::Notify { message, .. }
            if message.starts_with("Web cache cleared: 2 entries removed")),
        "{reply:?}"
    );
    search(&module, json!({"query": "rust async"}))
        .await
        .unwrap();
    assert_eq!(seen.lock().unwrap().len(), 3);
}
