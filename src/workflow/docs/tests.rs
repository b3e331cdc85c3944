//! Golden tests of the documents parser over `tests/fixtures/workflow/docs` (every document type,
//! both plan styles, malformed files), the cache, and card moves through real files.

use std::path::{Path, PathBuf};

use super::edit::{MoveError, move_item, move_item_with};
use super::scan::DocCache;
use super::*;

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/workflow/docs")
}

/// Every document as text: path, type, title, metadata, items (line, marker line, column,
/// marker, phase, text) and warnings.
fn golden(docs: &[Doc]) -> String {
    let mut out = String::new();
    for doc in docs {
        let (done, total) = doc.progress();
        out.push_str(&format!(
            "== {} [{}] {:?} {done}/{total}\n",
            doc.path.display(),
            doc.kind.name(),
            doc.title
        ));
        for (key, value) in &doc.metadata {
            out.push_str(&format!("   {key} = {value:?}\n"));
        }
        for item in &doc.items {
            let marker = match item.marker {
                Marker::Checkbox { checked } => format!("box:{}", if checked { "x" } else { " " }),
                Marker::Keyword(status) => format!("kw:{}", status.keyword()),
                Marker::Header => "header".to_owned(),
            };
            let phase = item
                .phase
                .as_deref()
                .map(|p| format!(" <{p}>"))
                .unwrap_or_default();
            out.push_str(&format!(
                "   L{}/{} {:<11} {:<14}{phase} {}\n",
                item.line,
                item.marker_line,
                item.status.name(),
                marker,
                item.text
            ));
        }
        for warning in &doc.warnings {
            out.push_str(&format!("   ! {warning}\n"));
        }
    }
    out
}

#[test]
fn the_fixture_tree_parses_to_the_golden_cards() {
    let docs = DocCache::default().scan(&fixture_dir(), &fixture_dir());
    crate::assert_ui_snapshot!("workflow_docs_golden", golden(&docs));
}

#[test]
fn doc_types_come_from_where_the_file_lives() {
    let cases = [
        ("specs/a.md", Some(DocType::Spec)),
        ("plans/a.md", Some(DocType::Plan)),
        ("plans/old/a.md", Some(DocType::Plan)),
        ("MILESTONES.md", Some(DocType::Milestone)),
        ("milestones.md", Some(DocType::Milestone)),
        ("quick-work/a.md", Some(DocType::QuickWork)),
        ("debug/a.md", Some(DocType::Debug)),
        ("fix/a.md", Some(DocType::Fix)),
        ("chore/a.md", Some(DocType::Chore)),
        ("reviews/a.md", Some(DocType::Review)),
        ("generated/a.md", None),
        ("plans/a.txt", None),
        ("a.md", None),
    ];
    for (path, want) in cases {
        assert_eq!(DocType::of(Path::new(path)), want, "{path}");
    }
}

#[test]
fn arbitrary_bytes_never_panic() {
    let inputs: [&[u8]; 6] = [
        b"",
        b"---",
        b"---\n---",
        b"\xff\xfe\x00- [x]",
        b"### Task 1 \xe2\x80\x94\n- **Status:**",
        b"- unstarted:\n- : Task\n```\n- [ ] x",
    ];
    for bytes in inputs {
        for kind in DocType::ALL {
            let doc = parse(kind, Path::new("plans/x.md"), bytes);
            assert!(doc.items.iter().all(|item| item.line >= 1));
        }
    }
}

/// A scratch docs tree with one plan (both styles) and one spec.
fn scratch() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap_or_else(|err| panic!("{err}"));
    let docs = dir.path().join("docs");
    std::fs::create_dir_all(docs.join("plans")).unwrap_or_default();
    std::fs::create_dir_all(docs.join("specs")).unwrap_or_default();
    std::fs::write(
        docs.join("plans/p.md"),
        "# P\r\n- unstarted: Task 1 — One\r\n### Task 2 — Two\r\n- **Status:** blocked\r\n",
    )
    .unwrap_or_default();
    std::fs::write(docs.join("specs/s.md"), "- [ ] Alpha\n- [x] Beta\n").unwrap_or_default();
    (dir, docs)
}

fn doc<'a>(docs: &'a [Doc], path: &str) -> &'a Doc {
    docs.iter()
        .find(|doc| doc.path == Path::new(path))
        .unwrap_or_else(|| panic!("{path} not scanned"))
}

