//! The workbench's own footer segments, each built from the app's [`FooterModel`] and the bridge's
//! [`FooterData`]: Pi's state, model, session, directory, branch, host, scrollback marker, context,
//! tokens, cost and key hint. Each one offers shorter forms where a shorter form still says
//! something, and decides nothing about fitting: that is the layout's job.

use super::icons::Icon;
use super::segment::{Align, Form, Role, Segment};
use super::settings::{ContextThresholds, FooterSettings, Preset};
use super::{
    Activity, ApiState, BridgeLink, FooterData, FooterModel, PiRunState, ProgramState,
    StatusSegment, priority, tilde_path,
};
use crate::text::{first_line, path_forms, word_forms};

/// Tokens in a compact form: `950`, `12.3k`, `450k`, `1.2M`, `15M` (one decimal below 100 of
/// the unit, none from there; a trailing `.0` is dropped).
pub fn format_tokens(count: u64) -> String {
    fn scaled(value: f64, unit: &str) -> String {
        let text = if value < 99.95 {
            format!("{value:.1}")
        } else {
            format!("{value:.0}")
        };
        format!("{}{unit}", text.strip_suffix(".0").unwrap_or(&text))
    }
    match count {
        0..1_000 => count.to_string(),
        1_000..999_500 => scaled(count as f64 / 1e3, "k"),
        _ => scaled(count as f64 / 1e6, "M"),
    }
}

/// A session cost in dollars: four decimals below a dollar (`$0.0123`), two from there
/// (`$12.30`), and `$0.00` for nothing spent.
pub fn format_cost(dollars: f64) -> String {
    if !dollars.is_finite() || dollars <= 0.0 {
        "$0.00".to_owned()
    } else if dollars < 1.0 {
        format!("${dollars:.4}")
    } else {
        format!("${dollars:.2}")
    }
}

/// A duration to the minute (the footer changes once a minute, not every second): `0m`, `12m`,
/// `1h05m`.
pub fn format_duration(secs: u64) -> String {
    let (hours, minutes) = (secs / 3600, (secs / 60) % 60);
    if hours > 0 {
        format!("{hours}h{minutes:02}m")
    } else {
        format!("{minutes}m")
    }
}

/// Longest status message or notice shown; a longer one is cut at a word.
const MAX_MESSAGE: usize = 48;
/// Longest session name shown; a longer one is cut at a word.
const MAX_SESSION: usize = 32;

/// Pi's state: the process (starting, exited), Pi's own program status (OSC 7501), and the
/// bridge's view (working, compacting, disconnected), folded into the one word that matters most.
pub(super) fn state(model: &FooterModel, data: &FooterData) -> Segment {
    let forms = match model.pi {
        PiRunState::Starting => vec![Form::new("pi starting", Role::Muted)],
        PiRunState::Exited { code: Some(code) } => {
            vec![Form::new(format!("pi exited {code}"), Role::Error)]
        }
        PiRunState::Exited { code: None } => vec![Form::new("pi exited (signal)", Role::Error)],
        PiRunState::Running => running_state(model.status.as_ref(), data),
    };
    let error = model.pi == PiRunState::Running
        && model
            .status
            .as_ref()
            .is_some_and(|status| status.state == ProgramState::Error);
    let detail = if error {
        priority::ERROR_DETAIL
    } else {
        priority::STATE_DETAIL
    };
    let mut forms = forms.into_iter();
    let first = forms.next().unwrap_or_default();
    forms.fold(
        Segment::new("state", priority::STATE, Align::Left, first)
            .detail(detail)
            .from_preset(Preset::Minimal),
        Segment::or,
    )
}

