#!/usr/bin/env python3
"""Config reading code of unipi-tui (issue 26, config part): production lines of the files that
turn the user's JSON/TOML config files into config values, tests left out.

Scope (fixed before the work started, commit 11ec660):
  whole files (production part): every file in FILES below, each of which exists only to read,
  check, merge, save or show one config file (its config types, defaults, loaders, key
  readers, error placement, settings-overlay fields and saving);
  plus, in files that do more, the named functions in FUNCTIONS (tool-argument parsing and the
  scenario file, which use the same key-walking).
Left out: src/config/keymap.rs (another part of issue 26), src/config/live.rs (the reload
mechanism, kept as is), src/config/references.rs (a text scanner), src/helpers/agents.rs
(agent markdown files, not a JSON/TOML config).
Test code is left out as design.py does: tests.rs / *_tests.rs / test_*.rs files and inline
#[cfg(test)] modules (and any #[cfg(test)] item).
Counts: 'lines' = non-blank production lines; 'code' = non-blank lines that are not only a comment.
New files under src/config/ that serve config reading are counted too (NEW_CONFIG_GLOB).
Usage: config_lines.py [repo] [--files]
"""
import os, re, sys, glob

repo = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith('--') else '.'
FILES = [
    'src/config/mod.rs', 'src/config/error.rs', 'src/config/module_file.rs',
    'src/config/footer.rs', 'src/config/theme.rs',
    'src/tasks/config.rs', 'src/compactor/config.rs', 'src/web/config.rs',
    'src/askuser/config.rs', 'src/notify/config.rs', 'src/notify/settings.rs',
    'src/fusion/config.rs', 'src/helpers/config.rs', 'src/delegate/config.rs',
    'src/mcp/config.rs', 'src/detach/config.rs',
]
# Files under src/config/ that are not config reading (or are another part's).
NOT_CONFIG = {'src/config/keymap.rs', 'src/config/live.rs', 'src/config/references.rs'}
FUNCTIONS = {
    'src/scripted/scenario.rs': ['from_toml_str', 'build_rule', 'build_reply'],
    'src/helpers/args.rs': ['parse_workflow'],
}
# parse_delegate_args moves when delegate/module.rs is split: found wherever it is.
FUNCTIONS_ANYWHERE = {'src/delegate': ['parse_delegate_args']}

def code_only(line):
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])'", "''", line)
    return line.split('//')[0]

def item_end(lines, j):
    """The last line of the item starting at line j: one ending in `;` on its first line, else
    the line closing it, which rustfmt writes as `}` at the indentation the item starts at
    (braces inside strings and raw strings cannot fool this)."""
    indent = ' ' * (len(lines[j]) - len(lines[j].lstrip()))
    if code_only(lines[j]).rstrip().endswith(';'):
        return j
    for k in range(j + 1, len(lines)):
        if lines[k].rstrip() in (indent + '}', indent + '};'):
            return k
    return len(lines) - 1

def strip_tests(lines):
    """Blanks #[cfg(test)] items (modules, fns, impls, uses) with their attributes."""
    out = list(lines); i = 0
    while i < len(lines):
        if lines[i].strip().startswith('#[cfg(test)]'):
            j = i + 1
            while j < len(lines) and (lines[j].strip().startswith(('#[', '//')) or not lines[j].strip()):
                j += 1
            k = item_end(lines, j)
            for m in range(i, k + 1):
                out[m] = ''
            i = k + 1
            continue
        i += 1
    return out

def count(lines):
    total = sum(1 for l in lines if l.strip())
    code = sum(1 for l in lines if l.strip() and not l.strip().startswith('//'))
    return total, code

fn_re = re.compile(r'^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?fn\s+(\w+)')

def function_lines(lines, names):
    picked = []
    i = 0
    while i < len(lines):
        m = fn_re.match(lines[i])
        if m and m.group(5) in names:
            s = i
            while s > 0 and lines[s - 1].strip().startswith(('///', '#[')):
                s -= 1
            k = item_end(lines, i)
            picked.extend(lines[s:k + 1])
            i = k + 1
            continue
        i += 1
    return picked

def is_test_file(p):
    b = os.path.basename(p)
    return b == 'tests.rs' or b.endswith('_tests.rs') or b.startswith('test_')

rows = []
files = list(FILES)
for p in sorted(glob.glob(os.path.join(repo, 'src/config/**/*.rs'), recursive=True)):
    rel = os.path.relpath(p, repo)
    if rel not in files and rel not in NOT_CONFIG and not is_test_file(rel):
        files.append(rel)
for rel in files:
    p = os.path.join(repo, rel)
    if not os.path.exists(p):
        rows.append((rel, 0, 0)); continue
    lines = strip_tests(open(p, encoding='utf-8').read().split('\n'))
    rows.append((rel, *count(lines)))
for rel, names in FUNCTIONS.items():
    lines = strip_tests(open(os.path.join(repo, rel), encoding='utf-8').read().split('\n'))
    rows.append((rel + '::' + ','.join(names), *count(function_lines(lines, names))))
for folder, names in FUNCTIONS_ANYWHERE.items():
    for p in sorted(glob.glob(os.path.join(repo, folder, '**/*.rs'), recursive=True)):
        if is_test_file(p):
            continue
        lines = strip_tests(open(p, encoding='utf-8').read().split('\n'))
        picked = function_lines(lines, names)
        if picked:
            rows.append((os.path.relpath(p, repo) + '::' + ','.join(names), *count(picked)))
total = sum(r[1] for r in rows); code = sum(r[2] for r in rows)
if '--files' in sys.argv:
    for rel, t, c in rows:
        print(f"  {t:5} {c:5}  {rel}")
print(f"config reading code: {total} lines, {code} code lines (non-blank, non-comment)")