#[test]
fn only_changed_files_are_parsed_again() {
    let (_dir, docs_dir) = scratch();
    let mut cache = DocCache::default();
    assert_eq!(cache.scan(&docs_dir, &docs_dir).len(), 2);
    assert_eq!(cache.parsed(), 2);
    cache.scan(&docs_dir, &docs_dir);
    assert_eq!(cache.parsed(), 2, "nothing changed, nothing parsed");
    crate::sys::write_atomic(&docs_dir.join("specs/s.md"), b"- [x] Alpha\n")
        .unwrap_or_else(|err| panic!("{err}"));
    let docs = cache.scan(&docs_dir, &docs_dir);
    assert_eq!(cache.parsed(), 3, "only the spec again");
    assert_eq!(doc(&docs, "specs/s.md").progress(), (1, 1));
    std::fs::remove_file(docs_dir.join("specs/s.md")).unwrap_or_default();
    assert_eq!(
        cache.scan(&docs_dir, &docs_dir).len(),
        1,
        "a removed file leaves the board"
    );
}

/// Moves the document's first item to the first status, its second to the second, and so on;
/// returns the file as it is then.
fn move_in_turn(root: &Path, file: &Path, doc: &Doc, statuses: &[ItemStatus]) -> String {
    for (item, status) in doc.items.iter().zip(statuses) {
        move_item(root, file, item, *status).unwrap_or_else(|e| panic!("{e}"));
    }
    std::fs::read_to_string(file).unwrap_or_default()
}

#[test]
fn moves_round_trip_through_the_file_in_both_plan_styles_and_checkboxes() {
    let (dir, docs_dir) = scratch();
    let root = dir.path();
    let mut cache = DocCache::default();
    let docs = cache.scan(&docs_dir, &docs_dir);
    let plan = doc(&docs, "plans/p.md");
    let file = docs_dir.join("plans/p.md");
    assert_eq!(
        move_in_turn(
            root,
            &file,
            plan,
            &[ItemStatus::InProgress, ItemStatus::Done]
        ),
        "# P\r\n- in-progress: Task 1 — One\r\n### Task 2 — Two\r\n- **Status:** completed\r\n",
        "keywords replaced, CRLF kept"
    );
    let docs = cache.scan(&docs_dir, &docs_dir);
    let plan = doc(&docs, "plans/p.md");
    let columns: Vec<ItemStatus> = plan.items.iter().map(|item| item.status).collect();
    assert_eq!(columns, [ItemStatus::InProgress, ItemStatus::Done]);
    move_item(root, &file, &plan.items[1], ItemStatus::Reviewed).unwrap_or_else(|e| panic!("{e}"));
    let docs = cache.scan(&docs_dir, &docs_dir);
    assert_eq!(
        doc(&docs, "plans/p.md").items[1].status,
        ItemStatus::Reviewed
    );

    let spec = doc(&docs, "specs/s.md");
    let file = docs_dir.join("specs/s.md");
    assert_eq!(
        move_in_turn(root, &file, spec, &[ItemStatus::Done, ItemStatus::Todo]),
        "- [x] Alpha\n- [ ] Beta\n"
    );
    let refused = move_item(root, &file, &spec.items[0], ItemStatus::InProgress);
    assert!(
        matches!(refused, Err(MoveError::NotMovable(_))),
        "{refused:?}"
    );
}

