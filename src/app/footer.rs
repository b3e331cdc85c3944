//! The footer's state: what the app knows about Pi's process, Pi's program status, the working
//! directory and git branch, and a short notice. It turns that into the pure widget's model on
//! every frame; the capabilities' segments join it there.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use unipi_widgets::footer::{
    FooterData, FooterModel, PiRunState, ProgramState, Segment, StatusSegment, build_segments,
};

use crate::config::footer::FooterConfig;
use crate::config::live::LiveConfig;

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
        FooterState {
            config: source.get(),
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
        self.config = self.source.get();
    }

    pub(super) fn set_notice(&mut self, text: &str) {
        self.notice = Some((text.to_string(), Instant::now()));
    }

    /// The keys that return from scrollback to live output, for the scrollback badge.
    pub(super) fn return_keys(&self) -> Option<String> {
        self.return_keys.clone()
    }

    /// Whether the footer row is shown at all (`enabled` in footer.json).
    pub(super) fn enabled(&self) -> bool {
        self.config.enabled
    }

    /// The segments to draw this frame: the workbench's own plus `extra` from modules.
    pub(super) fn segments(
        &mut self,
        scrolled_back: usize,
        extra: impl IntoIterator<Item = Segment>,
    ) -> Vec<Segment> {
        let model = self.model(scrolled_back);
        build_segments(&model, &self.data, &self.config.settings, extra)
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
        }
    }

    /// When the notice must disappear (the loop schedules a frame for it).
    pub(crate) fn notice_deadline(&self) -> Option<Instant> {
        self.notice.as_ref().map(|(_, at)| *at + NOTICE_FOR)
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
    fn follows_a_gitdir_file() {
        let dir = tempfile::tempdir().unwrap();
        put(dir.path(), "real/HEAD", "ref: refs/heads/main\n");
        put(dir.path(), "wt/.git", "gitdir: ../real\n");
        assert_eq!(git_branch(&dir.path().join("wt")).as_deref(), Some("main"));
    }
}
