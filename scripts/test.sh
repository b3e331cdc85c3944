#!/usr/bin/env bash
# The whole test suite, exactly as CI runs it: installs the pinned Pis (and a Node new enough for
# the current one) into .test-deps/, then checks formatting and lints, then runs every test.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/test-deps.sh
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked
