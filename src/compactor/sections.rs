//! Stage 3: the structured part of a summary, pulled from normalized blocks by fixed rules —
//! session goals, files and changes, commits, outstanding context (errors and blockers near the
//! end) and user preferences. Deterministic and bounded per section (the caps come from the
//! TypeScript original) so a summary never grows with the session; every pattern is compiled
//! once.

use std::collections::HashSet;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use super::normalize::{BlockKind, NormBlock, clip_sentence, literal_regex};

pub(crate) const MAX_GOALS: usize = 6;
pub(crate) const MAX_PREFERENCES: usize = 12;
/// Preferences taken from one message at most: a pasted spec is one voice, not twelve.
pub(crate) const MAX_PREFERENCES_PER_MESSAGE: usize = 2;
/// A message with more preference-like sentences than this is a spec (see `preferences`).
const SPEC_SENTENCES: usize = 3;
pub(crate) const MAX_OUTSTANDING: usize = 12;
pub(crate) const MAX_FILES_PER_CATEGORY: usize = 25;
pub(crate) const MAX_COMMITS: usize = 12;
/// Blocker sentences count only near the end of the summarized range (an old complaint was
/// dealt with); failed calls and to-dos count from the whole session.
pub(crate) const OUTSTANDING_WINDOW: usize = 20;

/// The extracted sections; lists are in first-seen order, deduplicated.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sections {
    pub goals: Vec<String>,
    pub files: FileActivity,
    pub commits: Vec<String>,
    pub outstanding: Vec<String>,
    pub preferences: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileActivity {
    pub modified: Vec<String>,
    pub created: Vec<String>,
    pub read: Vec<String>,
}

pub fn build_sections(blocks: &[NormBlock]) -> Sections {
    let goals = goals(blocks);
    let preferences = preferences(blocks, &goals);
    Sections {
        files: files(blocks),
        commits: commits(blocks),
        outstanding: outstanding(blocks),
        goals,
        preferences,
    }
}

impl FileActivity {
    /// `Modified: a, b (+N more)` lines in the order Modified, Created, Read; the most recent
    /// paths win the cap.
    pub fn lines(&self) -> Vec<String> {
        [
            ("Modified", &self.modified),
            ("Created", &self.created),
            ("Read", &self.read),
        ]
        .into_iter()
        .filter(|(_, paths)| !paths.is_empty())
        .map(|(label, paths)| {
            let skip = paths.len().saturating_sub(MAX_FILES_PER_CATEGORY);
            let shown = paths[skip..].join(", ");
            if skip > 0 {
                format!("{label}: {shown} (+{skip} more)")
            } else {
                format!("{label}: {shown}")
            }
        })
        .collect()
    }

    /// Created minus Modified, Read minus both: each path is reported once, by its strongest use.
    pub fn settle(&mut self) {
        let modified: HashSet<String> = self.modified.iter().cloned().collect();
        self.created.retain(|path| !modified.contains(path));
        let created: HashSet<String> = self.created.iter().cloned().collect();
        self.read
            .retain(|path| !modified.contains(path) && !created.contains(path));
    }
}

// --- goals and preferences -------------------------------------------------------------------

static GOAL_PREFIX_RE: LazyLock<Regex> = LazyLock::new(|| {
    literal_regex(
        r"(?i)^(?:goal|objective|task|plan|target|aim|intent|purpose|mission|action item|to-do|todo|fixme|note|idea|hack|bug|feature|story|epic)\s*:?\s+",
    )
});
static TASK_VERB_RE: LazyLock<Regex> = LazyLock::new(|| {
    literal_regex(
        r"(?i)(?-u:\b)(?:add|create|build|implement|fix|write|update|refactor|remove|delete|rename|move|make|change|replace|migrate|port|test|debug|investigate|review|check|verify|document|configure|set ?up|install|deploy|release|optimi[sz]e|improve|clean ?up|split|merge|extract|convert|support|handle|enable|disable|integrate|wire|generate|design|plan|research|find|explore|analy[sz]e|run|benchmark|profile|upgrade|bump|revert|rewrite|restructure|simplify|introduce|rework|resolve|finish|complete|ship|draft|summari[sz]e|compare)(?-u:\b)",
    )
});
static SCOPE_CHANGE_RE: LazyLock<Regex> = LazyLock::new(|| {
    literal_regex(
        r"(?i)(?-u:\b)(?:scope|focus|switch|move on|now|instead|rather than|change of plan|shift|pivot|let's)(?-u:\b)",
    )
});
static PREFERENCE_PREFIX_RE: LazyLock<Regex> = LazyLock::new(|| {
    literal_regex(r"(?i)^(?:preference|note|remember|important|reminder|rule|style|format)\s*:?\s+")
});
static PREFERENCE_RE: LazyLock<Regex> = LazyLock::new(|| {
    literal_regex(
        r"(?i)(?-u:\b)(?:prefer|want|would like|should|must|need to|important|critical|avoid|don't|do not|never|always|only|make sure|ensure|remember|keep in mind|note that)(?-u:\b)",
    )
});
static SENTENCE_END_RE: LazyLock<Regex> = LazyLock::new(|| literal_regex(r"[.!?]\s+"));

