//! The dashboard's own groups, which belong to no capability: usage and cost (from Pi's session
//! files, [`super::usage`]), Pi's extensions (the packages its settings list and the extension
//! folders) and skills (folders holding a `SKILL.md`), found where the original Unipi looked.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use unipi_widgets::dashboard::{InfoGroup, InfoRow};
use unipi_widgets::footer::format_tokens;

use super::usage::{Clock, Period, UsageStats, format_cost, read_usage};

/// Where the dashboard reads Pi's files.
#[derive(Clone, Debug)]
pub(crate) struct PiFiles {
    /// Pi's agent directory (`PI_CODING_AGENT_DIR`, else `~/.pi/agent`).
    pub agent_dir: Option<PathBuf>,
    /// The project Pi runs in.
    pub workspace: PathBuf,
}

/// The ids of the dashboard's own groups.
pub(crate) const USAGE: &str = "usage";
pub(crate) const EXTENSIONS: &str = "extensions";
pub(crate) const SKILLS: &str = "skills";

/// Usage and cost today, this week, this month and in all, from Pi's session files (blocking).
pub(crate) fn usage_group(files: &PiFiles, clock: &Clock) -> InfoGroup {
    let Some(sessions) = files.agent_dir.as_ref().map(|dir| dir.join("sessions")) else {
        return group(
            USAGE,
            "Usage",
            vec![InfoRow::new("Sessions", "no home directory")],
        );
    };
    let stats = read_usage(&sessions, clock);
    group(USAGE, "Usage", usage_rows(&stats, &sessions))
}

/// The usage group's rows for `stats` read from `sessions`.
pub(crate) fn usage_rows(stats: &UsageStats, sessions: &Path) -> Vec<InfoRow> {
    let mut rows: Vec<InfoRow> = [
        ("Today", &stats.today),
        ("This week", &stats.week),
        ("This month", &stats.month),
        ("All time", &stats.all),
    ]
    .into_iter()
    .map(|(label, period)| period_row(label, period))
    .collect();
    for (label, period) in [
        ("Top model today", &stats.today),
        ("Top model this week", &stats.week),
        ("Top model this month", &stats.month),
    ] {
        rows.push(match period.top_model() {
            Some((model, totals)) => InfoRow::new(label, model).detail(format!(
                "{} · {} tokens",
                format_cost(totals.cost),
                format_tokens(totals.tokens())
            )),
            None => InfoRow::new(label, "none"),
        });
    }
    let mut sessions_row = InfoRow::new(
        "Sessions",
        format!("{} with usage · {}", stats.sessions, sessions.display()),
    );
    if stats.unreadable > 0 {
        sessions_row = sessions_row.detail(format!(
            "{} files could not be read (see the log)",
            stats.unreadable
        ));
    }
    rows.push(sessions_row);
    rows
}

fn period_row(label: &str, period: &Period) -> InfoRow {
    let totals = &period.totals;
    InfoRow::new(
        label,
        format!(
            "{} tokens · {}",
            format_tokens(totals.tokens()),
            format_cost(totals.cost)
        ),
    )
    .detail(format!(
        "in {} · out {} · cache write {} · cache read {} · {} calls",
        format_tokens(totals.input),
        format_tokens(totals.output),
        format_tokens(totals.cache_write),
        format_tokens(totals.cache_read),
        totals.calls
    ))
}

/// Pi's extensions: the packages its user and project settings list, and the extension files
/// and folders in its user and project `extensions` folders (blocking).
pub(crate) fn extensions_group(files: &PiFiles) -> InfoGroup {
    let project = files.workspace.join(".pi");
    let mut found: BTreeMap<String, &'static str> = BTreeMap::new();
    for dir in files.agent_dir.iter().chain([&project]) {
        for package in listed_packages(&dir.join("settings.json")) {
            let (name, kind) = package_name(&package);
            found.entry(name).or_insert(kind);
        }
        for name in folder_entries(&dir.join("extensions"), |path| {
            path.is_dir()
                || path
                    .extension()
                    .is_some_and(|ext| ext == "ts" || ext == "js")
        }) {
            found.entry(name).or_insert("local");
        }
    }
    let count = |kind: &str| found.values().filter(|k| **k == kind).count();
    let mut rows = vec![InfoRow::new(
        "Extensions",
        format!(
            "{} ({} npm, {} git, {} local)",
            found.len(),
            count("npm"),
            count("git"),
            count("local")
        ),
    )];
    rows.extend(
        found
            .into_iter()
            .map(|(name, kind)| InfoRow::new(name, kind)),
    );
    group(EXTENSIONS, "Extensions", rows)
}

/// Pi's skills: the folders holding a `SKILL.md` in its user and project `skills` folders
/// (blocking).
pub(crate) fn skills_group(files: &PiFiles) -> InfoGroup {
    let has_skill = |path: &Path| path.join("SKILL.md").is_file();
    let global = files
        .agent_dir
        .as_ref()
        .map(|dir| folder_entries(&dir.join("skills"), has_skill))
        .unwrap_or_default();
    let project = folder_entries(&files.workspace.join(".pi/skills"), has_skill);
    let mut rows = vec![InfoRow::new(
        "Skills",
        format!(
            "{} ({} global, {} project)",
            global.len() + project.len(),
            global.len(),
            project.len()
        ),
    )];
    rows.extend(global.into_iter().map(|name| InfoRow::new(name, "global")));
    rows.extend(
        project
            .into_iter()
            .map(|name| InfoRow::new(name, "project")),
    );
    group(SKILLS, "Skills", rows)
}

