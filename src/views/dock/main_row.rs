//! The main agent's row in the dock, from what the app knows of Pi (the footer's data): the dock
//! lists it first, as context for the helpers below it.

use unipi_widgets::agents::{AgentKind, AgentRow, AgentStatus, MAIN_ID};
use unipi_widgets::footer::{Activity, BridgeLink, FooterData};

/// The main agent's row from what the bridge reported for the footer.
pub fn main_row(data: &FooterData) -> AgentRow {
    let (status, activity) = match (data.bridge, data.activity) {
        (BridgeLink::Disconnected, _) => (AgentStatus::Idle, "bridge disconnected"),
        (_, Some(Activity::Working)) => (
            AgentStatus::Running,
            data.doing.as_deref().unwrap_or("working"),
        ),
        (_, Some(Activity::Compacting)) => (AgentStatus::Running, "compacting"),
        (_, Some(Activity::Idle) | None) => (AgentStatus::Idle, "idle"),
    };
    let context_percent = data.context.as_ref().and_then(|context| {
        context.percent.or_else(|| {
            let tokens = context.tokens?;
            (context.window > 0).then(|| tokens as f64 * 100.0 / context.window as f64)
        })
    });
    AgentRow {
        id: MAIN_ID.to_owned(),
        kind: AgentKind::Main,
        agent_type: "main".to_owned(),
        model: data.model.clone(),
        description: data
            .session_name
            .clone()
            .unwrap_or_else(|| "this session".to_owned()),
        status,
        tokens: data.tokens_in + data.tokens_out,
        tokens_in: data.tokens_in,
        tokens_out: data.tokens_out,
        cost: data.cost,
        context_percent,
        last_activity: activity.to_owned(),
        ..AgentRow::default()
    }
}

#[cfg(test)]
mod tests {
    use unipi_widgets::footer::ContextUsage;

    use super::*;

    #[test]
    fn main_row_from_footer_data() {
        let data = FooterData {
            bridge: BridgeLink::Connected,
            activity: Some(Activity::Working),
            model: Some("claude-sonnet-4-5".to_owned()),
            context: Some(ContextUsage {
                tokens: Some(50_000),
                window: 200_000,
                percent: None,
            }),
            tokens_in: 10_000,
            tokens_out: 2_000,
            cost: Some(0.3),
            session_name: Some("refactor".to_owned()),
            ..FooterData::default()
        };
        let row = main_row(&data);
        assert_eq!(row.id, MAIN_ID);
        assert_eq!(row.kind, AgentKind::Main);
        assert_eq!(row.status, AgentStatus::Running);
        assert_eq!(row.tokens, 12_000);
        assert_eq!(row.cost, Some(0.3));
        assert_eq!(row.context_percent, Some(25.0));
        assert_eq!(row.description, "refactor");
        let idle = main_row(&FooterData::default());
        assert_eq!(
            (idle.status, idle.last_activity.as_str()),
            (AgentStatus::Idle, "idle")
        );
        assert_eq!(idle.description, "this session");
    }
}