const MIN_LINE_CHARS: usize = 10;
const GOAL_CHARS: usize = 200;
const PREFERENCE_CHARS: usize = 160;

/// The user's task statements; the assistant's only when the user stated none (its narration
/// is not a goal). Questions are not goals.
fn goals(blocks: &[NormBlock]) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut goals = Vec::new();
    for kind in [BlockKind::User, BlockKind::Assistant] {
        if !goals.is_empty() {
            break;
        }
        for block in blocks.iter().filter(|block| block.kind == kind) {
            if goals.len() >= MAX_GOALS {
                return goals;
            }
            let line = GOAL_PREFIX_RE.replace(&block.text, "");
            if line.chars().count() < MIN_LINE_CHARS
                || line.ends_with('?')
                || line.contains("? ")
                || !(TASK_VERB_RE.is_match(&line) || SCOPE_CHANGE_RE.is_match(&line))
            {
                continue;
            }
            if seen.insert(dedup_key(&line, 80)) {
                goals.push(clip_sentence(&line, GOAL_CHARS));
            }
        }
    }
    goals
}

/// User sentences stating how the work should be done; none that repeats a goal. From one
/// message only its [`MAX_PREFERENCES_PER_MESSAGE`] strongest (a rule said with "always" or
/// "never" before a spec's list of "must"s); sentences that differ only in case, spacing or
/// closing punctuation count once; past the cap the most recent are kept.
fn preferences(blocks: &[NormBlock], goals: &[String]) -> Vec<String> {
    let goal_keys: HashSet<String> = goals.iter().map(|goal| dedup_key(goal, 60)).collect();
    let mut seen = HashSet::new();
    let mut preferences = Vec::new();
    for block in blocks.iter().filter(|block| block.kind == BlockKind::User) {
        let mut candidates: Vec<(usize, usize, String)> = Vec::new();
        for (position, sentence) in SENTENCE_END_RE.split(&block.text).enumerate() {
            let line = PREFERENCE_PREFIX_RE.replace(sentence.trim(), "");
            if line.chars().count() < MIN_LINE_CHARS
                || line.ends_with('?')
                || !PREFERENCE_RE.is_match(&line)
            {
                continue;
            }
            let key = dedup_key(&line, 60);
            if goal_keys.contains(&key) || seen.contains(&key) {
                continue;
            }
            let strength = usize::from(STRONG_PREFERENCE_RE.is_match(&line)) * 2
                + usize::from(!LIST_ITEM_RE.is_match(&line) && !NUMBERED_RE.is_match(&line));
            candidates.push((strength, position, line.into_owned()));
        }
        // A message full of "must"s is a spec: only what it says as a rule is a preference.
        if candidates.len() > SPEC_SENTENCES {
            candidates.retain(|(strength, _, _)| *strength >= 2);
        }
        candidates.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        candidates.truncate(MAX_PREFERENCES_PER_MESSAGE);
        candidates.sort_by_key(|candidate| candidate.1);
        for (_, _, line) in candidates {
            seen.insert(dedup_key(&line, 60));
            preferences.push(clip_sentence(&line, PREFERENCE_CHARS));
        }
    }
    let skip = preferences.len().saturating_sub(MAX_PREFERENCES);
    preferences.split_off(skip)
}

