//! The footer's state: what the app knows about Pi's process, Pi's program status, the working
//! directory and git branch, the time, the model's speed, and a short notice. It turns that into
//! the pure widget's model on every frame; the capabilities' segments join it there. It also
//! decides the footer's height: one row, or two when the overflow row is on and the segments
//! need it — kept while the width stays, so Pi's pane is not resized back and forth as segments
//! come and go.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use unipi_widgets::footer::{
    FooterData, FooterModel, FooterSettings, PiRunState, ProgramState, Segment, StatusSegment,
    TokenRate, build_segments, detect_nerd_font, rows_needed,
};

use crate::config::footer::FooterConfig;
use crate::config::live::LiveConfig;

use crate::bridge::PiEvent;
use crate::config::keymap::{Action, Keymap};
use crate::pane::emulator::{ProgramState as PiState, ProgramStatus};
use crate::pane::pty::ChildExit;

/// How long a notice replaces the key hint.
const NOTICE_FOR: Duration = Duration::from_secs(4);

pub(crate) struct FooterState {
    /// `footer.json`, followed: read again when the terminal regains focus or the agent
    /// settles (the moments a user who edited it comes back to look), never per frame.
    source: LiveConfig<FooterConfig>,
    config: Arc<FooterConfig>,
    /// The config's settings with what the terminal says about Nerd Fonts.
    settings: FooterSettings,
    /// Whether the environment says the terminal draws Nerd Font glyphs (read once).
    nerd_font: bool,
    /// The width at which the segments took a second row (kept while the width stays).
    overflow_at: Option<u16>,
    /// When the session started (the duration segment).
    session_started: Option<Instant>,
    /// The model's speed, measured from its stream.
    rate: RateMeter,
    /// Whether the last frame showed a segment that moves with the clock.
    timed: bool,
    /// The time the clock shows instead of the real one (screen snapshots).
    fixed_clock: Option<String>,
    /// What the bridge reports (model, context, tokens, cost…); filled from events.
    pub data: FooterData,
    pi: PiRunState,
    status: Option<StatusSegment>,
    cwd: PathBuf,
    home: Option<String>,
    git_branch: Option<String>,
    help_hint: Option<String>,
    return_keys: Option<String>,
    notice: Option<(String, Instant)>,
}

impl FooterState {
    /// The footer for a session in `workspace`.
    pub(super) fn new(keymap: &Keymap, source: LiveConfig<FooterConfig>, workspace: &Path) -> Self {
        let cwd = workspace.to_path_buf();
        let bindings = keymap.bindings();
        let keys_for = |action: Action| {
            bindings
                .iter()
                .filter(|(_, a)| *a == action)
                .map(|(k, _)| k.clone())
                .collect::<Vec<_>>()
        };
        let help_hint = keys_for(Action::Help).first().map(|k| format!("{k} help"));
        let mut return_keys = keys_for(Action::ScrollLive);
        return_keys.extend(keys_for(Action::ScrollPageDown).into_iter().take(1));
        let git_branch = git_branch(&cwd);
        let nerd_font = detect_nerd_font(|key| std::env::var(key).ok());
        let config = source.get();
        FooterState {
            settings: settings_of(&config, nerd_font),
            config,
            nerd_font,
            overflow_at: None,
            session_started: None,
            rate: RateMeter::default(),
            timed: false,
            fixed_clock: None,
            source,
            data: FooterData {
                hostname: hostname(),
                ..FooterData::default()
            },
            pi: PiRunState::Starting,
            status: None,
            home: dirs::home_dir().map(|h| h.to_string_lossy().into_owned()),
            git_branch,
            cwd,
            help_hint,
            return_keys: (!return_keys.is_empty()).then(|| return_keys.join("/")),
            notice: None,
        }
    }

    pub(crate) fn pi_output_seen(&mut self) {
        if self.pi == PiRunState::Starting {
            self.pi = PiRunState::Running;
        }
    }

    pub(crate) fn pi_exited(&mut self, exit: ChildExit) {
        self.pi = PiRunState::Exited {
            code: match exit {
                ChildExit::Code(code) => Some(code),
                ChildExit::Signal(_) => None,
            },
        };
    }

    pub(crate) fn set_program_status(&mut self, status: ProgramStatus) {
        self.status = Some(StatusSegment {
            state: match status.state {
                PiState::Idle => ProgramState::Idle,
                PiState::Working => ProgramState::Working,
                PiState::Blocked => ProgramState::Blocked,
                PiState::Done => ProgramState::Done,
                PiState::Error => ProgramState::Error,
            },
            message: status.message,
        });
        // A run ending is a good moment to notice a branch switch.
        self.refresh_git_branch();
    }

    pub(crate) fn clear_program_status(&mut self) {
        self.status = None;
    }

