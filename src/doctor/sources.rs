//! Every config file the workbench reads, through the loaders the capabilities start from (so
//! the errors are theirs, with `path:line:col`): a row per file that is there and sound, a row per
//! problem in one that is not.

use std::path::{Path, PathBuf};

use super::{DoctorRow, DoctorStatus, row};
use crate::config::ConfigError;
use crate::config::module_file::ModuleConfig;

/// One reader: the files it reads (relative to home and to the workspace) and its loader.
struct Reader {
    files: &'static [&'static str],
    load: fn(Option<&Path>, &Path) -> Vec<ConfigError>,
}

fn errors_of<C: ModuleConfig>(home: Option<&Path>, workspace: &Path) -> Vec<ConfigError> {
    C::load(home, workspace).1
}

/// The module files, as the capabilities' `start` read them.
const READERS: &[Reader] = &[
    Reader {
        files: &[crate::config::footer::FOOTER_FILE],
        load: errors_of::<crate::config::footer::FooterConfig>,
    },
    Reader {
        files: &[crate::detach::config::CONFIG_FILE],
        load: errors_of::<crate::detach::config::DetachConfig>,
    },
    Reader {
        files: &[crate::tasks::TASKS_CONFIG_FILE],
        load: errors_of::<crate::tasks::TasksConfig>,
    },
    Reader {
        files: &[crate::tasks::TASKS_CONFIG_FILE],
        load: errors_of::<crate::delegate::config::DelegateConfig>,
    },
    Reader {
        files: &[crate::helpers::config::CONFIG_FILE],
        load: errors_of::<crate::helpers::config::HelpersConfig>,
    },
    Reader {
        files: &[
            crate::compactor::config::UNIPI_GLOBAL_FILE,
            crate::compactor::config::CONFIG_FILE,
        ],
        load: errors_of::<crate::compactor::config::CompactorConfig>,
    },
    Reader {
        files: &[crate::askuser::config::ASK_USER_CONFIG_FILE],
        load: errors_of::<crate::askuser::config::AskUserConfig>,
    },
    Reader {
        files: &[
            crate::notify::config::CONFIG_FILE,
            crate::notify::config::NTFY_FILE,
        ],
        load: errors_of::<crate::notify::config::NotifyConfig>,
    },
    Reader {
        files: &crate::web::config::WEB_CONFIG_FILES,
        load: errors_of::<crate::web::config::WebConfig>,
    },
    Reader {
        files: &[crate::fusion::config::FUSION_CONFIG_FILE],
        load: errors_of::<crate::fusion::config::FusionConfig>,
    },
];

/// The rows: each file read, in the order read; its problems where it has any.
pub(super) fn config_files(home: Option<&Path>, workspace: &Path) -> Vec<DoctorRow> {
    let mut files: Vec<PathBuf> = Vec::new();
    let mut errors: Vec<ConfigError> = Vec::new();
    let note = |file: PathBuf, files: &mut Vec<PathBuf>| {
        if file.exists() && !files.contains(&file) {
            files.push(file);
        }
    };
    // The workbench's own TOML files.
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    if let Some(keymap) = crate::config::keymap_file() {
        errors.extend(crate::config::keymap::load_keymap(Some(&keymap)).1);
        note(keymap, &mut files);
    }
    if let Some(theme) = crate::config::theme_file() {
        errors.extend(crate::config::theme::load_theme(Some(&theme), no_color).1);
        note(theme, &mut files);
    }
    for reader in READERS {
        for relative in reader.files {
            for base in home.into_iter().chain([workspace]) {
                note(base.join(relative), &mut files);
            }
        }
        errors.extend((reader.load)(home, workspace));
    }
    // Pi's settings.json, where Unipi kept `unipi.askUser` and `unipi.footer`.
    if let Some(settings) = crate::config::pi_settings_file(home) {
        note(settings, &mut files);
    }
    // MCP: Pi's files and Unipi's, and the workbench's settings.
    let pi_agent_dir = std::env::var_os("PI_CODING_AGENT_DIR")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from);
    for file in crate::mcp::config::config_files(home, pi_agent_dir.as_deref(), workspace) {
        note(file, &mut files);
    }
    errors.extend(crate::mcp::config::load(home, workspace).errors);

    let mut unique: Vec<ConfigError> = Vec::new();
    for error in errors {
        if !unique.contains(&error) {
            unique.push(error);
        }
    }
    let mut rows = Vec::new();
    for file in &files {
        let problems: Vec<&ConfigError> = unique.iter().filter(|e| e.path() == file).collect();
        if problems.is_empty() {
            rows.push(row(
                DoctorStatus::Ok,
                "config",
                format!("{} read", file.display()),
                None,
            ));
        }
        for problem in problems {
            rows.push(broken(problem));
        }
    }
    // A problem in a file not listed above (a file another file names).
    for problem in unique
        .iter()
        .filter(|e| !files.iter().any(|f| f == e.path()))
    {
        rows.push(broken(problem));
    }
    if rows.is_empty() {
        rows.push(row(
            DoctorStatus::Ok,
            "config",
            "no config files: the defaults are in use",
            None,
        ));
    }
    rows
}

fn broken(error: &ConfigError) -> DoctorRow {
    let fix = match error {
        ConfigError::Invalid {
            path, line, column, ..
        } => format!(
            "edit {}:{line}:{column} (the default is used until then)",
            path.display()
        ),
        ConfigError::Unreadable { path, .. } => {
            format!("make {} readable by you, or remove it", path.display())
        }
    };
    row(
        DoctorStatus::Broken,
        "config",
        error.to_string(),
        Some(&fix),
    )
}
