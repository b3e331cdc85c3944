#!/usr/bin/env python3
"""Design counts for issue 26, over the production code of src/ (and widgets/src for fn length).

  Result<_, String>  signatures (fn and trait methods) returning a Result whose error is String
  long functions     production fns longer than 80 lines (signature line to closing brace)
  folder-only pub    `pub` items (not pub(crate)/pub(super)/pub(in)) of src/<folder>/ whose name
                     appears in no file outside that folder (src, tests, benches, widgets)
Test code is left out: files named tests.rs / *_tests.rs / test_*.rs and inline `#[cfg(test)]`
modules.
Usage: design.py [repo] [--list long|string|pub]
"""
import os, re, sys

repo = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith('--') else '.'
listing = sys.argv[sys.argv.index('--list') + 1] if '--list' in sys.argv else None

def rs_files(root):
    for d, _, fs in os.walk(root):
        for f in fs:
            if f.endswith('.rs'):
                yield os.path.join(d, f)

def is_test_file(path):
    b = os.path.basename(path)
    return b == 'tests.rs' or b.endswith('_tests.rs') or b.startswith('test_') or '/tests/' in path

def strip_tests(text):
    """Blanks inline #[cfg(test)] mod blocks (keeps line numbers)."""
    lines = text.split('\n')
    out = list(lines)
    i = 0
    while i < len(lines):
        if lines[i].strip().startswith('#[cfg(test)]'):
            j = i + 1
            while j < len(lines) and (lines[j].strip().startswith(('#[', '//')) or lines[j].strip() == ''):
                j += 1
            if j < len(lines) and re.match(r'\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{', lines[j]):
                depth = 0; k = j
                while k < len(lines):
                    depth += code_only(lines[k]).count('{') - code_only(lines[k]).count('}')
                    if depth <= 0 and '{' in ''.join(lines[j:k+1]):
                        break
                    k += 1
                for m in range(i, min(k + 1, len(lines))):
                    out[m] = ''
                i = k + 1
                continue
        i += 1
    return '\n'.join(out)

def code_only(line):
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])'", "''", line)
    return line.split('//')[0]

def prod_files():
    for root in ['src', 'widgets/src']:
        for p in rs_files(os.path.join(repo, root)):
            if is_test_file(p):
                continue
            yield p, strip_tests(open(p, encoding='utf-8').read())

# --- long functions
long_fns = []
fn_re = re.compile(r'^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?(extern\s+"[^"]*"\s+)?fn\s+(\w+)')
for path, text in prod_files():
    lines = text.split('\n')
    i = 0
    while i < len(lines):
        m = fn_re.match(lines[i])
        if m:
            depth = 0; started = False; k = i
            while k < len(lines):
                c = code_only(lines[k])
                if not started and ';' in c and '{' not in c and depth == 0:
                    break  # a declaration without a body
                depth += c.count('{') - c.count('}')
                if '{' in c:
                    started = True
                if started and depth <= 0:
                    break
                k += 1
            if started:
                n = k - i + 1
                if n > 80:
                    long_fns.append((n, os.path.relpath(path, repo), i + 1, m.group(7)))
            i += 1
        else:
            i += 1

# --- Result<_, String>
string_sigs = []
for path, text in prod_files():
    flat = text
    for m in re.finditer(r'fn\s+\w+[^{;]*?->\s*([^{;]*)', flat, re.S):
        ret = m.group(1)
        if re.search(r'Result<.*,\s*String\s*>', ret.replace('\n', ' ')):
            line = flat[:m.start()].count('\n') + 1
            string_sigs.append((os.path.relpath(path, repo), line, ret.strip().split('\n')[0]))

# --- pub items used only in their folder
items = []
pub_re = re.compile(r'^\s*pub\s+(?:async\s+|const\s+|unsafe\s+)*(fn|struct|enum|trait|const|static|type|mod|use)\s+([A-Za-z_]\w*)')
src = os.path.join(repo, 'src')
for path, text in prod_files():
    rel = os.path.relpath(path, src)
    if rel.startswith('..'):
        continue
    folder = rel.split(os.sep)[0] if os.sep in rel else None
    if folder is None:
        continue  # top-level files (lib.rs, cli.rs, …) are the crate's face
    for no, line in enumerate(text.split('\n'), 1):
        m = pub_re.match(line)
        if m and m.group(1) != 'use':
            items.append((m.group(2), folder, os.path.relpath(path, repo), no))
corpus = {}
for root in ['src', 'tests', 'benches', 'widgets/src']:
    for p in rs_files(os.path.join(repo, root)):
        corpus[p] = open(p, encoding='utf-8').read()
def folder_of(p):
    rel = os.path.relpath(p, src)
    if rel.startswith('..') or os.sep not in rel:
        return None
    return rel.split(os.sep)[0]
word_cache = {}
folder_only = []
for name, folder, path, no in items:
    pat = re.compile(r'\b' + re.escape(name) + r'\b')
    outside = any(pat.search(t) for p, t in corpus.items() if folder_of(p) != folder)
    if not outside:
        folder_only.append((path, no, name))

print(f"Result<_, String> signatures: {len(string_sigs)}")
print(f"production fns over 80 lines: {len(long_fns)}")
print(f"pub items of a folder used only inside it: {len(folder_only)} (of {len(items)} pub items in folders)")
if listing == 'long':
    for n, p, l, name in sorted(long_fns, reverse=True):
        print(f"  {n:4} {p}:{l} {name}")
elif listing == 'string':
    for p, l, r in string_sigs:
        print(f"  {p}:{l} {r}")
elif listing == 'pub':
    for p, l, name in folder_only:
        print(f"  {p}:{l} {name}")
