#!/usr/bin/env bash
# The whole test suite, exactly as CI runs it: installs the pinned Pis (and a Node new enough for
# the current one) into .test-deps/, then checks formatting and lints, then runs every test.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/test-deps.sh
# rustfmt.toml's comment options are nightly-only: check with nightly when it is installed.
if cargo +nightly fmt --version >/dev/null 2>&1; then
    cargo +nightly fmt --all -- --check
else
    cargo fmt --all -- --check 2> >(grep -v "unstable features are only available in nightly" >&2)
fi
cargo clippy --workspace --all-targets --locked -- -D warnings
# Doc comments link only to what exists (private items too: they are the developers' map).
RUSTDOCFLAGS="-D rustdoc::broken_intra_doc_links -D rustdoc::invalid_html_tags -A rustdoc::private_intra_doc_links" \
    cargo doc --workspace --no-deps --document-private-items --locked --quiet
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
cargo test --workspace --locked 2>&1 | tee "$log"
# One closing line for the whole run (cargo prints one "test result" per test binary).
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed;?$/) p += $i; if ($(i+1) ~ /^failed;?$/) f += $i } }
     END { printf "%d passed, %d failed\n", p, f }' "$log"
