//! The app's side of the bridge: starting the host before Pi (with every capability's modules,
//! the info dashboard's among them), and turning Pi's events into the footer's data. Pi's events
//! drive the footer (no polling).

use std::ffi::OsString;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use tokio::sync::mpsc;
use unipi_widgets::footer::{Activity, ApiState, BridgeLink, ContextUsage, FooterData};

use crate::bridge::{self, AgentId, BridgeEvent, BridgeHost, Command, Module, PiEvent, Registry};
use crate::capability;

/// A started bridge, with the events for the loop and what connects the main Pi to it.
pub struct Started {
    pub link: capability::BridgeLink,
    pub events: mpsc::Receiver<BridgeEvent>,
    /// `-e <extension>`, before the user's arguments.
    pub pi_args: Vec<OsString>,
    /// The socket and this Pi's token.
    pub pi_env: Vec<(OsString, OsString)>,
}

/// Starts the bridge host with the capabilities' `modules`, each with the commands listed under
/// it, and returns it with the Pi arguments (`-e <extension>`) and environment (socket, token)
/// that connect the main Pi to it.
pub async fn start(
    cache_dir: &Path,
    modules: Vec<(Arc<dyn Module>, Vec<Command>)>,
    theme: &unipi_widgets::Theme,
) -> Result<Started> {
    let registry = Arc::new(Registry::new());
    for (module, commands) in modules {
        let name = module.name();
        registry
            .register_with_commands(module, commands)
            .with_context(|| format!("failed to register the {name} module"))?;
    }
    let (tx, events) = mpsc::channel(256);
    let options = crate::bridge::HostOptions {
        card_colors: card_colors(theme),
        ..crate::bridge::HostOptions::default()
    };
    let host = BridgeHost::start_with(Arc::clone(&registry), tx, options)
        .await
        .context("failed to start the bridge host")?;
    let extension = bridge::extension_file(cache_dir)?;
    let env = host
        .register_agent(AgentId::main())?
        .into_iter()
        .map(|(k, v)| (OsString::from(k), OsString::from(v)))
        .collect();
    Ok(Started {
        link: capability::BridgeLink {
            host,
            registry,
            extension: extension.clone(),
        },
        events,
        pi_args: vec![OsString::from("-e"), extension.into_os_string()],
        pi_env: env,
    })
}

/// The workbench theme's colours for the bridge's card tints (cards in Pi's transcript match the
/// workbench's own widgets). Only truecolour entries are sent; NO_COLOR themes send none.
pub fn card_colors(theme: &unipi_widgets::Theme) -> std::collections::BTreeMap<String, String> {
    [
        ("info", theme.accent),
        ("success", theme.status_done),
        ("warning", theme.warning),
        ("error", theme.error),
    ]
    .into_iter()
    .filter_map(|(tint, style)| match style.fg {
        Some(ratatui::style::Color::Rgb(r, g, b)) => {
            Some((tint.to_string(), format!("#{r:02x}{g:02x}{b:02x}")))
        }
        _ => None,
    })
    .collect()
}

/// The session a `session_start` names (`None` for other events and in-memory sessions).
pub(crate) fn session_of(event: &PiEvent) -> Option<crate::pi::resume::PiSession> {
    let PiEvent::SessionStart(start) = event else {
        return None;
    };
    Some(crate::pi::resume::PiSession {
        id: start.session_id.clone()?,
        file: start.session_file.clone()?.into(),
    })
}

/// What the footer says while Pi waits for the model's stream to start.
const WAITING: &str = "waiting for the model";