/// The state's forms, longest first, while Pi's process runs.
fn running_state(status: Option<&StatusSegment>, data: &FooterData) -> Vec<Form> {
    let osc = status.map(|status| status.state);
    let message = status
        .and_then(|status| status.message.as_deref())
        .map(first_line)
        .filter(|message| !message.is_empty());
    // `prefix: message`, the message shortened a word at a time.
    let with_message = |prefix: &str, role: Role| -> Vec<Form> {
        let texts = message.as_deref().map(|m| word_forms(m, MAX_MESSAGE));
        texts
            .unwrap_or_default()
            .into_iter()
            .map(|text| Form::new(format!("{prefix}: {text}"), role))
            .collect()
    };
    // A dialog waiting for the user, or an error, outranks everything the bridge can say.
    match osc {
        Some(ProgramState::Blocked) => {
            let role = Role::Status(ProgramState::Blocked);
            let waiting = "◆ blocked — waiting for you";
            let mut forms = with_message(waiting, role);
            forms.extend([Form::new(waiting, role), Form::new("◆ blocked", role)]);
            return forms;
        }
        Some(ProgramState::Error) => {
            let role = Role::Status(ProgramState::Error);
            let mut forms = with_message("✗ error", role);
            forms.push(Form::new("✗ error", role));
            return forms;
        }
        _ => {}
    }
    // The bridge's activity is stale once it is gone; only Pi's own status is current then.
    let activity = (data.bridge != BridgeLink::Disconnected)
        .then_some(data.activity)
        .flatten();
    let working = Role::Status(ProgramState::Working);
    // Inside a run: what Pi is doing now ("● running bash"), shortened to "● working".
    if activity == Some(Activity::Working)
        && let Some(doing) = data.doing.as_deref().map(first_line)
        && !doing.is_empty()
        && data.bridge != BridgeLink::Disconnected
    {
        let mut forms: Vec<Form> = word_forms(&doing, MAX_MESSAGE)
            .into_iter()
            .map(|text| Form::new(format!("● {text}"), working))
            .collect();
        forms.push(Form::new("● working", working));
        return forms;
    }
    let (text, role) = match (activity, osc) {
        (Some(Activity::Compacting), _) => ("◐ compacting", working),
        (Some(Activity::Working), _) | (_, Some(ProgramState::Working)) => ("● working", working),
        (_, Some(ProgramState::Done)) => ("✓ done", Role::Status(ProgramState::Done)),
        (Some(Activity::Idle), _) | (_, Some(ProgramState::Idle)) => {
            ("○ idle", Role::Status(ProgramState::Idle))
        }
        _ => ("pi running", Role::Muted),
    };
    if data.bridge == BridgeLink::Disconnected {
        let alone = Form::new("⚠ disconnected", Role::Warning);
        let with_activity = alone.clone().then(" · ", Role::Muted).then(text, role);
        return vec![with_activity, alone];
    }
    vec![Form::new(text, role)]
}

/// Other extensions' statuses (Pi's `ctx.ui.setStatus` line), joined; they give way before
/// anything of the workbench's own, first dropping the later ones.
pub(super) fn extension_statuses(data: &FooterData) -> Option<Segment> {
    let statuses: Vec<&str> = data
        .extension_statuses
        .iter()
        .map(|status| status.trim())
        .filter(|status| !status.is_empty())
        .collect();
    if statuses.is_empty() {
        return None;
    }
    let mut forms = (1..=statuses.len()).rev().map(|count| {
        let mut text = statuses[..count].join(" · ");
        if count < statuses.len() {
            text.push_str(" …");
        }
        Form::new(text, Role::Muted)
    });
    let first = forms.next().unwrap_or_default();
    Some(forms.fold(
        Segment::new(
            "extension_statuses",
            priority::EXTENSION_STATUSES,
            Align::Right,
            first,
        ),
        Segment::or,
    ))
}

/// The model, and its thinking level when the `thinking_level` toggle allows.
pub(super) fn model(data: &FooterData, settings: &FooterSettings) -> Option<Segment> {
    let name = data
        .model
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty())?;
    let thinking = data
        .thinking_level
        .as_deref()
        .map(str::trim)
        .filter(|level| !level.is_empty() && *level != "off")
        .filter(|_| settings.shows_id(super::CORE_GROUP, "thinking_level", Preset::Default));
    let plain = Form::new(name, Role::Accent);
    let long = match thinking {
        Some(level) => plain
            .clone()
            .then(" · ", Role::Muted)
            .then(level, Role::Muted),
        None => plain.clone(),
    };
    // "anthropic/claude-sonnet-4-5" → "claude-sonnet-4-5": the provider is the least telling.
    let bare = name
        .rsplit_once('/')
        .map(|(_, bare)| Form::new(bare, Role::Accent));
    let segment = Segment::new("model", priority::MODEL, Align::Left, long)
        .detail(priority::MODEL_DETAIL)
        .from_preset(Preset::Minimal)
        .with_icon(Icon::Model)
        .or(plain);
    Some(match bare {
        Some(bare) => segment.or(bare),
        None => segment,
    })
}