#[test]
fn a_conflicting_edit_on_disk_is_refused_and_kept() {
    let (dir, docs_dir) = scratch();
    let root = dir.path();
    let docs = DocCache::default().scan(&docs_dir, &docs_dir);
    let spec = doc(&docs, "specs/s.md");
    let file = docs_dir.join("specs/s.md");
    // Someone else edits the line after the board read it.
    let theirs = "- [ ] Alpha, renamed by the model\n- [x] Beta\n";
    std::fs::write(&file, theirs).unwrap_or_default();
    let refused = move_item(root, &file, &spec.items[0], ItemStatus::Done);
    match refused {
        Err(MoveError::Conflict { line, found, .. }) => {
            assert_eq!(line, 1);
            assert_eq!(found, "- [ ] Alpha, renamed by the model");
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap_or_default(), theirs);
    // A file cut short is a conflict too.
    std::fs::write(&file, "").unwrap_or_default();
    assert!(matches!(
        move_item(root, &file, &spec.items[1], ItemStatus::Todo),
        Err(MoveError::Conflict { .. })
    ));
}

/// A plan with two tasks and the board's view of it.
fn plan_on_disk() -> (tempfile::TempDir, PathBuf, Doc) {
    let (dir, docs_dir) = scratch();
    let file = docs_dir.join("plans/p.md");
    std::fs::write(
        &file,
        "# P\n- unstarted: Task 1 — One\n- unstarted: Task 2 — Two\n",
    )
    .unwrap_or_else(|err| panic!("{err}"));
    let docs = DocCache::default().scan(&docs_dir, &docs_dir);
    let plan = doc(&docs, "plans/p.md").clone();
    (dir, file, plan)
}

/// Moves `item` of the plan in `file` to done, running `meanwhile` after the board has read the
/// file and before it replaces it (another writer at work).
fn done_meanwhile(
    dir: &tempfile::TempDir,
    file: &Path,
    item: &Item,
    meanwhile: impl FnMut(&Path),
) -> Result<(), MoveError> {
    move_item_with(dir.path(), file, item, ItemStatus::Done, meanwhile)
}

fn append(file: &Path, line: &str) {
    let mut text = std::fs::read_to_string(file).unwrap_or_else(|err| panic!("{err}"));
    text.push_str(line);
    std::fs::write(file, text).unwrap_or_else(|err| panic!("{err}"));
}

#[test]
fn a_change_made_while_the_card_moves_is_kept() {
    let (dir, file, plan) = plan_on_disk();
    // Another writer (the model, an editor) changes another line after the board read the
    // file and before it is replaced: the move starts again from the new text.
    let mut writes = 0;
    done_meanwhile(&dir, &file, &plan.items[0], |file| {
        if writes == 0 {
            append(file, "- unstarted: Task 3 — Three, added meanwhile\n");
        }
        writes += 1;
    })
    .unwrap_or_else(|err| panic!("{err}"));
    assert_eq!(
        std::fs::read_to_string(&file).unwrap_or_default(),
        "# P\n- completed: Task 1 — One\n- unstarted: Task 2 — Two\n\
         - unstarted: Task 3 — Three, added meanwhile\n"
    );
}

#[test]
fn a_file_that_keeps_changing_while_the_card_moves_is_refused_and_kept() {
    let (dir, file, plan) = plan_on_disk();
    let mut writes = 0;
    let refused = done_meanwhile(&dir, &file, &plan.items[0], |file| {
        writes += 1;
        append(file, &format!("- note {writes}\n"));
    });
    match refused {
        Err(MoveError::Busy { attempts, .. }) => assert_eq!(attempts, writes),
        other => panic!("expected a refusal, got {other:?}"),
    }
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    assert!(
        text.starts_with("# P\n- unstarted: Task 1 — One\n"),
        "{text}"
    );
    assert!(text.ends_with(&format!("- note {writes}\n")), "{text}");
    // A change of the card's own line in that window is a conflict, as before the move began.
    let refused = done_meanwhile(&dir, &file, &plan.items[1], |file| {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        std::fs::write(file, text.replace("unstarted: Task 2", "blocked: Task 2"))
            .unwrap_or_else(|err| panic!("{err}"));
    });
    assert!(
        matches!(refused, Err(MoveError::Conflict { line: 3, .. })),
        "{refused:?}"
    );
}

#[test]
fn a_file_deleted_while_the_card_moves_is_not_recreated() {
    let (dir, file, plan) = plan_on_disk();
    let refused = done_meanwhile(&dir, &file, &plan.items[0], |file| {
        std::fs::remove_file(file).unwrap_or_else(|err| panic!("{err}"));
    });
    match refused {
        Err(MoveError::Io { path, source }) => {
            assert_eq!(path, file);
            assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
        }
        other => panic!("expected the missing file to be named, got {other:?}"),
    }
    assert!(!file.exists(), "the deleted plan came back");
    // Nothing is left behind either (no temp file next to where the plan was).
    let left: Vec<_> = std::fs::read_dir(dir.path().join("docs/plans"))
        .unwrap_or_else(|err| panic!("{err}"))
        .filter_map(Result::ok)
        .map(|entry| entry.file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn section_cards_do_not_move() {
    let doc = parse(DocType::Debug, Path::new("debug/d.md"), b"## Symptom\n");
    let refused = move_item(
        Path::new("/"),
        Path::new("/nonexistent"),
        &doc.items[0],
        ItemStatus::Done,
    );
    assert!(
        matches!(refused, Err(MoveError::NotMovable(_))),
        "{refused:?}"
    );
}

/// A project with `.unipi/docs/plans/` and, beside it, an outside directory holding `p.md` (a
/// plan): the layout of a repository that brings links out of itself.
fn project_with_outside() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap_or_else(|err| panic!("{err}"));
    let project = dir.path().join("project");
    let outside = dir.path().join("outside");
    for folder in [project.join(".unipi/docs/plans"), outside.clone()] {
        std::fs::create_dir_all(folder).unwrap_or_else(|err| panic!("{err}"));
    }
    std::fs::write(outside.join("p.md"), "- unstarted: Task 1 — Outside\n")
        .unwrap_or_else(|err| panic!("{err}"));
    (dir, project, outside)
}

fn symlink(target: &Path, link: &Path) {
    std::os::unix::fs::symlink(target, link).unwrap_or_else(|err| panic!("{err}"));
}

#[test]
fn a_move_never_writes_through_a_link_out_of_the_project() {
    let (_dir, project, outside) = project_with_outside();
    let plans = project.join(".unipi/docs/plans");
    // `plans/ldir -> outside` and `plans/lfile.md -> outside/p.md`; the board holds the plan as
    // it was read (before the folder was swapped for a link, say).
    let plan = parse(
        DocType::Plan,
        Path::new("plans/ldir/p.md"),
        "- unstarted: Task 1 — Outside\n".as_bytes(),
    );
    symlink(&outside, &plans.join("ldir"));
    symlink(&outside.join("p.md"), &plans.join("lfile.md"));
    for file in [".unipi/docs/plans/ldir/p.md", ".unipi/docs/plans/lfile.md"] {
        let refused = move_item(&project, Path::new(file), &plan.items[0], ItemStatus::Done);
        let message = match &refused {
            Err(err @ MoveError::Refused { .. }) => err.to_string(),
            other => panic!("{file}: expected a refusal, got {other:?}"),
        };
        assert!(
            message.starts_with(&format!("{file} is not written: it leads to "))
                && message.contains("outside the project"),
            "{message}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(outside.join("p.md")).unwrap_or_default(),
        "- unstarted: Task 1 — Outside\n",
        "the file outside was rewritten"
    );
    assert!(
        std::fs::symlink_metadata(plans.join("lfile.md"))
            .is_ok_and(|meta| meta.file_type().is_symlink()),
        "the file link was replaced"
    );
    let outside_names: Vec<_> = std::fs::read_dir(&outside)
        .unwrap_or_else(|err| panic!("{err}"))
        .filter_map(Result::ok)
        .map(|entry| entry.file_name())
        .collect();
    assert_eq!(outside_names, ["p.md"], "a temp file was left outside");
}

#[test]
fn a_link_inside_the_project_is_written_through_and_kept() {
    let (_dir, project, _outside) = project_with_outside();
    let plans = project.join(".unipi/docs/plans");
    std::fs::write(plans.join("real.md"), "- unstarted: Task 1 — One\n")
        .unwrap_or_else(|err| panic!("{err}"));
    symlink(Path::new("real.md"), &plans.join("current.md"));
    let docs = DocCache::default().scan(&project.join(".unipi/docs"), &project);
    let current = doc(&docs, "plans/current.md");
    move_item(
        &project,
        Path::new(".unipi/docs/plans/current.md"),
        &current.items[0],
        ItemStatus::Done,
    )
    .unwrap_or_else(|err| panic!("{err}"));
    assert_eq!(
        std::fs::read_to_string(plans.join("real.md")).unwrap_or_default(),
        "- completed: Task 1 — One\n"
    );
    assert!(
        std::fs::symlink_metadata(plans.join("current.md"))
            .is_ok_and(|meta| meta.file_type().is_symlink()),
        "the link became a regular file"
    );
}

#[test]
fn the_scan_does_not_follow_links_out_of_the_project_nor_read_what_is_no_file() {
    let (_dir, project, outside) = project_with_outside();
    let plans = project.join(".unipi/docs/plans");
    std::fs::write(plans.join("own.md"), "- unstarted: Task 1 — Own\n")
        .unwrap_or_else(|err| panic!("{err}"));
    symlink(&outside, &plans.join("ldir"));
    symlink(&outside.join("p.md"), &plans.join("lfile.md"));
    // A fifo named like a plan: reading it would block the scan for good.
    nix::unistd::mkfifo(&plans.join("fifo.md"), nix::sys::stat::Mode::S_IRWXU)
        .unwrap_or_else(|err| panic!("{err}"));
    let docs = DocCache::default().scan(&project.join(".unipi/docs"), &project);
    let paths: Vec<String> = docs.iter().map(|d| d.path.display().to_string()).collect();
    assert_eq!(paths, ["plans/lfile.md", "plans/own.md"]);
    let linked = doc(&docs, "plans/lfile.md");
    assert!(linked.items.is_empty());
    let warnings: Vec<String> = linked.warnings.iter().map(ToString::to_string).collect();
    let real_outside = std::fs::canonicalize(&outside).unwrap_or(outside);
    assert_eq!(
        warnings,
        [format!(
            "links to {}, outside the project: not read",
            real_outside.join("p.md").display()
        )]
    );
}