fn group(id: &str, title: &str, rows: Vec<InfoRow>) -> InfoGroup {
    InfoGroup {
        id: id.to_owned(),
        title: title.to_owned(),
        rows,
    }
}

/// The `packages` a Pi `settings.json` lists (strings, or objects with a `source`); none when
/// the file is missing or not what Pi reads (Pi reports that itself).
fn listed_packages(settings: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(settings) else {
        return Vec::new();
    };
    let Ok(value) = serde_json::from_str::<Value>(&text) else {
        tracing::warn!("info: {} is not JSON", settings.display());
        return Vec::new();
    };
    value["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|package| {
            package
                .as_str()
                .or_else(|| package["source"].as_str())
                .map(str::to_owned)
        })
        .collect()
}

/// A package source's name and kind: `npm:@scope/name@1.2` is `name` from npm,
/// `git:github.com/a/x.git` is `x` from git, anything else is a local path.
fn package_name(source: &str) -> (String, &'static str) {
    if let Some(spec) = source.strip_prefix("npm:") {
        let unscoped = spec.rsplit('/').next().unwrap_or(spec);
        let name = match unscoped.rsplit_once('@') {
            Some((name, _version)) if !name.is_empty() => name,
            _ => unscoped,
        };
        return (name.to_owned(), "npm");
    }
    let git = ["git:", "https://", "http://", "ssh://", "git@"]
        .iter()
        .any(|prefix| source.starts_with(prefix));
    let last = source.trim_end_matches('/').rsplit(['/', ':']).next();
    let name = last.unwrap_or(source);
    if git {
        (name.trim_end_matches(".git").to_owned(), "git")
    } else {
        (name.to_owned(), "local")
    }
}

/// The names (file stems for files) of the entries of `dir` that `keep` accepts, sorted.
fn folder_entries(dir: &Path, keep: impl Fn(&Path) -> bool) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| keep(path))
        .filter_map(|path| {
            let name = if path.is_dir() {
                path.file_name()
            } else {
                path.file_stem()
            };
            name.map(|name| name.to_string_lossy().into_owned())
        })
        .collect();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_table::check_table;

    #[test]
    fn package_sources_name_their_package() {
        let cases = [
            ("npm:@pi-unipi/unipi", "unipi npm"),
            ("npm:pi-skills@1.2.3", "pi-skills npm"),
            ("npm:@scope/tool@2", "tool npm"),
            ("git:github.com/ada/pi-ext.git", "pi-ext git"),
            ("https://github.com/ada/other", "other git"),
            ("./local/my-ext", "my-ext local"),
        ];
        check_table(cases, |source| {
            let (name, kind) = package_name(source);
            format!("{name} {kind}")
        });
    }

    #[test]
    fn extensions_and_skills_are_found_where_pi_keeps_them() {
        let root = tempfile::tempdir().unwrap();
        let agent = root.path().join("agent");
        let workspace = root.path().join("project");
        std::fs::create_dir_all(agent.join("extensions/folder-ext")).unwrap();
        std::fs::write(agent.join("extensions/single.ts"), "").unwrap();
        std::fs::write(agent.join("extensions/readme.md"), "").unwrap();
        std::fs::write(
            agent.join("settings.json"),
            r#"{"packages": ["npm:@pi-unipi/unipi@0.3.0", {"source": "git:github.com/a/b.git"}]}"#,
        )
        .unwrap();
        std::fs::create_dir_all(agent.join("skills/explore")).unwrap();
        std::fs::write(agent.join("skills/explore/SKILL.md"), "# explore").unwrap();
        std::fs::create_dir_all(agent.join("skills/not-a-skill")).unwrap();
        std::fs::create_dir_all(workspace.join(".pi/skills/deploy")).unwrap();
        std::fs::write(workspace.join(".pi/skills/deploy/SKILL.md"), "# deploy").unwrap();
        std::fs::write(workspace.join(".pi/settings.json"), "{ not json").unwrap();
        let files = PiFiles {
            agent_dir: Some(agent),
            workspace,
        };
        let rows = |group: InfoGroup| -> Vec<(String, String)> {
            group.rows.into_iter().map(|r| (r.label, r.value)).collect()
        };
        let pair = |a: &str, b: &str| (a.to_owned(), b.to_owned());
        assert_eq!(
            rows(extensions_group(&files)),
            [
                pair("Extensions", "4 (1 npm, 1 git, 2 local)"),
                pair("b", "git"),
                pair("folder-ext", "local"),
                pair("single", "local"),
                pair("unipi", "npm"),
            ]
        );
        assert_eq!(
            rows(skills_group(&files)),
            [
                pair("Skills", "2 (1 global, 1 project)"),
                pair("explore", "global"),
                pair("deploy", "project"),
            ]
        );
    }
}