/// The session's name, in quotes so it does not read as a path or a model.
pub(super) fn session(data: &FooterData) -> Option<Segment> {
    let name = data
        .session_name
        .as_deref()
        .map(first_line)
        .filter(|name| !name.is_empty())?;
    let mut forms = word_forms(&name, MAX_SESSION)
        .into_iter()
        .map(|text| Form::new(format!("“{text}”"), Role::Text));
    let first = forms.next()?;
    Some(forms.fold(
        Segment::new("session", priority::SESSION, Align::Left, first).with_icon(Icon::Session),
        Segment::or,
    ))
}

/// The working directory (`~` for home), shortened a whole directory at a time.
pub(super) fn cwd(model: &FooterModel) -> Option<Segment> {
    let path = tilde_path(&model.cwd, model.home.as_deref());
    if path.is_empty() {
        return None;
    }
    let mut forms = path_forms(&path)
        .into_iter()
        .map(|p| Form::new(p, Role::Text));
    let first = forms.next()?;
    Some(forms.fold(
        Segment::new("cwd", priority::CWD, Align::Left, first).detail(priority::CWD_DETAIL),
        Segment::or,
    ))
}

/// The git branch; a `feature/x` branch falls back to `x`.
pub(super) fn git(model: &FooterModel) -> Option<Segment> {
    let branch = model.git_branch.as_deref().filter(|b| !b.is_empty())?;
    let segment = Segment::new(
        "git",
        priority::GIT,
        Align::Left,
        Form::new(branch, Role::Accent),
    )
    .from_preset(Preset::Minimal)
    .with_icon(Icon::Git);
    Some(match branch.rsplit_once('/') {
        Some((_, last)) if !last.is_empty() => segment.or(Form::new(last, Role::Accent)),
        _ => segment,
    })
}

/// The host name, for telling sessions on different machines (over SSH) apart.
pub(super) fn hostname(data: &FooterData) -> Option<Segment> {
    let host = data.hostname.as_deref().filter(|h| !h.is_empty())?;
    Some(
        Segment::new(
            "hostname",
            priority::HOSTNAME,
            Align::Left,
            Form::new(format!("@{host}"), Role::Muted),
        )
        .from_preset(Preset::Full)
        .with_icon(Icon::Hostname),
    )
}

/// How far back the user is browsing the pane's history.
pub(super) fn scrollback(model: &FooterModel) -> Option<Segment> {
    let lines = model.scrolled_back?;
    Some(
        Segment::new(
            "scrollback",
            priority::SCROLLBACK,
            Align::Left,
            Form::new(format!("scrolled ↑ {lines}"), Role::Scrollback),
        )
        .detail(priority::SCROLLBACK_DETAIL)
        .from_preset(Preset::Minimal)
        .or(Form::new(format!("↑ {lines}"), Role::Scrollback)),
    )
}

