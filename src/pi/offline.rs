//! A sealed Pi agent directory that points Pi at the scripted model server: `models.json` adds
//! a provider `unipi-scripted` on the loopback base URL, and `settings.json` makes a first start
//! quiet and deterministic (no update check, telemetry, changelog, retries, terminal-dependent
//! theme or project-trust prompt). Pi is pointed at the directory with `PI_CODING_AGENT_DIR`, so
//! the user's `~/.pi` is never read or written. Both Pi lines are served: the keys used here
//! exist in 1.x (`@earendil-works`) and 0.7x (`@mariozechner`); keys a line does not know it
//! ignores.
//!
//! Used by `unipi-tui demo` and by every end-to-end test.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use serde_json::{Value, json};

use crate::scripted::{Price, ServedModel};

/// The provider id under which the scripted models appear in Pi (`unipi-scripted/<model>`).
pub const PROVIDER_ID: &str = "unipi-scripted";

/// What launching Pi against the sealed directory needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OfflineAgent {
    /// The agent directory written.
    pub dir: PathBuf,
    /// Environment for the Pi process (on top of the inherited one).
    pub env: Vec<(String, String)>,
    /// Arguments selecting the scripted model; put them before the user's own arguments.
    pub pi_args: Vec<String>,
}

/// Writes `models.json` and `settings.json` into `dir` (created if missing; existing files are
/// replaced atomically) for a scripted server at `base_url` serving `model_ids`, each at the
/// nominal price. The first id is the one Pi starts with.
pub fn write_agent_dir(
    dir: &Path,
    base_url: &str,
    model_ids: &[String],
) -> anyhow::Result<OfflineAgent> {
    let models: Vec<ServedModel> = model_ids
        .iter()
        .map(|id| ServedModel {
            id: id.clone(),
            price: None,
        })
        .collect();
    write_priced_agent_dir(dir, base_url, &models)
}

/// [`write_agent_dir`] with the price each served model has in its scenario (a model without
/// one gets the nominal price), so Pi's cost figures tell a dear model from a cheap one.
pub fn write_priced_agent_dir(
    dir: &Path,
    base_url: &str,
    models: &[ServedModel],
) -> anyhow::Result<OfflineAgent> {
    let model_ids: Vec<String> = models.iter().map(|model| model.id.clone()).collect();
    let Some(first_model) = model_ids.first() else {
        bail!(
            "the scripted server serves no model ids; cannot write an offline Pi agent directory"
        );
    };
    if !is_loopback_url(base_url) {
        bail!("the scripted model base URL must be plain http on loopback, got {base_url:?}");
    }
    std::fs::create_dir_all(dir).with_context(|| {
        format!(
            "cannot create the offline Pi agent directory {}",
            dir.display()
        )
    })?;
    write_json_atomic(&dir.join("models.json"), &models_json(base_url, models))?;
    write_json_atomic(&dir.join("settings.json"), &settings_json(&model_ids))?;

    let dir_text = dir.display().to_string();
    let env = [
        ("PI_CODING_AGENT_DIR", dir_text.clone()),
        // The inherited environment may name the user's session directory; keep sessions inside.
        (
            "PI_CODING_AGENT_SESSION_DIR",
            dir.join("sessions").display().to_string(),
        ),
        // No update check, package check, catalog refresh or install ping: nothing leaves the
        // host.
        ("PI_OFFLINE", "1".to_string()),
        ("PI_SKIP_VERSION_CHECK", "1".to_string()),
        ("PI_TELEMETRY", "0".to_string()),
        // A user's HTTP(S)_PROXY must not capture the loopback requests.
        ("NO_PROXY", LOOPBACK_HOSTS.to_string()),
        ("no_proxy", LOOPBACK_HOSTS.to_string()),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_string(), value))
    .collect();
    let pi_args = vec![
        "--offline".to_string(),
        "--model".to_string(),
        format!("{PROVIDER_ID}/{first_model}"),
    ];
    Ok(OfflineAgent {
        dir: dir.to_path_buf(),
        env,
        pi_args,
    })
}

// --- file contents -------------------------------------------------------------------------

const LOOPBACK_HOSTS: &str = "127.0.0.1,localhost,::1";

/// The scripted server checks no key, but Pi lists a provider only when it has one. A literal
/// without `$` or `!` reads as itself in both Pi lines (0.7x first looks for an environment
/// variable of that name, which does not exist).
const API_KEY: &str = "unipi-scripted-no-key";

