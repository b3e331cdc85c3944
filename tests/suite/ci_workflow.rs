//! `.github/workflows/ci.yml` is valid YAML (parsed by Python's PyYAML, which the test set-up
//! installs) and runs the README's test command on Ubuntu, with Node and Python set up and
//! `target/` and `.test-deps/` cached.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed step should panic

use std::path::Path;

use serde_json::Value;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The workflow as JSON, through `yaml.safe_load`.
fn workflow() -> Value {
    let file = repo().join(".github/workflows/ci.yml");
    let output = std::process::Command::new("python3")
        .args([
            "-c",
            "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))",
        ])
        .arg(&file)
        .output()
        .expect("python3 runs (scripts/test-deps.sh installs it with PyYAML)");
    assert!(
        output.status.success(),
        "{} is not valid YAML (or PyYAML is missing: scripts/test-deps.sh installs \
         python3-yaml): {}",
        file.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// The README's test command: the line of its first shell block that runs the whole suite.
fn readme_test_command() -> String {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let line = readme
        .lines()
        .skip_while(|line| !line.starts_with("## The two commands"))
        .find(|line| line.contains("# the whole test suite"))
        .expect("the README's \"two commands\" name the test command");
    line.split('#').next().unwrap().trim().to_owned()
}

#[test]
fn the_ci_workflow_runs_the_readme_test_command_with_caches() {
    let command = readme_test_command();
    assert_eq!(command, "scripts/test.sh");
    // .ci/run runs the same command.
    let ci_run = std::fs::read_to_string(repo().join(".ci/run")).unwrap();
    assert!(ci_run.contains(&format!("exec {command}")), "{ci_run}");

    let workflow = workflow();
    // PyYAML reads the key `on` as true.
    assert!(
        workflow
            .get("on")
            .or_else(|| workflow.get("true"))
            .is_some(),
        "{workflow:#}"
    );
    let jobs = workflow["jobs"].as_object().expect("jobs");
    assert_eq!(jobs.len(), 1, "{workflow:#}");
    let job = jobs.values().next().unwrap();
    assert!(
        job["runs-on"].as_str().unwrap().starts_with("ubuntu"),
        "{job:#}"
    );
    let steps = job["steps"].as_array().expect("steps");
    let uses = |name: &str| {
        steps
            .iter()
            .filter(|step| {
                step["uses"]
                    .as_str()
                    .is_some_and(|uses| uses.starts_with(name))
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(uses("actions/checkout@").len(), 1);
    assert_eq!(uses("actions/setup-node@").len(), 1);
    assert_eq!(uses("actions/setup-python@").len(), 1);
    let cached: Vec<&str> = uses("actions/cache@")
        .iter()
        .flat_map(|step| step["with"]["path"].as_str().unwrap().lines())
        .map(str::trim)
        .collect();
    for path in ["target", ".test-deps"] {
        assert!(cached.contains(&path), "{path} not cached: {cached:?}");
    }
    // The last step runs the README's command, exactly.
    let last = steps.last().unwrap();
    assert_eq!(last["run"].as_str().map(str::trim), Some(command.as_str()));
    // Nightly rustfmt is there for the formatting check.
    assert!(
        steps.iter().any(|step| step["run"]
            .as_str()
            .is_some_and(|run| run.contains("nightly"))),
        "{workflow:#}"
    );
}