/// Context used: `ctx 45% 90k/200k` → `ctx 45%` → `45%`, in the threshold's style.
pub(super) fn context(data: &FooterData, thresholds: ContextThresholds) -> Option<Segment> {
    let usage = data.context.as_ref().filter(|usage| usage.window > 0)?;
    let window = format_tokens(usage.window);
    let percent = usage.percent.or_else(|| {
        usage
            .tokens
            .map(|tokens| tokens as f64 * 100.0 / usage.window as f64)
    });
    let segment = |form: Form| {
        Segment::new("context_pct", priority::CONTEXT, Align::Right, form)
            .detail(priority::CONTEXT_DETAIL)
            .from_preset(Preset::Minimal)
    };
    // Pi does not know the usage right after a compaction until the next response.
    let Some(percent) = percent.filter(|p| p.is_finite() && *p >= 0.0) else {
        let label = Form::new("ctx ", Role::Muted);
        return Some(
            segment(label.clone().then(format!("?/{window}"), Role::Text))
                .or(label.then("?", Role::Text)),
        );
    };
    let shown = percent.round() as u64;
    let role = thresholds.role(shown);
    let pct = format!("{shown}%");
    let mut long = Form::new("ctx ", Role::Muted).then(pct.clone(), role);
    if let Some(tokens) = usage.tokens {
        long = long.then(format!(" {}/{window}", format_tokens(tokens)), role);
    }
    // Pi's own marker: it compacts by itself when the context fills.
    if data.auto_compaction == Some(true) {
        long = long.then(" (auto)", Role::Muted);
    }
    Some(
        segment(long)
            .or(Form::new("ctx ", Role::Muted).then(pct.clone(), role))
            .or(Form::new(pct, role)),
    )
}

/// Tokens sent and received this session: `12.3k↑ 4.1k↓`; absent until there are any.
pub(super) fn tokens(data: &FooterData) -> Option<Segment> {
    if data.tokens_in == 0 && data.tokens_out == 0 {
        return None;
    }
    let text = format!(
        "{}↑ {}↓",
        format_tokens(data.tokens_in),
        format_tokens(data.tokens_out)
    );
    Some(
        Segment::new(
            "tokens",
            priority::TOKENS,
            Align::Right,
            Form::new(text, Role::Text),
        )
        .with_icon(Icon::Tokens),
    )
}

/// The session's cost so far; absent until Pi reports one.
pub(super) fn cost(data: &FooterData) -> Option<Segment> {
    let dollars = data.cost?;
    Some(
        Segment::new(
            "cost",
            priority::COST,
            Align::Right,
            Form::new(format_cost(dollars), Role::Text),
        )
        .from_preset(Preset::Compact)
        .with_icon(Icon::Cost),
    )
}

/// The model's speed in output tokens per second, coloured by tier, with the session's average:
/// `42 t/s · avg 38` → `42 t/s`.
pub(super) fn tps(data: &FooterData) -> Option<Segment> {
    let rate = data
        .rate
        .filter(|rate| rate.last.is_finite() && rate.last >= 0.0)?;
    let last = Form::new(format!("{:.0} t/s", rate.last), tps_role(rate.last));
    let long = last
        .clone()
        .then(format!(" · avg {:.0}", rate.average), Role::Muted);
    Some(
        Segment::new("tps", priority::TPS, Align::Right, long)
            .detail(priority::TOKENS_APART)
            .from_preset(Preset::Compact)
            .with_icon(Icon::Tps)
            .or(last),
    )
}

/// Unipi's tiers: above 200 blazing, above 100 fast, above 50 good, above 30 moderate, else
/// slow.
pub(super) fn tps_role(rate: f64) -> Role {
    match rate {
        r if r > 200.0 => Role::Accent,
        r if r > 100.0 => Role::Status(ProgramState::Done),
        r if r > 50.0 => Role::Text,
        r if r > 30.0 => Role::Warning,
        _ => Role::Error,
    }
}

/// How the model's API answered last: `api ok`, `api error: 429 rate limited`.
pub(super) fn api_state(data: &FooterData) -> Option<Segment> {
    let api = data.api.as_ref()?;
    let segment = |form: Form| {
        Segment::new("api_state", priority::API, Align::Left, form).with_icon(Icon::ApiState)
    };
    let working = Role::Status(ProgramState::Working);
    Some(match api {
        ApiState::Waiting => segment(Form::new("api waiting", Role::Muted)),
        ApiState::Streaming => segment(Form::new("api streaming", working)),
        ApiState::Ok => segment(Form::new("api ok", Role::Status(ProgramState::Done))),
        ApiState::Error(message) => {
            let short = Form::new("api error", Role::Error);
            let mut forms = word_forms(&first_line(message), MAX_MESSAGE / 2)
                .into_iter()
                .map(|text| Form::new(format!("api error: {text}"), Role::Error));
            let first = forms.next().unwrap_or_else(|| short.clone());
            forms
                .fold(segment(first).detail(priority::ERROR_DETAIL), Segment::or)
                .or(short)
        }
    })
}