/// The price of a scripted model without one of its own (per million tokens), so the footer's
/// cost figures show something; nothing is charged by a scripted model.
const NOMINAL_PRICE: Price = Price {
    input: 3.0,
    output: 15.0,
    cache_read: 0.3,
    cache_write: 3.75,
};

fn models_json(base_url: &str, served: &[ServedModel]) -> Value {
    let models: Vec<Value> = served
        .iter()
        .map(|model| {
            let id = &model.id;
            let price = model.price.unwrap_or(NOMINAL_PRICE);
            json!({
                "id": id,
                "name": format!("{id} (scripted)"),
                "reasoning": false,
                "input": ["text"],
                "contextWindow": 128_000,
                "maxTokens": 16_384,
                "cost": {"input": price.input, "output": price.output,
                         "cacheRead": price.cache_read, "cacheWrite": price.cache_write},
            })
        })
        .collect();
    json!({
        "providers": {
            PROVIDER_ID: {
                "name": "unipi-tui scripted model",
                "baseUrl": base_url,
                "api": "openai-completions",
                "apiKey": API_KEY,
                "compat": {
                    // The server answers `system` messages and has no reasoning knobs; saying so
                    // keeps the request shape the same whatever URL heuristics a Pi version has.
                    "supportsDeveloperRole": false,
                    "supportsReasoningEffort": false,
                    "supportsStore": false,
                    "supportsUsageInStreaming": true,
                },
                "models": models,
            }
        }
    })
}

fn settings_json(model_ids: &[String]) -> Value {
    let first_model = model_ids.first().map(String::as_str).unwrap_or_default();
    let enabled: Vec<String> = model_ids
        .iter()
        .map(|id| format!("{PROVIDER_ID}/{id}"))
        .collect();
    json!({
        "defaultProvider": PROVIDER_ID,
        "defaultModel": first_model,
        "enabledModels": enabled,
        "defaultThinkingLevel": "off",
        // A fixed theme: the default `system` theme depends on the terminal's reported colours.
        "theme": "dark",
        "quietStartup": true,
        "collapseChangelog": true,
        "enableInstallTelemetry": false,
        "enableAnalytics": false,
        // The sealed directory must not pull in a project's `.pi` settings or ask about them.
        "defaultProjectTrust": "never",
        // Cache warming would send unscripted requests between turns.
        "cacheWarming": "off",
        // A scripted failure should fail once, visibly, not be retried behind the scenes.
        "retry": {"enabled": false, "provider": {"maxRetries": 0}},
    })
}

