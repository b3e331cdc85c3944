//! Web smart-fetch as a workbench capability: started from `web.json` (off when it says so),
//! it offers the web tools and `/unipi:web-cache-clear` through its bridge module. It has no
//! screen of its own: the tool results carry their cards, and the command answers in words.

use std::sync::Arc;

use super::cache::Cache;
use super::config::load_web_config;
use super::fetch::{Fetcher, FetcherSettings};
use super::module::WebModule;
use crate::bridge::Module;
use crate::capability::{Capability, Registration, StartContext};

pub const REGISTRATION: Registration = Registration {
    name: "web",
    start,
    key_tables: &[],
};

fn start(context: &mut StartContext<'_>) -> Option<Arc<dyn Capability>> {
    let (config, errors) = load_web_config(context.home, context.workspace);
    for error in &errors {
        context.report(error);
    }
    if !config.enabled {
        tracing::info!("web: disabled in web.json");
        return None;
    }
    let settings = FetcherSettings::from_config(&config, Cache::default_dir(context.home));
    match Fetcher::new(settings) {
        Ok(fetcher) => Some(Arc::new(WebCapability {
            module: Arc::new(WebModule::new(fetcher, config)),
        })),
        Err(err) => {
            context.report(format!("Web fetch could not start: {err:#}"));
            None
        }
    }
}

struct WebCapability {
    module: Arc<WebModule>,
}

impl Capability for WebCapability {
    fn name(&self) -> &'static str {
        "web"
    }

    fn modules(&self) -> Vec<Arc<dyn Module>> {
        vec![Arc::clone(&self.module) as _]
    }
}