/// Tools Pi ran this session: `3 tools`; absent before the first.
pub(super) fn tool_count(data: &FooterData) -> Option<Segment> {
    let count = data.tool_calls;
    if count == 0 {
        return None;
    }
    let text = if count == 1 {
        "1 tool".to_owned()
    } else {
        format!("{count} tools")
    };
    Some(
        Segment::new(
            "tool_count",
            priority::TOOL_COUNT,
            Align::Left,
            Form::new(text, Role::Text),
        )
        .with_icon(Icon::ToolCount),
    )
}

/// Input tokens alone (the full preset).
pub(super) fn tokens_in(data: &FooterData) -> Option<Segment> {
    apart("tokens_in", "in", data.tokens_in, Icon::TokensIn)
}

/// Output tokens alone (the full preset).
pub(super) fn tokens_out(data: &FooterData) -> Option<Segment> {
    apart("tokens_out", "out", data.tokens_out, Icon::TokensOut)
}

fn apart(id: &str, label: &str, count: u64, icon: Icon) -> Option<Segment> {
    (count > 0).then(|| {
        Segment::new(
            id,
            priority::TOKENS_APART,
            Align::Right,
            Form::new(format!("{label} "), Role::Muted).then(format_tokens(count), Role::Text),
        )
        .from_preset(Preset::Full)
        .with_icon(icon)
    })
}

/// The local time, `14:05`.
pub(super) fn clock(model: &FooterModel) -> Option<Segment> {
    let time = model.clock.as_deref().filter(|time| !time.is_empty())?;
    Some(
        Segment::new(
            "clock",
            priority::CLOCK,
            Align::Right,
            Form::new(time, Role::Muted),
        )
        .from_preset(Preset::Compact)
        .with_icon(Icon::Clock),
    )
}

/// How long the session has run: `12m`, `1h05m`.
pub(super) fn duration(model: &FooterModel) -> Option<Segment> {
    let secs = model.session_secs?;
    Some(
        Segment::new(
            "duration",
            priority::DURATION,
            Align::Right,
            Form::new(format_duration(secs), Role::Muted),
        )
        .from_preset(Preset::Compact)
        .with_icon(Icon::Duration),
    )
}

