//! `unipi-tui migrate` in a temporary HOME and a separate project (not under HOME), laid out as
//! a Unipi user's: the dry run writes nothing and names every change, `--apply` writes what the
//! workbench then reads the same way, ours wins where both are set, a second run has nothing
//! left to do.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use serde_json::{Value, json};

use super::run;
use crate::config::module_file::ModuleConfig;

struct Setup {
    _base: tempfile::TempDir,
    home: std::path::PathBuf,
    project: std::path::PathBuf,
}

fn write(path: &Path, value: &Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_string_pretty(value).unwrap()).unwrap();
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Every Unipi file this migration covers, with real values, plus one file of ours.
fn unipi_setup() -> Setup {
    let base = tempfile::tempdir().unwrap();
    let (home, project) = (base.path().join("home"), base.path().join("work/project"));
    std::fs::create_dir_all(&project).unwrap();
    write(
        &home.join(".unipi/config/mcp/mcp-config.json"),
        &json!({"mcpServers": {
            "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv"]},
            "gh": {"command": "gh-mcp", "args": [], "env": {"GITHUB_TOKEN": "ghp_secret"}},
            "old": {"command": "old-mcp", "args": []},
        }}),
    );
    write(
        &home.join(".unipi/config/mcp/config.json"),
        &json!({"servers": {"old": {"enabled": false, "addedAt": "2026-01-02T03:04:05Z"}},
                "sync": {"enabled": true, "lastSyncAt": null, "syncIntervalMs": 86_400_000}}),
    );
    // Ours already has `fs`, differently: it wins.
    write(
        &home.join(".unipi/config/mcp.json"),
        &json!({"mcpServers": {"fs": {"command": "fs-mine"}}}),
    );
    write(
        &project.join(".unipi/config/mcp/mcp-config.json"),
        &json!({"mcpServers": {"db": {"command": "db-mcp", "args": ["--ro"]}}}),
    );
    write(
        &project.join(".unipi/config/mcp/config.json"),
        &json!({"servers": {"gh": {"enabled": false}, "ghost": {"enabled": false}}}),
    );
    write(
        &home.join(".pi/agent/settings.json"),
        &json!({"defaultModel": "claude", "unipi": {
            "askUser": {"enabled": true, "allowedFormats": {"multiSelect": false}, "notifyOnAsk": false},
            "footer": {"enabled": true, "preset": "minimal", "separator": "slash",
                       "groups": {"core": {"segments": {"clock": false}}}},
            "info": {"showOnBoot": false},
        }}),
    );
    write(
        &home.join(".unipi/config/compactor/config.json"),
        &json!({"overrideDefaultCompaction": false, "sessionGoals": {"enabled": true, "mode": "full"},
                "autoCompaction": {"enabled": true, "cooldownMs": 90_500}}),
    );
    write(
        &project.join(".unipi/config/compactor.json"),
        &json!({"autoCompaction": {"cooldownMs": 30_000}}),
    );
    write(
        &home.join(".unipi/config/subagents.json"),
        &json!({"maxConcurrent": 4, "enabled": true, "types": {"work": {"enabled": false}}}),
    );
    Setup {
        _base: base,
        home,
        project,
    }
}

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut files: Vec<_> = walk(dir)
        .into_iter()
        .map(|path| {
            let bytes = std::fs::read(&path).unwrap();
            (path, bytes)
        })
        .collect();
    files.sort();
    files
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path);
        }
    }
    found
}

