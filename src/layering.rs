//! The tree's layering, read from the sources: inside every folder below `src/`, the files and
//! sub-folders import each other in one direction only. Shared types live in leaf files (the
//! helpers' `spec`, `sys::group`), so that two files never need each other; a new file or folder
//! is covered the day it is added.
//!
//! The crate's root is left out on purpose: it is the composition level, where the seam's list of
//! capabilities names every capability and each capability names the seam. Test code is left out
//! too (a file's `mod tests`, and files declared only under `#[cfg(test)]`): a test may reach
//! anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One folder's parts (its files but `mod.rs`, and its sub-folders), each with its code and how
/// many `super::` lead from that code to the folder.
struct Folder {
    /// `crate::a::b` for `src/a/b`.
    module_path: String,
    parts: BTreeMap<String, Vec<(String, usize)>>,
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|err| panic!("{}: {err}", dir.display()))
        .map(|entry| {
            entry
                .unwrap_or_else(|err| panic!("{}: {err}", dir.display()))
                .path()
        })
        .collect();
    paths.sort();
    paths
}

/// A file's code without its inline tests (a `#[cfg(test)] mod … {` block, the file's last part)
/// and comments. A test module declared in a file of its own (`#[cfg(test)] mod tests;`) does not
/// end the code: modules declare theirs among their other items.
fn code_of(path: &Path) -> String {
    let text = read(path);
    let lines: Vec<&str> = text.lines().collect();
    let inline_tests = lines.windows(2).position(|pair| {
        pair[0].trim() == "#[cfg(test)]"
            && pair[1].trim_start().starts_with("mod ")
            && pair[1].trim_end().ends_with('{')
    });
    lines[..inline_tests.unwrap_or(lines.len())]
        .iter()
        .filter(|line| !line.trim_start().starts_with("//"))
        .copied()
        .collect::<Vec<_>>()
        .join("\n")
}

/// The modules a folder's `mod.rs` declares only for tests.
fn test_only_modules(dir: &Path) -> BTreeSet<String> {
    let declared = dir.join("mod.rs");
    let text = if declared.exists() {
        read(&declared)
    } else {
        read(&dir.with_extension("rs"))
    };
    let mut test_only = BTreeSet::new();
    let mut under_cfg_test = false;
    for line in text.lines().map(str::trim) {
        if line == "#[cfg(test)]" {
            under_cfg_test = true;
            continue;
        }
        if under_cfg_test
            && let Some(name) = line
                .strip_prefix("mod ")
                .or_else(|| line.strip_prefix("pub mod "))
                .or_else(|| line.strip_prefix("pub(crate) mod "))
                .and_then(|rest| rest.strip_suffix(';'))
        {
            test_only.insert(name.to_owned());
        }
        under_cfg_test = line.starts_with("#[");
    }
    test_only
}

/// Every `.rs` file below `dir`, with how many `super::` lead from it to `dir`'s parent.
fn files_below(dir: &Path, depth: usize, out: &mut Vec<(String, usize)>) {
    for path in entries(dir) {
        if path.is_dir() {
            files_below(&path, depth + 1, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            let is_mod = path.file_name().is_some_and(|name| name == "mod.rs");
            out.push((code_of(&path), if is_mod { depth } else { depth + 1 }));
        }
    }
}

fn folders(dir: &Path, module_path: &str, out: &mut Vec<Folder>) {
    let test_only = test_only_modules(dir);
    let mut parts = BTreeMap::new();
    for path in entries(dir) {
        let stem = path
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        if stem == "mod" || test_only.contains(&stem) {
            continue;
        }
        if path.is_dir() {
            let mut files = Vec::new();
            files_below(&path, 1, &mut files);
            folders(&path, &format!("{module_path}::{stem}"), out);
            parts.entry(stem).or_insert_with(Vec::new).extend(files);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            // `x.rs` beside a folder `x/` is that folder's `mod.rs`.
            parts
                .entry(stem)
                .or_insert_with(Vec::new)
                .push((code_of(&path), 1));
        }
    }
    out.push(Folder {
        module_path: module_path.to_owned(),
        parts,
    });
}

/// The names that follow `prefix` in `code`: `prefix name`, or each name of `prefix {a, b::c}`.
fn names_after(code: &str, prefix: &str) -> BTreeSet<String> {
    let ident = |text: &str| -> String {
        text.trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut names = BTreeSet::new();
    for (at, _) in code.match_indices(prefix) {
        // `super::super::x` holds `super::x`; only the whole path counts.
        let before = &code[..at];
        if before.ends_with("::") || before.ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &code[at + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0usize;
            let mut top = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    _ if depth == 0 => top.push(c),
                    _ => {}
                }
            }
            names.extend(top.split(',').map(ident).filter(|name| !name.is_empty()));
        } else {
            names.insert(ident(rest));
        }
    }
    names.retain(|name| !name.is_empty() && name != "super");
    names
}