/// The key hint ("F1 help") or a passing notice in its place, at the right end. One form only:
/// half a hint ("F1…") tells nothing.
pub(super) fn hint(model: &FooterModel) -> Option<Segment> {
    if let Some(notice) = model
        .notice
        .as_deref()
        .map(first_line)
        .filter(|n| !n.is_empty())
    {
        // Every form, the whole notice first: it takes the room the model and the context would
        // have for its few seconds, and is cut at a word only when the row is too narrow.
        let mut forms = word_forms(&notice, usize::MAX).into_iter();
        let whole = Form::new(forms.next()?, Role::KeyHint);
        let segment = forms.fold(
            Segment::new("hint", priority::NOTICE, Align::Right, whole),
            |segment, shorter| segment.or(Form::new(shorter, Role::KeyHint)),
        );
        return Some(segment.from_preset(Preset::Minimal));
    }
    let text = model
        .hint
        .as_deref()
        .map(first_line)
        .filter(|h| !h.is_empty())?;
    let text = word_forms(&text, MAX_MESSAGE).into_iter().next()?;
    Some(
        Segment::new(
            "hint",
            priority::HINT,
            Align::Right,
            Form::new(text, Role::KeyHint),
        )
        .from_preset(Preset::Minimal),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::footer::ContextUsage;

    fn form_texts(segment: &Segment) -> Vec<String> {
        segment.forms.iter().map(Form::text).collect()
    }

    #[test]
    fn format_tokens_table() {
        let cases = [
            (0, "0"),
            (950, "950"),
            (999, "999"),
            (1_000, "1k"),
            (1_500, "1.5k"),
            (12_345, "12.3k"),
            (90_000, "90k"),
            (99_949, "99.9k"),
            (99_950, "100k"),
            (200_000, "200k"),
            (999_499, "999k"),
            (999_500, "1M"),
            (1_250_000, "1.2M"),
            (15_000_000, "15M"),
            (250_000_000, "250M"),
        ];
        for (count, want) in cases {
            assert_eq!(format_tokens(count), want, "format_tokens({count})");
        }
    }

    #[test]
    fn format_cost_table() {
        let cases = [
            (0.0, "$0.00"),
            (-1.0, "$0.00"),
            (f64::NAN, "$0.00"),
            (0.0123, "$0.0123"),
            (0.00004, "$0.0000"),
            (0.99994, "$0.9999"),
            (1.0, "$1.00"),
            (12.3, "$12.30"),
        ];
        for (dollars, want) in cases {
            assert_eq!(format_cost(dollars), want, "format_cost({dollars})");
        }
    }

    #[test]
    fn format_duration_table() {
        let cases = [
            (0, "0m"),
            (59, "0m"),
            (754, "12m"),
            (3600, "1h00m"),
            (3900, "1h05m"),
        ];
        for (secs, want) in cases {
            assert_eq!(format_duration(secs), want, "{secs}");
        }
    }

    fn running(status: Option<(ProgramState, Option<&str>)>) -> FooterModel {
        FooterModel {
            pi: PiRunState::Running,
            status: status.map(|(state, message)| StatusSegment {
                state,
                message: message.map(str::to_owned),
            }),
            cwd: "/home/ada/src".to_owned(),
            home: Some("/home/ada".to_owned()),
            git_branch: None,
            scrolled_back: None,
            hint: None,
            notice: None,
            clock: None,
            session_secs: None,
        }
    }

    #[test]
    fn state_table() {
        use ProgramState::{Blocked, Done, Error, Idle, Working};
        let bridge = |link, activity| FooterData {
            bridge: link,
            activity,
            ..FooterData::default()
        };
        let none = FooterData::default();
        let working = bridge(BridgeLink::Connected, Some(Activity::Working));
        let compacting = bridge(BridgeLink::Connected, Some(Activity::Compacting));
        let idle = bridge(BridgeLink::Connected, Some(Activity::Idle));
        let gone = bridge(BridgeLink::Disconnected, Some(Activity::Working));
        let cases: [(FooterModel, &FooterData, &[&str]); 12] = [
            (running(None), &none, &["pi running"]),
            (running(Some((Idle, None))), &none, &["○ idle"]),
            (running(None), &working, &["● working"]),
            (running(Some((Idle, None))), &working, &["● working"]),
            (running(Some((Working, None))), &idle, &["● working"]),
            (running(Some((Done, None))), &idle, &["✓ done"]),
            (
                running(Some((Working, None))),
                &compacting,
                &["◐ compacting"],
            ),
            (
                running(Some((
                    Blocked,
                    Some("Sign in to continue with your browser"),
                ))),
                &compacting,
                &[
                    "◆ blocked — waiting for you: Sign in to continue with your browser",
                    "◆ blocked — waiting for you: Sign in to continue with your…",
                    "◆ blocked — waiting for you: Sign in to continue with…",
                    "◆ blocked — waiting for you: Sign in to continue…",
                    "◆ blocked — waiting for you: Sign in to…",
                    "◆ blocked — waiting for you: Sign in…",
                    "◆ blocked — waiting for you: Sign…",
                    "◆ blocked — waiting for you",
                    "◆ blocked",
                ],
            ),
            (
                running(Some((Error, Some("429 rate limited\nretry")))),
                &working,
                &[
                    "✗ error: 429 rate limited",
                    "✗ error: 429 rate…",
                    "✗ error: 429…",
                    "✗ error",
                ],
            ),
            // Gone: the bridge's "working" is stale, Pi's own status still counts.
            (
                running(Some((Idle, None))),
                &gone,
                &["⚠ disconnected · ○ idle", "⚠ disconnected"],
            ),
            (
                running(None),
                &gone,
                &["⚠ disconnected · pi running", "⚠ disconnected"],
            ),
            (
                FooterModel {
                    pi: PiRunState::Exited { code: Some(1) },
                    ..running(Some((Working, None)))
                },
                &gone,
                &["pi exited 1"],
            ),
        ];
        for (model, data, want) in cases {
            let segment = state(&model, data);
            assert_eq!(form_texts(&segment), want, "{:?} {data:?}", model.status);
            assert_eq!(segment.id, "state");
            assert_eq!(segment.priority, priority::STATE);
        }
    }

    #[test]
    fn context_forms_and_roles() {
        let data = |tokens, window, percent| FooterData {
            context: Some(ContextUsage {
                tokens,
                window,
                percent,
            }),
            ..FooterData::default()
        };
        let thresholds = ContextThresholds::default();
        let cases: [(FooterData, &[&str], Role); 6] = [
            (
                data(Some(90_000), 200_000, Some(45.0)),
                &["ctx 45% 90k/200k", "ctx 45%", "45%"],
                Role::Text,
            ),
            // The percentage is worked out when Pi gives only tokens.
            (
                data(Some(130_000), 200_000, None),
                &["ctx 65% 130k/200k", "ctx 65%", "65%"],
                Role::Warning,
            ),
            // Rounded first, so the colour matches the number shown.
            (
                data(Some(169_900), 200_000, Some(84.95)),
                &["ctx 85% 170k/200k", "ctx 85%", "85%"],
                Role::Error,
            ),
            (
                data(None, 200_000, Some(12.0)),
                &["ctx 12%", "12%"],
                Role::Text,
            ),
            (
                data(None, 200_000, None),
                &["ctx ?/200k", "ctx ?"],
                Role::Text,
            ),
            (data(None, 0, None), &[], Role::Text),
        ];
        for (data, want, role) in cases {
            let segment = context(&data, thresholds);
            let texts = segment.as_ref().map(form_texts).unwrap_or_default();
            assert_eq!(texts, want, "{:?}", data.context);
            if let Some(segment) = segment {
                for form in &segment.forms {
                    assert_eq!(form.pieces.last().map(|p| p.role), Some(role), "{form:?}");
                }
            }
        }
    }

    #[test]
    fn model_forms_follow_the_thinking_toggle() {
        let data = FooterData {
            model: Some("anthropic/claude-sonnet-4-5".to_owned()),
            thinking_level: Some("high".to_owned()),
            ..FooterData::default()
        };
        let settings = FooterSettings::default();
        let texts = model(&data, &settings).map(|s| form_texts(&s));
        assert_eq!(
            texts.unwrap_or_default(),
            [
                "anthropic/claude-sonnet-4-5 · high",
                "anthropic/claude-sonnet-4-5",
                "claude-sonnet-4-5"
            ]
        );
        let minimal = FooterSettings {
            preset: Preset::Minimal,
            ..FooterSettings::default()
        };
        let texts = model(&data, &minimal).map(|s| form_texts(&s));
        assert_eq!(
            texts.unwrap_or_default(),
            ["anthropic/claude-sonnet-4-5", "claude-sonnet-4-5"]
        );
        let off = FooterData {
            thinking_level: Some("off".to_owned()),
            model: Some("gpt-5".to_owned()),
            ..FooterData::default()
        };
        assert_eq!(
            model(&off, &settings)
                .map(|s| form_texts(&s))
                .unwrap_or_default(),
            ["gpt-5"]
        );
    }

    #[test]
    fn session_names_are_cut_at_words() {
        let data = FooterData {
            session_name: Some("refactor the bridge socket handshake and tests".to_owned()),
            ..FooterData::default()
        };
        let texts = session(&data).map(|s| form_texts(&s)).unwrap_or_default();
        assert_eq!(
            texts,
            [
                "“refactor the bridge socket…”",
                "“refactor the bridge…”",
                "“refactor the…”",
                "“refactor…”"
            ]
        );
    }
}