/// Applies one Pi event to the footer's data. Totals are per session: a new session (not a
/// reload of the same one) starts them again.
pub(crate) fn apply_pi_event(data: &mut FooterData, event: &PiEvent) {
    match event {
        PiEvent::SessionStart(start) => start_session(data, start),
        PiEvent::SessionName { name } => data.session_name = name.clone(),
        PiEvent::AgentStart => {
            data.activity = Some(Activity::Working);
            data.doing = Some(WAITING.to_owned());
            data.api = Some(ApiState::Waiting);
        }
        PiEvent::AgentSettled { .. } => {
            data.activity = Some(Activity::Idle);
            data.doing = None;
            // Aborted before an answer came: nothing is out any more.
            if matches!(data.api, Some(ApiState::Waiting | ApiState::Streaming)) {
                data.api = Some(ApiState::Ok);
            }
        }
        PiEvent::StreamPhase { phase } => {
            data.doing = Some(doing(phase).to_owned());
            data.api = Some(ApiState::Streaming);
        }
        PiEvent::ToolExecutionStart(tool) => {
            data.doing = Some(format!("running {}", tool.tool));
            data.tool_calls += 1;
        }
        PiEvent::ToolExecutionEnd(_) => {
            data.doing = Some(WAITING.to_owned());
            data.api = Some(ApiState::Waiting);
        }
        PiEvent::FooterStatus(status) => {
            data.extension_statuses = status
                .statuses
                .iter()
                .map(|status| status.text.clone())
                .collect();
            data.auto_compaction = status.auto_compaction;
        }
        PiEvent::CompactionStart { .. } => data.activity = Some(Activity::Compacting),
        PiEvent::CompactionEnd(end) => {
            if data.activity == Some(Activity::Compacting) {
                data.activity = Some(Activity::Idle);
            }
            // The context shrank: Pi's own figure now (unknown tokens until the next reply),
            // not the stale one from before the compaction.
            if let Some(usage) = &end.context_usage {
                data.context = Some(context(usage));
            }
        }
        PiEvent::MessageEnd(end) => add_usage(data, end),
        PiEvent::TurnEnd(turn) => {
            if let Some(usage) = &turn.context_usage {
                data.context = Some(context(usage));
            }
        }
        PiEvent::ModelSelect(select) => {
            data.model = Some(select.model.id.clone());
            if let Some(window) = select.model.context_window
                && let Some(ctx) = &mut data.context
            {
                ctx.window = window;
            }
        }
        PiEvent::ThinkingLevel { level, .. } => data.thinking_level = Some(level.clone()),
        PiEvent::SessionShutdown(_)
        | PiEvent::AgentEnd
        | PiEvent::UserInput(_)
        | PiEvent::QueueUpdate { .. }
        | PiEvent::Other { .. } => {}
    }
}

/// A session started or was reloaded: a new one (not a reload) starts the totals again.
fn start_session(data: &mut FooterData, start: &bridge::SessionStart) {
    if start.reason != "reload" {
        data.tokens_in = 0;
        data.tokens_out = 0;
        data.cost = None;
        data.tool_calls = 0;
        data.api = None;
    }
    data.session_name = start.session_name.clone();
    if let Some(model) = &start.model {
        data.model = Some(model.id.clone());
    }
    if let Some(level) = &start.thinking_level {
        data.thinking_level = Some(level.clone());
    }
    if let Some(usage) = &start.context_usage {
        data.context = Some(context(usage));
    }
    data.activity = Some(Activity::Idle);
}

/// What the footer says the model is doing in a stream phase.
fn doing(phase: &str) -> &'static str {
    match phase {
        "thinking" => "thinking",
        "writing" => "writing",
        "calling_tool" => "calling a tool",
        _ => WAITING,
    }
}

/// A message's usage added to the session's totals; its model is the one in use.
fn add_usage(data: &mut FooterData, end: &bridge::MessageEnd) {
    data.api = Some(match (end.stop_reason.as_deref(), &end.error_message) {
        (Some("error"), message) => ApiState::Error(
            message
                .clone()
                .unwrap_or_else(|| "the model's API failed".to_owned()),
        ),
        _ => ApiState::Ok,
    });
    data.tokens_in += end.usage.input + end.usage.cache_read + end.usage.cache_write;
    data.tokens_out += end.usage.output;
    data.cost = Some(data.cost.unwrap_or(0.0) + end.usage.cost);
    if let Some(model) = &end.model {
        data.model = Some(model.clone());
    }
}

