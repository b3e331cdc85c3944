//! Web smart-fetch as a workbench capability: started from `web.json` (off when it says so),
//! it offers the web tools and `/unipi:web-cache-clear` through its bridge module, and
//! `/unipi:web-settings` (the settings overlay), and follows the file while it runs (an edit,
//! the overlay's included, takes effect at the next fetch or search). The tool results carry
//! their cards.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use unipi_widgets::dashboard::InfoGroup;

use super::cache::Cache;
use super::config::{WEB_CONFIG_FILES, WebConfig};
use super::module::WebModule;
use super::settings::{SETTINGS_PAGE, save};
use crate::bridge::{Command, CommandCall, CommandReply, CommandSpec, Module};
use crate::capability::settings::{Save, SettingsHome, live_reporting, report_unipi_files};
use crate::capability::{Capability, Changed, Registration, StartContext};
use crate::config::module_file::ModuleConfig;

pub const REGISTRATION: Registration = Registration {
    name: "web",
    start,
    key_tables: &[],
    actions: &[],
    dock: None,
};

fn start(context: &mut StartContext<'_>) -> Option<Arc<dyn Capability>> {
    // Followed: an edit of web.json takes effect at the next fetch (the module reads it).
    report_unipi_files::<WebConfig>(context);
    let config = live_reporting(context, &WEB_CONFIG_FILES, WebConfig::load);
    if !config.get().enabled {
        tracing::info!("web: disabled in web.json");
        return None;
    }
    let cache_dir = Cache::default_dir(context.home);
    Some(Arc::new(WebCapability {
        module: Arc::new(WebModule::new(config, cache_dir)),
        settings: SettingsHome::new(context, Changed::default()),
    }))
}

#[derive(Clone)]
struct WebCapability {
    module: Arc<WebModule>,
    settings: SettingsHome,
}

impl Capability for WebCapability {
    fn modules(&self) -> Vec<Arc<dyn Module>> {
        vec![Arc::clone(&self.module) as _]
    }

    fn commands(&self) -> Vec<Command> {
        let spec = CommandSpec::new(
            "unipi:web-settings",
            "Web settings: search provider and keys, fetch defaults",
        );
        let mut commands = self.module.commands();
        commands.push(Command::new(spec, self.clone(), Self::edit_settings));
        commands
    }

    fn changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        Some(self.settings.changed.subscribe())
    }

    fn info_group(&self) -> Option<BoxFuture<'static, InfoGroup>> {
        let module = Arc::clone(&self.module);
        Some(Box::pin(async move { module.info_group().await }))
    }
}

impl WebCapability {
    /// `/unipi:web-settings`: the settings overlay (a save is followed like any edit of the file).
    async fn edit_settings(self, _call: CommandCall) -> CommandReply {
        let save: Save = std::sync::Arc::new(save);
        self.settings.open_settings(&SETTINGS_PAGE, |_| save).await
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::capability::Ui;
    use crate::config::keymap::Keymap;
    use crate::config::module_file::write_module_file;
    use crate::pi::{PiCommand, PiSource};
    use crate::web::config::WEB_CONFIG_FILE;

    /// Starts the capability with `workspace_config` in the workspace; its notices and tools.
    fn started(workspace_config: &str) -> (Vec<String>, Option<Vec<String>>) {
        started_with(&[], &[(WEB_CONFIG_FILE, workspace_config)])
    }

    /// Starts the capability with these files in the home and the workspace.
    fn started_with(
        home_files: &[(&str, &str)],
        workspace_files: &[(&str, &str)],
    ) -> (Vec<String>, Option<Vec<String>>) {
        let home = tempfile::tempdir().unwrap();
        let workspace = tempfile::tempdir().unwrap();
        for (dir, files) in [
            (home.path(), home_files),
            (workspace.path(), workspace_files),
        ] {
            for (file, text) in files {
                write_module_file(dir, file, text);
            }
        }
        let mut pi = PiCommand {
            program: Path::new("pi").to_path_buf(),
            args: Vec::new(),
            env: Vec::new(),
            source: PiSource::Explicit,
            version: None,
        };
        let ui = Ui::headless(Arc::new(Keymap::defaults()));
        let mut context = StartContext::new(Some(home.path()), workspace.path(), &mut pi, None, ui);
        let capability = start(&mut context);
        let tools = capability.map(|capability| {
            capability
                .modules()
                .iter()
                .flat_map(|module| module.tools())
                .map(|tool| tool.name)
                .collect()
        });
        (context.take_notices(), tools)
    }

    #[test]
    fn it_starts_from_web_json_reports_its_errors_and_can_be_switched_off() {
        let (notices, tools) = started("{}");
        assert_eq!(notices, Vec::<String>::new());
        assert_eq!(
            tools.unwrap(),
            [
                "web_fetch",
                "web_fetch_batch",
                "web_read",
                "web_search",
                "multi_web_content_read"
            ]
        );

        let (notices, tools) = started("{\n  \"timeoutSeconds\": -1\n}");
        assert_eq!(notices.len(), 1, "{notices:?}");
        assert!(
            notices[0].ends_with("web.json:2:3: `timeoutSeconds` must be an integer from 1 to 300"),
            "{notices:?}"
        );
        assert!(
            tools.is_some(),
            "a bad key keeps the default, the tools stay"
        );

        let (notices, tools) = started(r#"{"enabled": false}"#);
        assert!(notices.is_empty());
        assert_eq!(tools, None);
    }

    /// A broken Unipi file is a start notice with its place; the tools start all the same.
    #[test]
    fn a_bad_unipi_file_is_reported_and_stops_nothing() {
        use crate::web::config::{UNIPI_AUTH_FILE, UNIPI_CONFIG_FILE};
        let (notices, tools) = started_with(
            &[
                (UNIPI_AUTH_FILE, "{\"tavily\": \"tvly-1\",\n  \"brave\": }"),
                (UNIPI_CONFIG_FILE, "[]"),
            ],
            &[],
        );
        assert_eq!(notices.len(), 2, "{notices:?}");
        assert!(
            notices.iter().any(|n| n.contains("web-api/auth.json:2:")),
            "{notices:?}"
        );
        assert!(
            notices
                .iter()
                .any(|n| n.contains("web-api/config.json:1:1: expected a JSON object")),
            "{notices:?}"
        );
        assert_eq!(tools.map(|tools| tools.len()), Some(5));
    }
}