/// A circle of parts importing each other (its first part again at the end), if any.
fn find_cycle(imports: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        part: &str,
        imports: &BTreeMap<String, BTreeSet<String>>,
        stack: &mut Vec<String>,
        finished: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = stack.iter().position(|on| on == part) {
            let mut cycle = stack[at..].to_vec();
            cycle.push(part.to_owned());
            return Some(cycle);
        }
        if finished.contains(part) {
            return None;
        }
        stack.push(part.to_owned());
        for next in imports.get(part).into_iter().flatten() {
            if let Some(cycle) = visit(next, imports, stack, finished) {
                return Some(cycle);
            }
        }
        stack.pop();
        finished.insert(part.to_owned());
        None
    }
    let mut finished = BTreeSet::new();
    imports
        .keys()
        .find_map(|part| visit(part, imports, &mut Vec::new(), &mut finished))
}

/// Which of its siblings each part of `folder` names.
fn imports(folder: &Folder) -> BTreeMap<String, BTreeSet<String>> {
    folder
        .parts
        .iter()
        .map(|(name, files)| {
            let mut named = BTreeSet::new();
            for (code, supers) in files {
                named.extend(names_after(code, &"super::".repeat(*supers)));
                named.extend(names_after(code, &format!("{}::", folder.module_path)));
            }
            named.retain(|other| other != name && folder.parts.contains_key(other));
            (name.clone(), named)
        })
        .collect()
}

fn every_folder() -> Vec<Folder> {
    let mut all = Vec::new();
    for path in entries(&src()) {
        if path.is_dir() {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            folders(&path, &format!("crate::{name}"), &mut all);
        }
    }
    all
}

#[test]
fn reads_imports_of_every_kind() {
    let code = "use super::a::X;\nuse super::{b, c::{D, E}};\nuse super::super::f;\n\
                let x = crate::m::g::h();\nfoo_super::i;";
    let names = |prefix| names_after(code, prefix).into_iter().collect::<Vec<_>>();
    assert_eq!(names("super::"), ["a", "b", "c"]);
    assert_eq!(names("super::super::"), ["f"]);
    assert_eq!(names("crate::m::"), ["g"]);
    let circle = BTreeMap::from([
        ("a".to_owned(), BTreeSet::from(["b".to_owned()])),
        ("b".to_owned(), BTreeSet::from(["a".to_owned()])),
    ]);
    assert_eq!(
        find_cycle(&circle),
        Some(vec!["a".to_owned(), "b".to_owned(), "a".to_owned()])
    );
}

#[test]
fn inside_every_folder_files_import_each_other_in_one_direction_only() {
    let folders = every_folder();
    let by_path: BTreeMap<&str, &Folder> = folders
        .iter()
        .map(|folder| (folder.module_path.as_str(), folder))
        .collect();
    // The scan sees imports of each kind: a sibling file (`super::`), a file from a sub-folder
    // (`super::super::`), and one by its full path.
    for (folder, from, to) in [
        ("crate::helpers", "runner", "spec"),
        ("crate::compactor", "pipeline", "cut"),
        ("crate::sys", "watchdog", "group"),
        ("crate::pane", "emulator", "history"),
    ] {
        let imports = imports(by_path[folder]);
        assert!(
            imports[from].contains(to),
            "{folder}::{from} should import {to}: {imports:?}"
        );
    }
    assert!(folders.len() > 20, "{} folders", folders.len());
    let circles: Vec<String> = folders
        .iter()
        .filter_map(|folder| {
            find_cycle(&imports(folder))
                .map(|cycle| format!("{}: {}", folder.module_path, cycle.join(" → ")))
        })
        .collect();
    assert!(
        circles.is_empty(),
        "parts of a folder importing each other in a circle (move what both need into a leaf \
         file):\n{}",
        circles.join("\n")
    );
}