    pub(crate) fn refresh_git_branch(&mut self) {
        self.git_branch = git_branch(&self.cwd);
    }

    /// Takes `footer.json` as it is now (a few `stat` calls; read only when it changed).
    pub(crate) fn refresh_config(&mut self) {
        let config = self.source.get();
        if !Arc::ptr_eq(&config, &self.config) {
            self.settings = settings_of(&config, self.nerd_font);
            self.config = config;
            // The look may have changed: the row count is decided again.
            self.overflow_at = None;
        }
    }

    /// One of the main Pi's events: its figures for the footer, and the clocks the app keeps
    /// (the session's start, the model's speed).
    pub(crate) fn on_pi_event(&mut self, event: &PiEvent) {
        let now = Instant::now();
        match event {
            PiEvent::SessionStart(start)
                if start.reason != "reload" || self.session_started.is_none() =>
            {
                self.session_started = Some(now);
                self.rate = RateMeter::default();
                self.data.rate = None;
            }
            PiEvent::StreamPhase { .. } => self.rate.streaming(now),
            PiEvent::MessageEnd(end) => {
                if let Some(rate) = self.rate.finished(end.usage.output, now) {
                    self.data.rate = Some(rate);
                }
            }
            _ => {}
        }
        super::bridge::apply_pi_event(&mut self.data, event);
    }

    /// The clock shows `time` from now on, not the real time (screen snapshots).
    #[cfg(test)]
    pub(crate) fn fix_clock(&mut self, time: &str) {
        self.fixed_clock = Some(time.to_owned());
    }

    /// The settings in force (the preset, toggles and look).
    pub(crate) fn settings(&self) -> &FooterSettings {
        &self.settings
    }

    /// The footer's height at `width` for `segments`: 0 when it is off, 2 when the overflow row
    /// is on and they do not fit one row (kept while the width stays), else 1.
    pub(super) fn rows(&mut self, width: u16, segments: &[Segment]) -> u16 {
        if !self.config.enabled {
            return 0;
        }
        if !self.settings.overflow_row() {
            return 1;
        }
        if self.overflow_at == Some(width) {
            return 2;
        }
        if rows_needed(segments, &self.settings, width) > 1 {
            self.overflow_at = Some(width);
            return 2;
        }
        1
    }

    pub(super) fn set_notice(&mut self, text: &str) {
        self.notice = Some((text.to_string(), Instant::now()));
    }

    /// The keys that return from scrollback to live output, for the scrollback badge.
    pub(super) fn return_keys(&self) -> Option<String> {
        self.return_keys.clone()
    }

    /// The segments to draw this frame: the workbench's own plus `extra` from modules.
    pub(super) fn segments(
        &mut self,
        scrolled_back: usize,
        extra: impl IntoIterator<Item = Segment>,
    ) -> Vec<Segment> {
        let model = self.model(scrolled_back);
        let segments = build_segments(&model, &self.data, &self.settings, extra);
        self.timed = segments
            .iter()
            .any(|segment| segment.id == "clock" || segment.id == "duration");
        segments
    }

    fn model(&mut self, scrolled_back: usize) -> FooterModel {
        if self
            .notice
            .as_ref()
            .is_some_and(|(_, at)| at.elapsed() > NOTICE_FOR)
        {
            self.notice = None;
        }
        FooterModel {
            pi: self.pi,
            status: self.status.clone(),
            cwd: self.cwd.to_string_lossy().into_owned(),
            home: self.home.clone(),
            git_branch: self.git_branch.clone(),
            scrolled_back: (scrolled_back > 0).then_some(scrolled_back),
            hint: self.help_hint.clone(),
            notice: self.notice.as_ref().map(|(text, _)| text.clone()),
            clock: Some(self.fixed_clock.clone().unwrap_or_else(clock_now)),
            session_secs: self.session_started.map(|at| at.elapsed().as_secs()),
        }
    }

    /// When the footer changes by itself next — its notice goes, or the clock or the session's
    /// duration turns a minute — so the loop schedules a frame then.
    pub(crate) fn notice_deadline(&self) -> Option<Instant> {
        let notice = self.notice.as_ref().map(|(_, at)| *at + NOTICE_FOR);
        let minute = self.timed.then(|| self.next_minute());
        notice.into_iter().chain(minute).min()
    }

    /// The next moment the clock or the duration shows another minute.
    fn next_minute(&self) -> Instant {
        let now = Instant::now();
        let into_minute = crate::sys::unix_seconds() % 60;
        let clock = now + Duration::from_secs(60 - into_minute);
        let duration = self.session_started.map(|start| {
            let into = start.elapsed().as_secs() % 60;
            now + Duration::from_secs(60 - into)
        });
        duration.map_or(clock, |duration| duration.min(clock))
    }
}