fn context(usage: &bridge::ContextUsage) -> ContextUsage {
    ContextUsage {
        tokens: usage.tokens,
        window: usage.context_window,
        percent: usage.percent,
    }
}

/// The footer's view of the link after a connect or disconnect.
pub(crate) fn link_after(event: &BridgeEvent) -> Option<BridgeLink> {
    // Child Pis connect with their own agent ids; the footer's link is the main Pi's.
    let main = AgentId::main();
    match event {
        BridgeEvent::Connected { agent, .. } if *agent == main => Some(BridgeLink::Connected),
        BridgeEvent::Disconnected { agent, .. } if *agent == main => Some(BridgeLink::Disconnected),
        BridgeEvent::Connected { .. } | BridgeEvent::Disconnected { .. } => None,
        BridgeEvent::Pi { .. }
        | BridgeEvent::Fault { .. }
        | BridgeEvent::CommandAnswered { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bridge::{MessageEnd, SessionStart, TurnEnd, Usage};

    #[test]
    fn only_the_main_pi_moves_the_footers_link() {
        use crate::bridge::DisconnectReason;
        let child = AgentId::new("child:c1");
        let gone = |agent: &AgentId| BridgeEvent::Disconnected {
            agent: agent.clone(),
            reason: DisconnectReason::Closed,
        };
        assert_eq!(
            link_after(&gone(&AgentId::main())),
            Some(BridgeLink::Disconnected)
        );
        assert_eq!(link_after(&gone(&child)), None);
        let up = |agent: &AgentId| BridgeEvent::Connected {
            agent: agent.clone(),
            pi_version: "1.6.0".into(),
            protocol: 1,
            capabilities: Default::default(),
        };
        assert_eq!(
            link_after(&up(&AgentId::main())),
            Some(BridgeLink::Connected)
        );
        assert_eq!(link_after(&up(&child)), None);
    }

    #[test]
    fn card_colours_come_from_the_theme_and_none_without_colour() {
        let (theme, _) = crate::config::theme::load_theme(None, false);
        let colors = card_colors(&theme.widgets);
        assert_eq!(colors.len(), 4, "{colors:?}");
        assert!(colors.values().all(|c| c.len() == 7 && c.starts_with('#')));
        let (plain, _) = crate::config::theme::load_theme(None, true);
        assert!(card_colors(&plain.widgets).is_empty());
    }

    #[test]
    fn the_footer_follows_what_pi_does_and_other_extensions_statuses() {
        use crate::bridge::{ExtensionStatus, FooterStatus, ToolExecution};
        let mut data = FooterData::default();
        let steps: Vec<(PiEvent, Option<&str>)> = vec![
            (PiEvent::AgentStart, Some("waiting for the model")),
            (
                PiEvent::StreamPhase {
                    phase: "thinking".into(),
                },
                Some("thinking"),
            ),
            (
                PiEvent::StreamPhase {
                    phase: "writing".into(),
                },
                Some("writing"),
            ),
            (
                PiEvent::ToolExecutionStart(ToolExecution {
                    tool: "bash".into(),
                    ..ToolExecution::default()
                }),
                Some("running bash"),
            ),
            (
                PiEvent::ToolExecutionEnd(ToolExecution::default()),
                Some("waiting for the model"),
            ),
            (
                PiEvent::AgentSettled {
                    aborted: false,
                    synthetic: false,
                },
                None,
            ),
        ];
        for (event, want) in steps {
            apply_pi_event(&mut data, &event);
            assert_eq!(data.doing.as_deref(), want, "{event:?}");
        }
        assert_eq!(data.tool_calls, 1);
        assert_eq!(data.api, Some(ApiState::Ok), "settled with nothing out");
        apply_pi_event(
            &mut data,
            &PiEvent::FooterStatus(FooterStatus {
                statuses: vec![
                    ExtensionStatus {
                        key: "a".into(),
                        text: "first".into(),
                    },
                    ExtensionStatus {
                        key: "b".into(),
                        text: "second".into(),
                    },
                ],
                auto_compaction: Some(true),
            }),
        );
        assert_eq!(data.extension_statuses, ["first", "second"]);
        assert_eq!(data.auto_compaction, Some(true));
    }

    #[test]
    fn footer_data_follows_pi_events() {
        let mut data = FooterData::default();
        apply_pi_event(
            &mut data,
            &PiEvent::SessionStart(Box::new(SessionStart {
                reason: "startup".into(),
                model: Some(bridge::ModelInfo {
                    provider: "p".into(),
                    id: "m1".into(),
                    ..Default::default()
                }),
                ..Default::default()
            })),
        );
        assert_eq!(data.model.as_deref(), Some("m1"));
        assert_eq!(data.activity, Some(Activity::Idle));
        apply_pi_event(&mut data, &PiEvent::AgentStart);
        assert_eq!(data.activity, Some(Activity::Working));
        for _ in 0..2 {
            apply_pi_event(
                &mut data,
                &PiEvent::MessageEnd(MessageEnd {
                    usage: Usage {
                        input: 100,
                        output: 20,
                        cost: 0.5,
                        ..Default::default()
                    },
                    ..Default::default()
                }),
            );
        }
        assert_eq!((data.tokens_in, data.tokens_out), (200, 40));
        assert_eq!(data.cost, Some(1.0));
        assert_eq!(data.api, Some(ApiState::Ok));
        apply_pi_event(
            &mut data,
            &PiEvent::MessageEnd(MessageEnd {
                stop_reason: Some("error".into()),
                error_message: Some("429 rate limited".into()),
                ..Default::default()
            }),
        );
        assert_eq!(data.api, Some(ApiState::Error("429 rate limited".into())));
        apply_pi_event(
            &mut data,
            &PiEvent::TurnEnd(TurnEnd {
                context_usage: Some(bridge::ContextUsage {
                    tokens: Some(1000),
                    context_window: 4000,
                    percent: Some(25.0),
                }),
                ..Default::default()
            }),
        );
        assert_eq!(data.context.as_ref().map(|c| c.window), Some(4000));
        apply_pi_event(
            &mut data,
            &PiEvent::AgentSettled {
                aborted: false,
                synthetic: false,
            },
        );
        assert_eq!(data.activity, Some(Activity::Idle));
        // A reload keeps the session's totals; a new session starts them again.
        let start = |reason: &str| {
            PiEvent::SessionStart(Box::new(SessionStart {
                reason: reason.into(),
                ..Default::default()
            }))
        };
        apply_pi_event(&mut data, &start("reload"));
        assert_eq!(data.tokens_in, 200);
        data.tool_calls = 3;
        apply_pi_event(&mut data, &start("reload"));
        assert_eq!(data.tool_calls, 3);
        apply_pi_event(&mut data, &start("new"));
        assert_eq!((data.tokens_in, data.cost, data.tool_calls), (0, None, 0));
    }

    /// After a compaction the footer shows Pi's figure at once (tokens unknown until the next
    /// reply), not the one from before.
    #[test]
    fn a_compaction_updates_the_context_figure() {
        let mut data = FooterData {
            context: Some(ContextUsage {
                tokens: Some(90_000),
                window: 128_000,
                percent: Some(70.3),
            }),
            ..FooterData::default()
        };
        apply_pi_event(&mut data, &PiEvent::CompactionStart { reason: None });
        apply_pi_event(
            &mut data,
            &PiEvent::CompactionEnd(bridge::CompactionEnd {
                context_usage: Some(bridge::ContextUsage {
                    tokens: None,
                    context_window: 128_000,
                    percent: None,
                }),
                ..Default::default()
            }),
        );
        assert_eq!(
            data.context,
            Some(ContextUsage {
                tokens: None,
                window: 128_000,
                percent: None
            })
        );
        assert_eq!(data.activity, Some(Activity::Idle));
        // A failed compaction reports no figure: the last one stays.
        apply_pi_event(
            &mut data,
            &PiEvent::CompactionEnd(bridge::CompactionEnd {
                error: Some("Compaction failed: x".into()),
                ..Default::default()
            }),
        );
        assert_eq!(data.context.as_ref().map(|c| c.window), Some(128_000));
    }
}
