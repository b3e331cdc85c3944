//! Deterministic compaction: Pi's `session_before_compact` answered with a zero-LLM structured
//! summary (the pipeline), the auto-compaction decision, and the module that ties them to the
//! bridge, the session database and the workbench.
//!
//! The pipeline, pure: `entries` → `cut` (with `refusal`) → `normalize` → `brief`, `sections` →
//! `format`, run end to end by `pipeline`. Around it: `config`, `command` (the marker), `hook`,
//! `recall`, `text`, `resume`, `auto`, `ingest` and `reindex` (the database side), all pure or
//! self-contained; `module` holds the state and the bridge `Module`; `capability` and `view` the
//! workbench side.

pub mod auto;
pub mod brief;
mod bus;
mod capability;
pub mod command;
pub mod config;
pub mod cut;
pub mod entries;
pub mod format;
pub mod hook;
pub mod ingest;
pub(crate) mod legacy;
pub mod module;
pub mod normalize;
pub mod pipeline;
pub mod recall;
pub mod refusal;
pub(crate) mod reindex;
pub mod resume;
pub mod sections;
#[cfg(test)]
mod test_fixtures;
pub mod text;
pub mod view;

pub use capability::REGISTRATION;

/// No file of the folder holds fields another file changes (`pub(super)` fields). Read from the
/// sources, so a new file is covered the day it is added. (That its files import each other in
/// one direction only is checked for every folder, in `crate::layering`.)
#[cfg(test)]
mod layering {
    use std::collections::BTreeMap;
    use std::path::Path;

    /// Each file's code before its tests, by file stem.
    fn sources() -> BTreeMap<String, String> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/compactor");
        let mut sources = BTreeMap::new();
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|err| panic!("{dir:?}: {err}")) {
            let path = entry.unwrap_or_else(|err| panic!("{dir:?}: {err}")).path();
            if path.extension().is_none_or(|ext| ext != "rs") {
                continue;
            }
            let text =
                std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{path:?}: {err}"));
            let code = text
                .split("#[cfg(test)]\nmod tests {")
                .next()
                .and_then(|code| code.split("\nmod layering {").next())
                .unwrap_or_default();
            let stem = path
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            sources.insert(stem, code.to_owned());
        }
        sources
    }

    #[test]
    fn no_file_holds_fields_another_file_changes() {
        for (file, code) in sources() {
            for line in code.lines() {
                let line = line.trim_start();
                let field = line
                    .strip_prefix("pub(super) ")
                    .or_else(|| line.strip_prefix("pub(crate) "))
                    .or_else(|| line.strip_prefix("pub(in crate::compactor) "))
                    .is_some_and(|rest| {
                        rest.split_once(':').is_some_and(|(name, _)| {
                            name.chars().all(|c| c.is_alphanumeric() || c == '_')
                        })
                    });
                assert!(!field, "{file}.rs: a field other files can change: {line}");
            }
        }
    }
}