static STRONG_PREFERENCE_RE: LazyLock<Regex> = LazyLock::new(|| {
    literal_regex(r"(?i)(?-u:\b)(?:always|never|prefer|don't|do not|avoid|rule|constraint)(?-u:\b)")
});
/// A spec's numbered line (`3. The cache must …`, after sentence splitting `3.` stands alone).
static NUMBERED_RE: LazyLock<Regex> = LazyLock::new(|| literal_regex(r"^\d+[.)]?\s"));

// --- outstanding context ----------------------------------------------------------------------

static BLOCKER_RE: LazyLock<Regex> = LazyLock::new(|| {
    literal_regex(
        r"(?i)(?-u:\b)(?:fail\w*|broken|cannot|can't|won't work|doesn't work|does not work|still (?:broken|failing|wrong)|blocked|blocker|not (?:fixed|resolved|working)|crash\w*)",
    )
});
static LIST_ITEM_RE: LazyLock<Regex> = LazyLock::new(|| literal_regex(r"^(?:[-*+•]\s|\d+[.)]\s)"));
static STARTS_PROPER_RE: LazyLock<Regex> = LazyLock::new(|| literal_regex(r#"^["'*_]*[A-Z`]"#));

const OUTSTANDING_CHARS: usize = 150;

static TODO_RE: LazyLock<Regex> = LazyLock::new(|| {
    literal_regex(
        r"(?i)(?-u:\b)(?:todo|fixme|still (?:need|have) to|remaining (?:for|work|items?)|not (?:done|written|implemented|finished) yet|follow[- ]up|(?:don't|do not) forget|left to do)(?-u:\b)",
    )
});

/// What is still open at the cut: failed calls not run successfully since (the same tool and
/// command or path), to-dos said or left in the code anywhere in the session, and blocker
/// sentences among the last [`OUTSTANDING_WINDOW`] blocks; the most recent [`MAX_OUTSTANDING`].
fn outstanding(blocks: &[NormBlock]) -> Vec<String> {
    let window_start = blocks.len().saturating_sub(OUTSTANDING_WINDOW);
    // (item, the failed call's key while it is open)
    let mut items: Vec<(String, Option<String>)> = Vec::new();
    let mut pending_calls: std::collections::VecDeque<String> = Default::default();
    for (index, block) in blocks.iter().enumerate() {
        match block.kind {
            BlockKind::ToolCall => {
                pending_calls.push_back(call_key(block));
                for todo in argument_todos(block) {
                    items.push((
                        format!("TODO: {}", clip_sentence(todo, OUTSTANDING_CHARS)),
                        None,
                    ));
                }
            }
            BlockKind::ToolResult => {
                let key = pending_calls
                    .pop_front()
                    .unwrap_or_else(|| block.tool.clone().unwrap_or_default());
                if block.is_error {
                    let item = format!(
                        "[{}] {}",
                        block.tool.as_deref().unwrap_or("tool"),
                        clip_sentence(&block.head, OUTSTANDING_CHARS)
                    );
                    items.push((item, Some(key)));
                } else {
                    // Run again and passing: what failed before is fixed.
                    items.retain(|(_, open)| open.as_deref() != Some(key.as_str()));
                }
            }
            BlockKind::User | BlockKind::Assistant => {
                pending_calls.clear();
                let prefix = if block.kind == BlockKind::User {
                    "[user] "
                } else {
                    ""
                };
                let sentences = || SENTENCE_END_RE.split(&block.text).map(str::trim);
                if let Some(todo) = sentences().find(|s| is_statement(s) && TODO_RE.is_match(s)) {
                    items.push((
                        format!("{prefix}{}", clip_sentence(todo, OUTSTANDING_CHARS)),
                        None,
                    ));
                } else if index >= window_start
                    && let Some(blocker) =
                        sentences().find(|s| is_statement(s) && BLOCKER_RE.is_match(s))
                {
                    items.push((
                        format!("{prefix}{}", clip_sentence(blocker, OUTSTANDING_CHARS)),
                        None,
                    ));
                }
            }
            _ => {}
        }
    }
    let mut seen = HashSet::new();
    let mut unique: Vec<String> = items
        .into_iter()
        .rev()
        .filter(|(item, _)| seen.insert(item.clone()))
        .take(MAX_OUTSTANDING)
        .map(|(item, _)| item)
        .collect();
    unique.reverse();
    unique
}

/// A sentence worth listing: long enough, not a list item or an aside, starting like a sentence.
fn is_statement(sentence: &str) -> bool {
    sentence.chars().count() >= 15
        && !LIST_ITEM_RE.is_match(sentence)
        && !sentence.starts_with('(')
        && STARTS_PROPER_RE.is_match(sentence)
}

/// What identifies a call for "run again": its tool and command or path.
fn call_key(block: &NormBlock) -> String {
    let argument = block.arguments.as_ref().and_then(|arguments| {
        arguments
            .get("command")
            .and_then(Value::as_str)
            .or_else(|| path_argument(arguments))
    });
    format!(
        "{}\u{0}{}",
        block.tool.as_deref().unwrap_or(""),
        argument.unwrap_or("")
    )
}

/// The `TODO` lines normalize kept from a call's written text.
fn argument_todos(block: &NormBlock) -> impl Iterator<Item = &str> {
    block
        .arguments
        .as_ref()
        .and_then(|arguments| arguments.get("todo"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

// --- files ------------------------------------------------------------------------------------

static PATH_RE: LazyLock<Regex> =
    LazyLock::new(|| literal_regex(r"(?:[\w.-]+/)+[\w-]+(?:\.[\w-]+)?"));
static EDIT_RE: LazyLock<Regex> = LazyLock::new(|| {
    literal_regex(
        r"(?i)(?-u:\b)(?:edit(?:ed|ing|s)?|modif(?:y|ied|ies|ying)|updat(?:e|ed|es|ing)|chang(?:e|ed|es|ing)|fix(?:ed|es|ing)?|patch(?:ed|es|ing)?|refactor(?:ed|ing|s)?)(?-u:\b)",
    )
});
static CREATE_RE: LazyLock<Regex> = LazyLock::new(|| {
    literal_regex(
        r"(?i)(?-u:\b)(?:creat(?:e|ed|es|ing)|add(?:ed|s|ing)?|new file|wr(?:ite|ote|itten|ites|iting))(?-u:\b)",
    )
});
static READ_RE: LazyLock<Regex> = LazyLock::new(|| {
    literal_regex(
        r"(?i)(?-u:\b)(?:read(?:s|ing)?|open(?:ed|s|ing)?|look(?:ed)? at|inspect(?:ed|s|ing)?|view(?:ed|s|ing)?|check(?:ed|s|ing)?)(?-u:\b)",
    )
});

const PATH_KEYS: [&str; 5] = ["file_path", "path", "filePath", "filepath", "file"];
const PATH_WINDOW: usize = 40;

fn files(blocks: &[NormBlock]) -> FileActivity {
    let mut activity = FileActivity::default();
    let mut seen = [HashSet::new(), HashSet::new(), HashSet::new()];
    let mut note = |category: usize, path: &str| {
        if path.is_empty() || !seen[category].insert(path.to_string()) {
            return;
        }
        match category {
            0 => activity.modified.push(path.to_string()),
            1 => activity.created.push(path.to_string()),
            _ => activity.read.push(path.to_string()),
        }
    };
    for block in blocks {
        match block.kind {
            BlockKind::ToolCall => {
                let name = block.tool.as_deref().unwrap_or("").to_ascii_lowercase();
                let category = match name.as_str() {
                    "edit" | "multiedit" | "multi_edit" | "apply_patch" => 0,
                    "write" | "create" => 1,
                    "read" | "view" => 2,
                    _ => continue,
                };
                if let Some(path) = block.arguments.as_ref().and_then(path_argument) {
                    note(category, path);
                }
            }
            BlockKind::User | BlockKind::Assistant if block.text.contains('/') => {
                for found in PATH_RE.find_iter(&block.text) {
                    // A URL is not a file of the project.
                    if block.text[..found.start()].ends_with("//") || found.as_str().contains("://")
                    {
                        continue;
                    }
                    let Some(category) = classify_path(&block.text, found.start(), found.end())
                    else {
                        continue;
                    };
                    note(category, found.as_str());
                }
            }
            _ => {}
        }
    }
    activity.settle();
    activity
}

pub(crate) fn path_argument(arguments: &Value) -> Option<&str> {
    PATH_KEYS
        .iter()
        .find_map(|key| arguments.get(*key).and_then(Value::as_str))
}

/// The activity a path in prose is mentioned with: the nearest verb before it within
/// `PATH_WINDOW` bytes ("updated a.rs and looked at b.rs" reads b.rs), else the first after it.
fn classify_path(text: &str, start: usize, end: usize) -> Option<usize> {
    let mut from = start.saturating_sub(PATH_WINDOW);
    while !text.is_char_boundary(from) {
        from -= 1;
    }
    let mut to = (end + PATH_WINDOW).min(text.len());
    while !text.is_char_boundary(to) {
        to += 1;
    }
    let patterns: [&Regex; 3] = [&EDIT_RE, &CREATE_RE, &READ_RE];
    let before = &text[from..start];
    let nearest_before = patterns
        .iter()
        .enumerate()
        .filter_map(|(category, re)| re.find_iter(before).last().map(|m| (m.end(), category)))
        .max();
    if let Some((_, category)) = nearest_before {
        return Some(category);
    }
    let after = &text[end..to];
    patterns
        .iter()
        .enumerate()
        .filter_map(|(category, re)| re.find(after).map(|m| (m.start(), category)))
        .min()
        .map(|(_, category)| category)
}

// --- commits ----------------------------------------------------------------------------------

static HASH_RE: LazyLock<Regex> =
    LazyLock::new(|| literal_regex(r"(?-u:\b)[0-9a-f]{7,40}(?-u:\b)"));
static COMMIT_MESSAGE_RE: LazyLock<Regex> = LazyLock::new(|| {
    literal_regex(
        r#"(?i)(?:git (?:commit|push|merge|rebase)|committed|commit)[^"'\n]{0,60}?["']([^"'\n]{3,120})["']"#,
    )
});
/// Git's own report of a new commit: `[main 1a2b3c4] message`.
static GIT_REPORT_RE: LazyLock<Regex> = LazyLock::new(|| {
    literal_regex(
        r"\[[\w./-]+(?: \(root-commit\))? ([0-9a-f]{7,40})\] ([^\[\]]{1,120}?)(?: \d+ files? changed|$)",
    )
});
/// A `git log --oneline` line at the start of a (sanitized, one-line) tool output.
static ONELINE_RE: LazyLock<Regex> =
    LazyLock::new(|| literal_regex(r"^([0-9a-f]{7,40}) ([^\n]{3,120}?)(?: [0-9a-f]{7,40} |$)"));
static GIT_WORD_RE: LazyLock<Regex> =
    LazyLock::new(|| literal_regex(r"(?i)(?-u:\b)(?:commit\w*|git)(?-u:\b)"));

const COMMIT_MESSAGE_MIN_CHARS: usize = 6;

/// `hash — message` (or the message alone), deduplicated by hash, the last [`MAX_COMMITS`].
/// Walks backwards and stops once the cap is reached: only the recent end is read.
fn commits(blocks: &[NormBlock]) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut commits: Vec<String> = Vec::new();
    for (index, block) in blocks.iter().enumerate().rev() {
        if commits.len() >= MAX_COMMITS {
            break;
        }
        let (hash, message) = match commit_in(block, index.checked_sub(1).map(|i| &blocks[i])) {
            Some(found) => found,
            None => continue,
        };
        let item = match (hash, message) {
            (Some(hash), message) => {
                let short: String = hash.chars().take(8).collect();
                if !seen.insert(short.clone()) {
                    continue;
                }
                match message {
                    Some(message) => {
                        // The same message announced without a hash says less.
                        commits.retain(|item| *item != message);
                        format!("{short} — {message}")
                    }
                    None => short,
                }
            }
            (None, Some(message)) if message.chars().count() >= COMMIT_MESSAGE_MIN_CHARS => {
                let suffix = format!(" — {message}");
                if !seen.insert(message.clone())
                    || commits.iter().any(|item| item.ends_with(&suffix))
                {
                    continue;
                }
                message
            }
            _ => continue,
        };
        commits.push(item);
    }
    commits.reverse();
    commits
}

/// The commit hash and message a block reports, if any; `previous` is the block before it (a
/// tool result right after a git command is git's own output).
fn commit_in(
    block: &NormBlock,
    previous: Option<&NormBlock>,
) -> Option<(Option<String>, Option<String>)> {
    let after_git_command = previous.is_some_and(|call| {
        call.kind == BlockKind::ToolCall
            && call
                .arguments
                .as_ref()
                .and_then(|arguments| arguments.get("command"))
                .and_then(Value::as_str)
                .is_some_and(|command| command.contains("git "))
    });
    // `git log --oneline` after a commit: the first line is the new commit.
    if after_git_command
        && block.kind == BlockKind::ToolResult
        && let Some(line) = ONELINE_RE.captures(&block.text)
    {
        return Some((Some(line[1].to_string()), Some(line[2].trim().to_string())));
    }
    let text = &block.text;
    // Git's own report of a commit names neither "git" nor "commit".
    if block.kind == BlockKind::ToolResult
        && text.contains("] ")
        && let Some(report) = GIT_REPORT_RE.captures(text)
    {
        return Some((
            report.get(1).map(|m| m.as_str().to_string()),
            report.get(2).map(|m| m.as_str().trim().to_string()),
        ));
    }
    // A cheap substring test before any regex: most blocks never mention git.
    if !matches!(
        block.kind,
        BlockKind::User | BlockKind::Assistant | BlockKind::ToolResult
    ) || !(text.contains("git") || text.contains("ommit") || text.contains("OMMIT"))
        || !GIT_WORD_RE.is_match(text)
    {
        return None;
    }
    if let Some(report) = GIT_REPORT_RE.captures(text) {
        return Some((
            report.get(1).map(|m| m.as_str().to_string()),
            report.get(2).map(|m| m.as_str().trim().to_string()),
        ));
    }
    let hash = HASH_RE
        .find_iter(text)
        .map(|m| m.as_str())
        .find(|hash| {
            hash.bytes().any(|b| b.is_ascii_digit())
                && hash.bytes().any(|b| b.is_ascii_alphabetic())
        })
        .map(str::to_string);
    let message = COMMIT_MESSAGE_RE
        .captures(text)
        .and_then(|captures| captures.get(1))
        .map(|m| m.as_str().trim().to_string());
    Some((hash, message))
}

// --- shared -----------------------------------------------------------------------------------

/// The first `chars` characters of `line` folded: lower case, one space between words, no
/// closing punctuation (`Use tabs.` and `use  tabs` are one sentence).
fn dedup_key(line: &str, chars: usize) -> String {
    let folded = line.split_whitespace().collect::<Vec<_>>().join(" ");
    let folded =
        folded.trim_end_matches(|c: char| c.is_ascii_punctuation() && c != ')' && c != '`');
    folded
        .chars()
        .take(chars)
        .collect::<String>()
        .to_lowercase()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn block(kind: BlockKind, text: &str) -> NormBlock {
        NormBlock::new(kind, text.into(), 0)
    }

    fn call(name: &str, arguments: Value) -> NormBlock {
        NormBlock::tool_call(name, arguments, 0)
    }

    fn error(tool: &str, head: &str) -> NormBlock {
        NormBlock::tool_error(tool, head, 0)
    }

    #[test]
    fn empty_blocks_give_empty_sections() {
        assert_eq!(build_sections(&[]), Sections::default());
        assert!(FileActivity::default().lines().is_empty());
    }

    #[test]
    fn goals_are_extracted() {
        type Case<'a> = (&'a [(BlockKind, &'a str)], &'a [&'a str]);
        let cases: [Case; 6] = [
            (
                &[(BlockKind::User, "Goal: implement the login page")],
                &["implement the login page"],
            ),
            (&[(BlockKind::User, "hello there friend")], &[]),
            (&[(BlockKind::User, "fix it")], &[]),
            (
                &[
                    (BlockKind::Assistant, "I will refactor the parser next"),
                    (BlockKind::User, "Let's switch to the CLI instead"),
                ],
                &["Let's switch to the CLI instead"],
            ),
            (
                &[
                    (BlockKind::Assistant, "I will refactor the parser next"),
                    (BlockKind::User, "Which file did we create?"),
                    (BlockKind::User, "Which file did we create? Answer briefly."),
                ],
                &["I will refactor the parser next"],
            ),
            (
                &[
                    (BlockKind::User, "Add tests for the cache"),
                    (BlockKind::User, "add tests for the cache"),
                ],
                &["Add tests for the cache"],
            ),
        ];
        for (input, expected) in cases {
            let blocks: Vec<NormBlock> = input.iter().map(|(k, t)| block(*k, t)).collect();
            assert_eq!(build_sections(&blocks).goals, expected, "{input:?}");
        }
        let many: Vec<NormBlock> = (0..20)
            .map(|i| block(BlockKind::User, &format!("Add feature number {i}")))
            .collect();
        assert_eq!(build_sections(&many).goals.len(), MAX_GOALS);
    }

    #[test]
    fn preferences_are_user_sentences_not_goals() {
        let blocks = [
            block(
                BlockKind::User,
                "Build the importer. Always use tabs for indentation! ok",
            ),
            block(BlockKind::Assistant, "You should never do that."),
            block(BlockKind::User, "Make sure tests pass before commit"),
        ];
        let sections = build_sections(&blocks);
        assert_eq!(
            sections.preferences,
            ["Always use tabs for indentation"],
            "{sections:#?}"
        );
        assert_eq!(
            sections.goals,
            [
                "Build the importer. Always use tabs for indentation! ok",
                "Make sure tests pass before commit"
            ]
        );
    }

    #[test]
    fn outstanding_context_from_errors_and_blockers() {
        let blocks = [
            error("bash", "error: linker failed"),
            block(BlockKind::Assistant, "The build is still failing on CI."),
            block(BlockKind::User, "- it is broken everywhere"),
            block(BlockKind::User, "This crashes when I click save."),
            block(BlockKind::Assistant, "(it failed once)"),
            block(BlockKind::Assistant, "all good now"),
        ];
        assert_eq!(
            build_sections(&blocks).outstanding,
            [
                "[bash] error: linker failed",
                "The build is still failing on CI.",
                "[user] This crashes when I click save.",
            ]
        );
        // An old complaint is over; an old failure is open until its call passes again.
        let old = [
            block(BlockKind::Assistant, "The upload is still broken for now."),
            call("bash", json!({"command": "cargo build"})),
            error("bash", "error[E0432]: unresolved import"),
        ];
        let later: Vec<NormBlock> = (0..OUTSTANDING_WINDOW)
            .map(|_| block(BlockKind::Assistant, "ok"))
            .collect();
        assert_eq!(
            build_sections(&[&old[..], &later].concat()).outstanding,
            ["[bash] error[E0432]: unresolved import"]
        );
    }

    /// Issue 31: a whole session's open items — a failure fixed since is not one, a failure of
    /// another command still is, and to-dos said or left in the code count however early.
    #[test]
    fn outstanding_context_covers_the_session_and_drops_what_was_fixed() {
        let test = json!({"command": "cargo test -p atlas"});
        let build = json!({"command": "cargo build --release"});
        let mut blocks = vec![
            block(
                BlockKind::User,
                "Later we still need to add jitter to the upload retries.",
            ),
            call("bash", test.clone()),
            error(
                "bash",
                "error[E0502]: cannot borrow `self.index` as mutable",
            ),
            call("bash", build.clone()),
            error("bash", "error: linker `cc` not found"),
            call(
                "edit",
                json!({"path": "src/a.rs", "todo": ["handle the empty tenant list"]}),
            ),
        ];
        blocks.extend((0..40).map(|_| block(BlockKind::Assistant, "Working on it.")));
        blocks.push(call("bash", test));
        blocks.push(block(BlockKind::ToolResult, "test result: ok. 12 passed"));
        assert_eq!(
            build_sections(&blocks).outstanding,
            [
                "[user] Later we still need to add jitter to the upload retries.",
                "[bash] error: linker `cc` not found",
                "TODO: handle the empty tenant list",
            ]
        );
    }

    /// Issue 31: one pasted spec does not fill every slot, a sentence repeated with other
    /// punctuation or case counts once, and past the cap the most recent are kept.
    #[test]
    fn preferences_are_deduplicated_and_a_spec_is_one_voice() {
        let spec: String = (1..=12)
            .map(|i| format!("{i}. The cache must accept key{i} within one second.\n"))
            .collect();
        let blocks = [
            block(BlockKind::User, "Always use rustls, never openssl."),
            block(
                BlockKind::User,
                &format!("{spec} And I prefer tabs over spaces in this repo."),
            ),
            block(BlockKind::User, "always use rustls, never openssl"),
        ];
        assert_eq!(
            build_sections(&blocks).preferences,
            [
                "Always use rustls, never openssl.",
                "And I prefer tabs over spaces in this repo."
            ]
        );
        let many: Vec<NormBlock> = (0..20)
            .map(|i| block(BlockKind::User, &format!("Never touch module number {i}.")))
            .collect();
        let preferences = build_sections(&many).preferences;
        assert_eq!(preferences.len(), MAX_PREFERENCES);
        assert_eq!(
            preferences.last().map(String::as_str),
            Some("Never touch module number 19.")
        );
    }

    /// Issue 31: git's own report of a commit — `[main 3f9a2c1] message` — is a commit, with
    /// nothing else in the session naming it.
    #[test]
    fn commits_come_from_git_s_own_output() {
        let blocks = [
            call("bash", json!({"command": "git commit -qam wip"})),
            block(
                BlockKind::ToolResult,
                "[main 3f9a2c1] add station index migration 2 files changed, 40 insertions(+)",
            ),
            block(
                BlockKind::ToolResult,
                "[feature/x (root-commit) 0badc0de] first",
            ),
        ];
        assert_eq!(
            build_sections(&blocks).commits,
            ["3f9a2c1 — add station index migration", "0badc0de — first"]
        );
    }

    #[test]
    fn file_activity_from_calls_and_text() {
        let blocks = [
            call("read", json!({"path": "src/main.rs"})),
            call("edit", json!({"file_path": "src/main.rs"})),
            call("write", json!({"path": "src/new.rs"})),
            call("write", json!({"path": "src/lib.rs"})),
            call("Edit", json!({"filePath": "src/lib.rs"})),
            call("bash", json!({"command": "cat docs/a.md"})),
            block(
                BlockKind::Assistant,
                "I updated docs/guide.md and looked at tests/x.rs",
            ),
            block(BlockKind::User, "see https://example.com/a/b for context"),
        ];
        let files = build_sections(&blocks).files;
        assert_eq!(
            files.modified,
            ["src/main.rs", "src/lib.rs", "docs/guide.md"]
        );
        assert_eq!(files.created, ["src/new.rs"]);
        assert_eq!(files.read, ["tests/x.rs"]);
        assert_eq!(
            files.lines(),
            [
                "Modified: src/main.rs, src/lib.rs, docs/guide.md",
                "Created: src/new.rs",
                "Read: tests/x.rs"
            ]
        );
        let many = FileActivity {
            read: (0..MAX_FILES_PER_CATEGORY + 2)
                .map(|i| format!("f{i}"))
                .collect(),
            ..FileActivity::default()
        };
        let shown: Vec<String> = (2..MAX_FILES_PER_CATEGORY + 2)
            .map(|i| format!("f{i}"))
            .collect();
        assert_eq!(
            many.lines(),
            [format!("Read: {} (+2 more)", shown.join(", "))]
        );
    }

    #[test]
    fn commits_from_text_and_git_output() {
        let blocks = [
            block(
                BlockKind::ToolResult,
                "[main 1a2b3c4d] Add parser 2 files changed",
            ),
            block(
                BlockKind::Assistant,
                "Committed 1a2b3c4d5e as \"Add parser\"",
            ),
            block(BlockKind::Assistant, "git commit -m 'Tidy the docs'"),
            block(
                BlockKind::Assistant,
                "Number 1234567 and deadbeef without git words",
            ),
            block(BlockKind::User, "commit abcdef0 please"),
        ];
        assert_eq!(
            build_sections(&blocks).commits,
            ["1a2b3c4d — Add parser", "Tidy the docs", "abcdef0"]
        );
        let git_log = [
            block(
                BlockKind::User,
                "Commit it with message 'Add greeting module'",
            ),
            call(
                "bash",
                json!({"command": "git commit -qm x && git log --oneline"}),
            ),
            block(
                BlockKind::ToolResult,
                "8ccce4e Add greeting module 1234abc Older one",
            ),
        ];
        assert_eq!(
            build_sections(&git_log).commits,
            ["8ccce4e — Add greeting module"]
        );
        let many: Vec<NormBlock> = (0..12)
            .map(|i| block(BlockKind::Assistant, &format!("commit a{i:06}")))
            .collect();
        let commits = build_sections(&many).commits;
        assert_eq!(commits.len(), MAX_COMMITS);
        assert_eq!(commits.last().map(String::as_str), Some("a000011"));
    }
}