#[test]
fn a_dry_run_names_every_change_and_writes_nothing() {
    let setup = unipi_setup();
    assert!(!setup.project.starts_with(&setup.home));
    let before = (snapshot(&setup.home), snapshot(&setup.project));
    let (report, ok) = run(Some(&setup.home), &setup.project, false);
    assert!(ok, "{report}");
    assert_eq!(
        (snapshot(&setup.home), snapshot(&setup.project)),
        before,
        "a dry run writes nothing"
    );
    let project = setup.project.display().to_string();
    let expected = format!(
        "unipi-tui migrate: dry run, nothing is written (`unipi-tui migrate --apply` writes)

~/.unipi/config/mcp/mcp-config.json → ~/.unipi/config/mcp.json
  mcpServers.fs → mcpServers.fs: kept ours ({{\"command\":\"fs-mine\"}})
  mcpServers.gh → mcpServers.gh
  mcpServers.old → mcpServers.old

~/.unipi/config/mcp/config.json → ~/.unipi/config/mcp.json
  servers.old.enabled → mcpServers.old.enabled

{project}/.unipi/config/mcp/mcp-config.json → {project}/.unipi/config/mcp.json
  mcpServers.db → mcpServers.db

{project}/.unipi/config/mcp/config.json → {project}/.unipi/config/mcp.json
  servers.gh.enabled → mcpServers.gh.enabled

{project}/.unipi/config/compactor.json → {project}/.unipi/config/compactor.json
  autoCompaction.cooldownMs → autoCompaction.cooldownSeconds

~/.unipi/config/compactor/config.json → ~/.unipi/config/compactor.json
  autoCompaction.cooldownMs → autoCompaction.cooldownSeconds
  autoCompaction.enabled → autoCompaction.enabled
  overrideDefaultCompaction → overrideDefaultCompaction

~/.pi/agent/settings.json → ~/.unipi/config/ask-user.json
  unipi.askUser.allowedFormats.multiSelect → allowedFormats.multiSelect
  unipi.askUser.enabled → enabled
  unipi.askUser.notifyOnAsk → notifyOnAsk

~/.pi/agent/settings.json → ~/.unipi/config/footer.json
  unipi.footer.enabled → enabled
  unipi.footer.groups.core.segments.clock → groups.core.segments.clock
  unipi.footer.preset → preset
  unipi.footer.separator → separator

Left alone:
  ~/.unipi/config/mcp/config.json servers.old.addedAt: Unipi's bookkeeping
  ~/.unipi/config/mcp/config.json sync: Unipi's catalog sync; unipi-tui has no catalog
  {project}/.unipi/config/mcp/config.json servers.ghost.enabled: no such server (Unipi passed it over too)
  ~/.unipi/config/compactor/config.json sessionGoals: accepted and ignored by unipi-tui (strategies, presets, sandbox)
  ~/.pi/agent/settings.json unipi.info: the dashboard's groups differ: set info.json with /unipi:info-settings
  ~/.unipi/config/subagents.json: read as it is (`enabled` and `types.<name>.enabled` are honoured)

Unipi's files are read where they are either way; none is changed.
"
    );
    assert_eq!(report, expected, "{report}");
}

#[test]
fn apply_writes_our_files_the_workbench_reads_the_same_and_a_second_run_has_nothing_to_do() {
    let setup = unipi_setup();
    let (home, project) = (&setup.home, &setup.project);
    let unipi_files: Vec<_> = [
        home.join(".unipi/config/mcp/mcp-config.json"),
        home.join(".unipi/config/mcp/config.json"),
        home.join(".pi/agent/settings.json"),
        home.join(".unipi/config/compactor/config.json"),
        project.join(".unipi/config/mcp/mcp-config.json"),
    ]
    .into_iter()
    .map(|path| {
        let bytes = std::fs::read(&path).unwrap();
        (path, bytes)
    })
    .collect();
    let mcp_before =
        crate::mcp::config::load_with_agent_dir(Some(home), Some(&home.join(".pi/agent")), project);
    std::fs::set_permissions(
        home.join(".unipi/config/mcp.json"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();

    let (report, ok) = run(Some(home), project, true);
    assert!(ok, "{report}");
    assert!(
        report.contains("wrote ~/.unipi/config/mcp.json\n"),
        "{report}"
    );
    for (path, bytes) in &unipi_files {
        assert_eq!(
            &std::fs::read(path).unwrap(),
            bytes,
            "{} unchanged",
            path.display()
        );
    }

    // Ours won; Unipi's servers and switches moved.
    let home_mcp = home.join(".unipi/config/mcp.json");
    assert_eq!(
        read(&home_mcp),
        json!({"mcpServers": {
            "fs": {"command": "fs-mine"},
            "gh": {"command": "gh-mcp", "args": [], "env": {"GITHUB_TOKEN": "ghp_secret"}},
            "old": {"command": "old-mcp", "args": [], "enabled": false},
        }})
    );
    assert_eq!(
        read(&project.join(".unipi/config/mcp.json")),
        json!({"mcpServers": {"db": {"command": "db-mcp", "args": ["--ro"]}, "gh": {"enabled": false}}})
    );
    for file in [&home_mcp, &project.join(".unipi/config/mcp.json")] {
        let mode = std::fs::metadata(file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{} holds secrets", file.display());
    }
    assert_eq!(
        read(&project.join(".unipi/config/compactor.json")),
        json!({"autoCompaction": {"cooldownSeconds": 30}})
    );
    assert_eq!(
        read(&home.join(".unipi/config/compactor.json")),
        json!({"overrideDefaultCompaction": false,
               "autoCompaction": {"enabled": true, "cooldownSeconds": 91}})
    );

    // The workbench reads the same servers after as before (the notices aside: the copies are
    // the same servers, so none but `fs`'s, which was ours before too).
    let mcp_after =
        crate::mcp::config::load_with_agent_dir(Some(home), Some(&home.join(".pi/agent")), project);
    let summary = |config: &crate::mcp::config::McpConfig| -> Vec<(String, String, bool)> {
        config
            .servers
            .iter()
            .map(|s| (s.name.clone(), s.target(), s.enabled))
            .collect()
    };
    assert_eq!(mcp_after.errors, []);
    assert_eq!(summary(&mcp_after), summary(&mcp_before));
    assert_eq!(mcp_after.notices, mcp_before.notices);
    let (ask, errors) = crate::askuser::config::AskUserConfig::load(Some(home), project);
    assert_eq!(errors, []);
    assert!(ask.enabled && !ask.multi_select && !ask.notify_on_ask);
    assert_eq!(
        read(&home.join(".unipi/config/footer.json")),
        json!({"enabled": true, "preset": "minimal", "separator": "slash",
               "groups": {"core": {"segments": {"clock": false}}}})
    );

    // Nothing left to do: a second run writes nothing and says every key is there.
    let before = (snapshot(home), snapshot(project));
    let (again, ok) = run(Some(home), project, true);
    assert!(ok, "{again}");
    assert!(!again.contains("wrote "), "{again}");
    assert!(!again.contains(" → mcpServers.gh\n"), "{again}");
    assert!(
        again.contains("mcpServers.gh → mcpServers.gh: already there"),
        "{again}"
    );
    assert_eq!((snapshot(home), snapshot(project)), before);
}

/// A Unipi file that is not JSON is named at its place and skipped; a file of ours that is not
/// a JSON object is not touched; the run fails so a script notices.
#[test]
fn broken_files_are_named_and_ours_is_never_overwritten() {
    let setup = unipi_setup();
    let (home, project) = (&setup.home, &setup.project);
    let broken = home.join(".unipi/config/mcp/mcp-config.json");
    std::fs::write(&broken, "{\n  \"mcpServers\": {,\n}").unwrap();
    let ours = project.join(".unipi/config/mcp.json");
    std::fs::write(&ours, "[\"not an object\"]").unwrap();
    let (report, ok) = run(Some(home), project, true);
    assert!(!ok, "{report}");
    assert!(
        report.contains(&format!("  {}:2:18: invalid JSON", broken.display())),
        "{report}"
    );
    assert!(
        report.contains(&format!(
            "  {}: expected a JSON object; not overwriting it",
            ours.display()
        )),
        "{report}"
    );
    assert!(
        report.contains(
            "  mcpServers.db → mcpServers.db: not written (our file is not a JSON object)"
        ),
        "{report}"
    );
    assert_eq!(
        std::fs::read_to_string(&ours).unwrap(),
        "[\"not an object\"]"
    );
    // The rest still moved.
    assert!(
        report.contains("wrote ~/.unipi/config/ask-user.json"),
        "{report}"
    );
    let _ = crate::config::footer::FooterConfig::load(Some(home), project);
}

#[test]
fn nothing_to_migrate() {
    let base = tempfile::tempdir().unwrap();
    let (home, project) = (base.path().join("h"), base.path().join("p"));
    std::fs::create_dir_all(&project).unwrap();
    let (report, ok) = run(Some(&home), &project, false);
    assert!(ok);
    assert!(
        report.ends_with("No Unipi config files found: nothing to migrate.\n"),
        "{report}"
    );
}

/// Unipi's `web-api/config.json` and `auth.json` move into `web.json` (0600: it holds the keys),
/// and the web settings read the same after as before.
#[test]
fn web_api_files_move_into_web_json() {
    let base = tempfile::tempdir().unwrap();
    let (home, project) = (base.path().join("home"), base.path().join("p"));
    std::fs::create_dir_all(&project).unwrap();
    write(
        &home.join(".unipi/config/web-api/config.json"),
        &json!({"smartFetch": {"maxChars": 20_000, "timeoutMs": 8_000, "removeImages": true,
                               "browser": "chrome_145"},
                "cache": {"enabled": false, "ttlMs": 60_000},
                "providers": {"brave": {"enabled": false}, "jina-reader": {"enabled": false},
                              "firecrawl": {"enabled": true}}}),
    );
    write(
        &home.join(".unipi/config/web-api/auth.json"),
        &json!({"tavily": "tvly-1", "jina-reader": "jr-2", "jina-search": "js-3", "firecrawl": "fc-4"}),
    );
    let load = || crate::web::config::WebConfig::load(Some(&home), &project);
    let (before, errors) = load();
    assert_eq!(errors, []);
    let (report, ok) = run(Some(&home), &project, true);
    assert!(ok, "{report}");
    for line in [
        "~/.unipi/config/web-api/config.json → ~/.unipi/config/web.json\n",
        "  smartFetch.timeoutMs → timeoutSeconds\n",
        "  smartFetch.removeImages → includeImages\n",
        "  cache.enabled → cacheTtlSeconds\n",
        "  cache.ttlMs → cacheTtlSeconds: kept the value given above\n",
        "  providers.brave.enabled → search.providers.brave.enabled\n",
        "  jina-search → search.providers.jina.apiKey\n",
        "  jina-reader → search.providers.jina.apiKey: kept the value given above\n",
        "  ~/.unipi/config/web-api/config.json smartFetch.browser: no counterpart in web.json\n",
        "  ~/.unipi/config/web-api/auth.json firecrawl: no such search provider in unipi-tui\n",
        "wrote ~/.unipi/config/web.json\n",
    ] {
        assert!(report.contains(line), "{line:?} in\n{report}");
    }
    let web = home.join(".unipi/config/web.json");
    assert_eq!(
        read(&web),
        json!({"maxChars": 20_000, "timeoutSeconds": 8, "includeImages": false,
               "cacheTtlSeconds": 0,
               "search": {"providers": {"brave": {"enabled": false},
                                        "jina": {"apiKey": "js-3"},
                                        "tavily": {"apiKey": "tvly-1"}}}})
    );
    let mode = std::fs::metadata(&web).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let (after, errors) = load();
    assert_eq!(errors, []);
    assert_eq!(after, before, "the same web settings");
}