/// The config's settings, with the terminal's Nerd Font as detected.
fn settings_of(config: &FooterConfig, nerd_font: bool) -> FooterSettings {
    let mut settings = config.settings.clone();
    settings.look.nerd_font = nerd_font;
    settings
}

/// The local time, `HH:MM`.
fn clock_now() -> String {
    let (hours, minutes, _) = crate::sys::time::local_time_of_day(crate::sys::unix_seconds());
    format!("{hours:02}:{minutes:02}")
}

/// The model's output speed: each response's tokens over the time from its stream's first event
/// to its end, and the session's average over all of them. Pi reports no tokens while it
/// streams, so the figure is the finished response's.
#[derive(Debug, Default)]
struct RateMeter {
    /// When the current response began streaming.
    started: Option<Instant>,
    tokens: u64,
    seconds: f64,
}

/// Shortest stream measured: a response that came whole at once (a cached or scripted one)
/// would otherwise have no speed at all.
const SHORTEST_STREAM: Duration = Duration::from_millis(50);

impl RateMeter {
    fn streaming(&mut self, now: Instant) {
        self.started.get_or_insert(now);
    }

    /// A response ended with `output` tokens: its speed and the session's average (`None` when
    /// it streamed nothing).
    fn finished(&mut self, output: u64, now: Instant) -> Option<TokenRate> {
        let started = self.started.take()?;
        if output == 0 {
            return None;
        }
        let seconds = now
            .saturating_duration_since(started)
            .max(SHORTEST_STREAM)
            .as_secs_f64();
        self.tokens += output;
        self.seconds += seconds;
        Some(TokenRate {
            last: output as f64 / seconds,
            average: self.tokens as f64 / self.seconds,
        })
    }
}

/// This machine's name (shown by the `full` preset), read once.
fn hostname() -> Option<String> {
    nix::unistd::gethostname()
        .ok()
        .map(|name| name.to_string_lossy().into_owned())
        .filter(|name| !name.is_empty())
}

/// The branch checked out in the repository containing `dir` (`None` outside git; a short hash
/// when HEAD is detached). Reads `.git/HEAD` directly: no git process per frame.
pub(super) fn git_branch(dir: &Path) -> Option<String> {
    for candidate in dir.ancestors() {
        let dot_git = candidate.join(".git");
        let git_dir = if dot_git.is_dir() {
            dot_git
        } else if dot_git.is_file() {
            // Worktrees and submodules: ".git" is a file saying "gitdir: <path>".
            let text = std::fs::read_to_string(&dot_git).ok()?;
            let path = text.trim().strip_prefix("gitdir:")?.trim();
            candidate.join(path)
        } else {
            continue;
        };
        let head = std::fs::read_to_string(git_dir.join("HEAD")).ok()?;
        let head = head.trim();
        return Some(match head.strip_prefix("ref: ") {
            Some(reference) => reference
                .strip_prefix("refs/heads/")
                .unwrap_or(reference)
                .to_string(),
            None => head.chars().take(8).collect(),
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `text` to `path` under `dir`, making its directories.
    fn put(dir: &Path, path: &str, text: &str) {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn reads_the_branch_from_head_in_a_parent_directory() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), ".git/HEAD", "ref: refs/heads/feature/x\n");
        std::fs::create_dir_all(dir.path().join("src/deep")).unwrap();
        assert_eq!(
            git_branch(&dir.path().join("src/deep")).as_deref(),
            Some("feature/x")
        );
        put(dir.path(), ".git/HEAD", "0123456789abcdef\n");
        assert_eq!(git_branch(dir.path()).as_deref(), Some("01234567"));
    }

    #[test]
    fn the_rate_is_a_responses_tokens_over_its_stream() {
        let mut meter = RateMeter::default();
        let t0 = Instant::now();
        assert_eq!(meter.finished(100, t0), None, "no stream, no speed");
        meter.streaming(t0);
        meter.streaming(t0 + Duration::from_millis(500));
        let rate = meter.finished(100, t0 + Duration::from_secs(2));
        assert_eq!(
            rate,
            Some(TokenRate {
                last: 50.0,
                average: 50.0
            })
        );
        meter.streaming(t0 + Duration::from_secs(3));
        let rate = meter.finished(300, t0 + Duration::from_secs(4));
        assert_eq!(
            rate,
            Some(TokenRate {
                last: 300.0,
                average: 400.0 / 3.0
            })
        );
        // A response that came whole is measured over the shortest stream.
        meter.streaming(t0);
        let rate = meter.finished(10, t0);
        assert_eq!(rate.map(|r| r.last), Some(200.0));
    }

    #[test]
    fn follows_a_gitdir_file() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), "real/HEAD", "ref: refs/heads/main\n");
        put(dir.path(), "wt/.git", "gitdir: ../real\n");
        assert_eq!(git_branch(&dir.path().join("wt")).as_deref(), Some("main"));
    }
}
