#![allow(clippy::unwrap_used)] // test code: a failed step should panic

use std::path::Path;

use super::sync::{Baseline, Finished, matches, name_of};
use super::*;

const MILESTONES: &str = "---\ntitle: \"Project Milestones\"\ncreated: 2026-11-01\nupdated: \
                          2026-11-02\n---\n\n# Project Milestones\n\n## Phase 1: Foundation\n> \
                          The ground work\n\n- [x] Set up the repository\n- [ ] Write the \
                          parser\n\n## Phase 2: Core\n\n- [ ] Ship the board\n- [ ] Write the \
                          parser\n- [ ] Sync the checkboxes\n\n## Phase 3: Later\n";

fn doc(text: &str) -> Doc {
    docs::parse(
        DocType::Milestone,
        Path::new(MILESTONES_FILE),
        text.as_bytes(),
    )
}

fn workspace_with(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = dir.path().join(DOCS_DIR).join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

#[test]
fn progress_counts_phases_in_order_and_finds_the_current_focus() {
    let progress = Progress::of(&doc(MILESTONES));
    assert_eq!(
        (progress.done, progress.total, progress.percent()),
        (1, 5, 20)
    );
    let phases: Vec<(&str, usize, usize)> = progress
        .phases
        .iter()
        .map(|phase| (phase.name.as_str(), phase.done, phase.total))
        .collect();
    // The empty phase has no figures to give.
    assert_eq!(
        phases,
        [("Phase 1: Foundation", 1, 2), ("Phase 2: Core", 0, 3)]
    );
    assert_eq!(progress.current.as_deref(), Some("Phase 1: Foundation"));
    assert_eq!(
        progress.prompt_section().unwrap(),
        "## Project Milestones\nOverall progress: 1/5 items (20%)\n  Phase 1: Foundation: 1/2 \
         done\n  Phase 2: Core: 0/3 done\nCurrent focus: Phase 1: Foundation"
    );

    let all_done = Progress::of(&doc("## A\n- [x] one\n## B\n- [X] two\n"));
    assert_eq!(all_done.percent(), 100);
    assert_eq!(
        all_done.current.as_deref(),
        Some("A"),
        "all done: the first"
    );
    assert_eq!(Progress::of(&doc("# Nothing yet\n")).prompt_section(), None);
    // An item before any phase is in no phase (the parser warns about it).
    let stray = Progress::of(&doc("- [ ] loose\n## A\n- [ ] one\n"));
    assert_eq!((stray.done, stray.total), (0, 1));
}

#[test]
fn ticking_rewrites_only_the_checkboxes_and_the_updated_date() {
    let milestones = doc(MILESTONES);
    let parser = |text: &str| {
        milestones
            .items
            .iter()
            .filter(|item| item.text == text)
            .cloned()
            .collect::<Vec<_>>()
    };
    let mut chosen = parser("Ship the board");
    chosen.extend(parser("Set up the repository")); // already ticked: left alone
    let (text, ticked) = tick_text(MILESTONES, &chosen, "2026-12-02");
    assert_eq!(ticked, 1);
    let expected = MILESTONES
        .replace("- [ ] Ship the board", "- [x] Ship the board")
        .replace("updated: 2026-11-02", "updated: 2026-12-02");
    assert_eq!(text, expected);

    // A line that changed since it was read is not touched; nothing ticked, nothing dated.
    let moved = MILESTONES.replace("- [ ] Ship the board", "- [ ] Ship the board today");
    assert_eq!(tick_text(&moved, &chosen, "2026-12-02"), (moved.clone(), 0));
    // Without front matter only the box changes; CRLF endings are kept.
    let crlf = "## A\r\n- [ ] one\r\n";
    let items = doc(crlf).items;
    assert_eq!(
        tick_text(crlf, &items, "2026-12-02"),
        ("## A\r\n- [x] one\r\n".to_owned(), 1)
    );
}

#[test]
fn tick_writes_the_file_and_a_missing_file_is_nothing_to_do() {
    let dir = workspace_with(&[(MILESTONES_FILE, MILESTONES)]);
    let ticked = tick(dir.path(), |doc| {
        doc.items
            .iter()
            .filter(|item| item.text == "Sync the checkboxes")
            .cloned()
            .collect()
    })
    .unwrap();
    assert_eq!(ticked, ["Sync the checkboxes"]);
    let text = std::fs::read_to_string(milestones_path(dir.path())).unwrap();
    assert!(text.contains("- [x] Sync the checkboxes"), "{text}");
    assert!(text.contains(&format!("updated: {}", today())), "{text}");
    let empty = tempfile::tempdir().unwrap();
    assert!(
        tick(empty.path(), |doc| doc.items.clone())
            .unwrap()
            .is_empty()
    );
}

#[test]
fn completions_offer_all_and_each_phase_with_its_figures() {
    let dir = workspace_with(&[(MILESTONES_FILE, MILESTONES)]);
    let offered = |typed: &str| -> Vec<(String, Option<String>)> {
        complete_phases(typed, dir.path())
            .into_iter()
            .map(|item| (item.value, item.description))
            .collect()
    };
    assert_eq!(
        offered(""),
        [
            ("all".to_owned(), Some("Every phase (1/5 done)".to_owned())),
            (
                "Phase 1: Foundation".to_owned(),
                Some("1/2 done".to_owned())
            ),
            ("Phase 2: Core".to_owned(), Some("0/3 done".to_owned())),
        ]
    );
    assert_eq!(offered("core").len(), 1);
    assert!(offered("phase 2: core").is_empty(), "typed in full");
    assert!(offered("nothing like it").is_empty());
}

#[test]
fn plan_task_names_match_milestone_items_without_their_numbers() {
    let cases = [
        ("Task 3 — Ship the board", "ship the board"),
        ("task 12: Ship the board ", "ship the board"),
        ("Task 1 - X", "x"),
        ("  Write the Parser", "write the parser"),
        ("Tasks are fun", "tasks are fun"),
    ];
    crate::test_table::check_table(cases, |text| name_of(text));
}

#[test]
fn finished_items_tick_the_phase_their_section_names_else_the_only_match() {
    let milestones = doc(MILESTONES);
    let finished = |text: &str, section: Option<&str>| Finished {
        text: text.to_owned(),
        section: section.map(str::to_owned),
    };
    let lines = |items: Vec<Item>| -> Vec<(usize, Option<String>)> {
        items
            .into_iter()
            .map(|item| (item.line, item.phase))
            .collect()
    };
    // One of a kind: wherever it is.
    assert_eq!(
        lines(matches(
            &milestones,
            &[finished("Task 2 — Ship the board", None)]
        )),
        [(17, Some("Phase 2: Core".to_owned()))]
    );
    // In two phases: the section decides; without one nothing is guessed.
    assert_eq!(
        lines(matches(
            &milestones,
            &[finished("Write the parser", Some("phase 2: core"))]
        )),
        [(18, Some("Phase 2: Core".to_owned()))]
    );
    assert!(matches(&milestones, &[finished("Write the parser", None)]).is_empty());
    // Already ticked, or not a milestone: nothing; the same item twice: once.
    assert!(matches(&milestones, &[finished("Set up the repository", None)]).is_empty());
    assert!(matches(&milestones, &[finished("Something else", None)]).is_empty());
    let twice = [
        finished("Sync the checkboxes", None),
        finished("Task 9 — sync the checkboxes", None),
    ];
    assert_eq!(matches(&milestones, &twice).len(), 1);
}

#[test]
fn the_baseline_sees_what_the_session_finished_in_plans_specs_and_quick_work() {
    let plan = "# Plan\n\n- completed: Task 1 — Set up the repository\n- unstarted: Task 2 — Ship \
                the board\n- unstarted: Task 3 — Write the parser\n";
    let spec = "# Spec\n\n## Phase 2: Core\n- [ ] Write the parser\n";
    let dir = workspace_with(&[
        ("plans/p.md", plan),
        ("specs/s.md", spec),
        ("generated/g.md", "- [ ] Ship the board\n"),
    ]);
    let baseline = Baseline::take(dir.path());
    assert!(
        baseline.finished_since(dir.path()).is_empty(),
        "nothing yet"
    );
    let write = |path: &str, text: &str| {
        let path = dir.path().join(DOCS_DIR).join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "plans/p.md",
        &plan.replace("unstarted: Task 2", "completed: Task 2"),
    );
    write("specs/s.md", &spec.replace("[ ]", "[x]"));
    write(
        "quick-work/q.md",
        "# Quick\n- [x] Sync the checkboxes\n- [ ] Not yet\n",
    );
    write("generated/g.md", "- [x] Ship the board\n");
    let finished = baseline.finished_since(dir.path());
    assert_eq!(
        finished,
        [
            Finished {
                text: "Task 2 — Ship the board".to_owned(),
                section: None
            },
            // A document written in the session: every finished item counts.
            Finished {
                text: "Sync the checkboxes".to_owned(),
                section: None
            },
            Finished {
                text: "Write the parser".to_owned(),
                section: Some("Phase 2: Core".to_owned())
            },
        ]
    );
    // The items they tick, in the milestones file.
    write(MILESTONES_FILE, MILESTONES);
    let ticked = tick(dir.path(), |doc| matches(doc, &finished)).unwrap();
    assert_eq!(
        ticked,
        ["Ship the board", "Sync the checkboxes", "Write the parser"]
    );
    let text = std::fs::read_to_string(milestones_path(dir.path())).unwrap();
    assert!(text.contains("## Phase 1: Foundation\n> The ground work\n\n- [x] Set up the repository\n- [ ] Write the parser"), "{text}");
    assert_eq!(Progress::of(&doc(&text)).done, 4);
}

#[tokio::test]
async fn the_main_pi_gets_the_progress_before_each_run_and_helpers_do_not() {
    use crate::bridge::{AgentId, HookCall, Module};
    let dir = workspace_with(&[(MILESTONES_FILE, MILESTONES)]);
    let module = hook::MilestoneModule {
        workspace: dir.path().to_path_buf(),
    };
    let call = |agent: AgentId, name: &str| HookCall {
        agent,
        name: name.to_owned(),
        data: serde_json::json!({"message_type": "user"}),
    };
    let answer = module
        .hook(call(AgentId::main(), hook::BEFORE_AGENT_START))
        .unwrap()
        .await;
    let expected = Progress::of(&doc(MILESTONES)).prompt_section().unwrap();
    assert_eq!(
        answer,
        serde_json::json!({ "append_system_prompt": expected })
    );
    assert!(
        module
            .hook(call(AgentId::new("helper-1"), hook::BEFORE_AGENT_START))
            .is_none()
    );
    assert!(
        module
            .hook(call(AgentId::main(), "session_before_compact"))
            .is_none()
    );
    // The file read at each run: no milestones, no answer.
    std::fs::remove_file(milestones_path(dir.path())).unwrap();
    let none = module
        .hook(call(AgentId::main(), hook::BEFORE_AGENT_START))
        .unwrap()
        .await;
    assert_eq!(none, serde_json::Value::Null);
}
