//! The app's side of the compactor: its three `/unipi:*` commands and its footer segment. The
//! module (`crate::compactor::module`) owns the compaction state, the database and the calls
//! into Pi; this only reads its tally and last compaction and opens the overlay, and answers the
//! commands that wait on Pi or the database from a spawned task, never from the loop.

use unipi_widgets::footer::Segment;

use crate::bridge::{AgentId, CommandReply, NotifyLevel};
use crate::compactor::module::{COMPACT_COMMAND, STATS_COMMAND, VIEW_COMMAND, parse_command_args};
use crate::views::compaction::CompactionView;

impl super::App {
    /// `/unipi:compact`, `/unipi:compact-stats` and `/unipi:compact-view`.
    pub(super) fn on_compactor_command(
        &mut self,
        _agent: AgentId,
        name: &str,
        args: &str,
        reply: tokio::sync::oneshot::Sender<CommandReply>,
    ) {
        let Some(module) = self.compactor.clone() else {
            let _ = reply.send(CommandReply::Failed {
                message: "the compactor is not running".to_owned(),
            });
            return;
        };
        match name {
            COMPACT_COMMAND => match parse_command_args(args) {
                Ok(marker) => {
                    tokio::spawn(async move {
                        // Pi's command handler must finish before Pi can start the compaction.
                        let _ = reply.send(CommandReply::Done);
                        if let Err(message) = module.request_compaction(&marker).await {
                            tracing::warn!("/unipi:compact: {message}");
                        }
                    });
                }
                Err(message) => {
                    let _ = reply.send(CommandReply::Notify {
                        message: format!("/{COMPACT_COMMAND}: {message}"),
                        level: NotifyLevel::Warning,
                    });
                }
            },
            STATS_COMMAND => {
                tokio::spawn(async move {
                    let answer = match module.stats().await {
                        Ok(text) => CommandReply::Notify {
                            message: text,
                            level: NotifyLevel::Info,
                        },
                        Err(message) => CommandReply::Failed { message },
                    };
                    let _ = reply.send(answer);
                });
            }
            VIEW_COMMAND => match module.last_view() {
                Some(model) => {
                    let _ = reply.send(CommandReply::Done);
                    self.views.push(Box::new(CompactionView::new(model)));
                    self.request_draw();
                }
                None => {
                    let _ = reply.send(CommandReply::Notify {
                        message: "No compaction yet in this session.".to_owned(),
                        level: NotifyLevel::Info,
                    });
                }
            },
            other => {
                let _ = reply.send(CommandReply::Failed {
                    message: format!("the compactor has no command `{other}`"),
                });
            }
        }
    }

    /// The footer's `🗜 2 · 41.2k saved`, once the session had a compaction, or `🗜 indexing
    /// 12/40 sessions` while the index is rebuilt from Pi's session files.
    pub(super) fn compactor_segment(&self) -> Option<Segment> {
        let module = self.compactor.as_ref()?;
        let indexing = module
            .indexing()
            .map(|progress| unipi_widgets::compactor::Indexing {
                done: progress.done,
                total: progress.total,
            });
        unipi_widgets::compactor::compactor_segment(&module.tally(), indexing)
    }
}
