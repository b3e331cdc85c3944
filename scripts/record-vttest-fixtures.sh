#!/usr/bin/env bash
# Re-records tests/fixtures/vttest/: runs vttest (Debian's package) in a detached 80x24 tmux
# pane, walks through the screens of menus 1 (cursor movements), 2 (screen features),
# 3 (character sets) and 8 (VT102 insert/delete), and stores
#   stream.bin        every byte vttest wrote (tmux pipe-pane), from start to exit
#   offsets           "<screen> <bytes of stream.bin written when it was shown>", one a line
#   screens/<screen>  what tmux showed (capture-pane), DEC line drawing as Unicode
# then applies xterm-corrections.patch: where tmux 3.3a differs from xterm (README.md says
# where), the expected screen is xterm's. The emulator's conformance test replays stream.bin
# and compares its screen with each file. Not run by the tests; needs tmux, vttest, python3.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$root/tests/fixtures/vttest"
for tool in tmux vttest python3; do
  command -v "$tool" >/dev/null || { echo "record-vttest: '$tool' is required (apt-get install -y $tool)" >&2; exit 1; }
done

socket="vttest-record-$$"
work="$(mktemp -d)"
trap 'tmux -L "$socket" kill-server 2>/dev/null || true; rm -rf "$work"' EXIT
t() { tmux -L "$socket" -f /dev/null "$@"; }

# vttest waits on a tmux channel so the pipe is attached before its first byte.
t new-session -d -x 80 -y 24 -s rec "tmux -L $socket wait-for go; exec vttest"
t pipe-pane -o -t rec "cat > '$work/stream.bin'"
t wait-for -S go

# Waits (10 s at most) until the screen shows vttest's prompt and no byte arrived for 0.5 s.
settle() {
  local deadline=$((SECONDS + 10)) last=-1 stable=0 size
  while ((SECONDS < deadline)); do
    size="$(stat -c %s "$work/stream.bin" 2>/dev/null || echo 0)"
    if [ "$size" = "$last" ]; then stable=$((stable + 1)); else stable=0; last="$size"; fi
    if ((stable >= 5)) && t capture-pane -p -t rec | grep -qE 'Push <RETURN>|Enter choice number'; then
      return
    fi
    sleep 0.1
  done
  echo "record-vttest: vttest did not settle; screen was:" >&2
  t capture-pane -p -t rec >&2
  exit 1
}

rm -rf "$out/screens"
mkdir -p "$out/screens"
: > "$out/offsets"
# step NAME KEYS...: press KEYS, wait, and keep the screen as NAME ("-" keeps nothing: the
# 132-column screens, which neither tmux nor the pane can show at 80 columns).
step() {
  local name="$1"
  shift
  t send-keys -t rec "$@"
  settle
  [ "$name" = - ] && return
  t capture-pane -p -e -t rec | python3 -c '
import re, sys
dec = dict(zip("_`abcdefghijklmnopqrstuvwxyz{|}~",
               " ◆▒␉␌␍␊°±␤␋┘┐┌└┼⎺⎻─⎼⎽├┤┴┬│≤≥π≠£·"))
text = re.sub(r"\x1b\[[0-9;]*m", "", sys.stdin.read())
# tmux marks cells drawn in the DEC graphics set with SO ... SI.
text = re.sub(r"\x0e([^\x0f]*)\x0f?", lambda m: "".join(dec.get(c, c) for c in m.group(1)), text)
lines = [line.rstrip() for line in text.split("\n")][:24]
sys.stdout.write("\n".join(lines + [""] * (24 - len(lines))) + "\n")
' > "$out/screens/$name"
  echo "$name $(stat -c %s "$work/stream.bin")" >> "$out/offsets"
}

settle
step 1.1-decaln-and-border 1 Enter
step - Enter
step 1.3-autowrap-mixing-controls Enter
step - Enter
step 1.5-controls-inside-sequences Enter
step 1.6-leading-zeros Enter
step - Enter
step 2.1-wrap-around 2 Enter
step 2.2-tab-stops Enter
step - Enter
step 2.4-80-columns-light Enter
step - Enter
step 2.6-80-columns-dark Enter
step 2.7-soft-scroll-region Enter
step 2.8-soft-scroll-screen Enter
step 2.9-jump-scroll-region Enter
step 2.10-jump-scroll-screen Enter
step 2.11-origin-mode-bottom Enter
step 2.12-origin-mode-top Enter
step 2.13-rendition-dark Enter
step 2.14-rendition-light Enter
step 2.15-save-restore-cursor Enter
step - Enter
step 3.1-character-sets 3 Enter
step - Enter
step 8.1-accordion 8 Enter
step 8.2-insert-delete-line Enter
step 8.3-insert-mode Enter
step 8.4-delete-character Enter
step 8.5-staggered-insert-line Enter
step 8.6-staggered-delete-line Enter
step 8.7-insert-character Enter
for _ in 1 2 3 4 5 6 7 8; do step - Enter; done # the 132-column pass, back to the menu
t send-keys -t rec 0 Enter
deadline=$((SECONDS + 10))
while t has-session -t rec 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
cp "$work/stream.bin" "$out/stream.bin"
patch --quiet -d "$out" -p1 < "$out/xterm-corrections.patch"
echo "record-vttest: $(wc -l < "$out/offsets") screens, $(stat -c %s "$out/stream.bin") bytes in $out" >&2