fn is_loopback_url(url: &str) -> bool {
    let Some(rest) = url.strip_prefix("http://") else {
        return false;
    };
    let host_port = rest.split('/').next().unwrap_or_default();
    let host = match host_port.strip_prefix('[') {
        Some(bracketed) => bracketed.split(']').next().unwrap_or_default(),
        None => host_port.split(':').next().unwrap_or_default(),
    };
    matches!(host, "localhost" | "::1")
        || host
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Writes `value` as pretty JSON, crash-safely ([`crate::sys::write_atomic`]): a crash leaves
/// the old file or the new one, never half of one.
pub(crate) fn write_json_atomic(path: &Path, value: &Value) -> anyhow::Result<()> {
    let mut text = serde_json::to_string_pretty(value).context("cannot encode JSON")?;
    text.push('\n');
    crate::sys::write_atomic(path, text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_table::check_table;

    fn read_json(path: &Path) -> anyhow::Result<Value> {
        let text = std::fs::read_to_string(path).with_context(|| path.display().to_string())?;
        Ok(serde_json::from_str(&text)?)
    }

    #[test]
    fn writes_provider_settings_env_and_args() -> anyhow::Result<()> {
        let temp = tempfile::tempdir()?;
        let dir = temp.path().join("agent");
        let ids = vec!["scripted-demo".to_string(), "second".to_string()];
        let agent = write_agent_dir(&dir, "http://127.0.0.1:4321/v1", &ids)?;

        let models = read_json(&dir.join("models.json"))?;
        let provider = &models["providers"]["unipi-scripted"];
        assert_eq!(provider["baseUrl"], "http://127.0.0.1:4321/v1");
        assert_eq!(provider["api"], "openai-completions");
        assert_eq!(provider["compat"]["supportsDeveloperRole"], false);
        assert_eq!(provider["compat"]["supportsReasoningEffort"], false);
        assert_eq!(provider["models"][1]["id"], "second");
        assert_eq!(provider["models"][0]["cost"]["output"], 15.0);

        let settings = read_json(&dir.join("settings.json"))?;
        assert_eq!(settings["defaultProvider"], "unipi-scripted");
        assert_eq!(settings["defaultModel"], "scripted-demo");
        assert_eq!(settings["quietStartup"], true);

        let env_value = |key: &str| {
            agent
                .env
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(
            env_value("PI_CODING_AGENT_DIR"),
            Some(dir.display().to_string())
        );
        assert_eq!(env_value("PI_OFFLINE").as_deref(), Some("1"));
        assert_eq!(
            agent.pi_args,
            ["--offline", "--model", "unipi-scripted/scripted-demo"]
        );

        // No temporary files are left behind.
        let mut names: Vec<String> = std::fs::read_dir(&dir)?
            .map(|entry| entry.map(|entry| entry.file_name().to_string_lossy().into_owned()))
            .collect::<Result<_, _>>()?;
        names.sort();
        assert_eq!(names, ["models.json", "settings.json"]);
        Ok(())
    }

    #[test]
    fn each_served_model_gets_its_own_price() -> anyhow::Result<()> {
        let temp = tempfile::tempdir()?;
        let models = [
            ServedModel {
                id: "dear".into(),
                price: Some(Price {
                    input: 15.0,
                    output: 75.0,
                    cache_read: 1.5,
                    cache_write: 18.75,
                }),
            },
            ServedModel {
                id: "plain".into(),
                price: None,
            },
        ];
        write_priced_agent_dir(temp.path(), "http://127.0.0.1:1/v1", &models)?;
        let written = read_json(&temp.path().join("models.json"))?;
        let listed = &written["providers"]["unipi-scripted"]["models"];
        assert_eq!(
            listed[0]["cost"],
            json!({"input": 15.0, "output": 75.0, "cacheRead": 1.5, "cacheWrite": 18.75})
        );
        assert_eq!(
            listed[1]["cost"],
            json!({"input": 3.0, "output": 15.0, "cacheRead": 0.3, "cacheWrite": 3.75})
        );
        Ok(())
    }

    #[test]
    fn rewriting_replaces_the_files() -> anyhow::Result<()> {
        let temp = tempfile::tempdir()?;
        let ids = vec!["m".to_string()];
        write_agent_dir(temp.path(), "http://127.0.0.1:1/v1", &ids)?;
        write_agent_dir(temp.path(), "http://localhost:2/v1", &ids)?;
        let models = read_json(&temp.path().join("models.json"))?;
        assert_eq!(
            models["providers"]["unipi-scripted"]["baseUrl"],
            "http://localhost:2/v1"
        );
        Ok(())
    }

    #[test]
    fn refuses_no_models_and_non_loopback_urls() -> anyhow::Result<()> {
        let temp = tempfile::tempdir()?;
        let ids = vec!["m".to_string()];
        // (base url, model ids, expected fragment of the error)
        let cases: &[(&str, &[String], &str)] = &[
            ("http://127.0.0.1:1/v1", &[], "no model ids"),
            ("https://api.openai.com/v1", &ids, "loopback"),
            ("http://10.0.0.1:8080/v1", &ids, "loopback"),
            ("http://127.0.0.1.example.com/v1", &ids, "loopback"),
        ];
        for (url, model_ids, fragment) in cases {
            let err = write_agent_dir(temp.path(), url, model_ids)
                .map(|_| ())
                .err();
            let err = err.map(|err| err.to_string()).unwrap_or_default();
            assert!(err.contains(fragment), "{url}: {err:?} lacks {fragment:?}");
        }
        Ok(())
    }

    #[test]
    fn loopback_urls() {
        let cases = [
            ("http://127.0.0.1:8080/v1", true),
            ("http://127.1.2.3/v1", true),
            ("http://localhost:1/v1", true),
            ("http://[::1]:1/v1", true),
            ("http://192.168.1.1:1/v1", false),
            ("https://127.0.0.1/v1", false),
            ("127.0.0.1:1", false),
        ];
        check_table(cases, |url| is_loopback_url(url));
    }
}
