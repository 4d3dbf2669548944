#!/usr/bin/env python3
"""Lists the import circles between the modules of each crate.

A module is one source file (`lib.rs`/`main.rs` is the crate root, `a/mod.rs` and
`a.rs` are module `a`). Module A imports module B when A names a path into B that
starts with `crate::`, `super::` or `self::` (in a `use` or inline, such as
`super::mcp::stop(...)`); the path ends at the deepest module that exists, so
`crate::config::Database` is an import of `config` even when `config/mod.rs` only
re-exports it. `mod x;` declarations are not imports, and neither is code after
`#[cfg(test)]` (unit tests may use their parent freely).

A circle is a strongly connected component of more than one module. Directories are
checked too: each module counts as its top-level module (`runners/deps.rs` as
`runners`), so `a/x.rs -> b.rs -> a/y.rs` is a circle between `a` and `b` although no
file imports itself back. Prints each circle as `crate: a -> b -> ... -> a` (one cycle
through its modules; `(directories)` for the second kind) and exits 1 when there is
any, 0 when there is none.

Usage: scripts/module-cycles.py [CRATE_DIR ...]   (default: every crates/*)
"""

import re
import sys
from pathlib import Path

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
USE_RE = re.compile(r"\buse\s+((?:crate|super|self)\b[^;]*);", re.S)
INLINE_RE = re.compile(r"\b((?:crate|super)(?:::" + IDENT + r")+)")


def strip_comments_and_strings(text):
    """Code without comments, string and char literals (kept as blanks)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            hashes = re.match(r"r(#*)\"", text[i:]).group(1)
            end = text.find('"' + hashes, i + 2 + len(hashes))
            i = n if end < 0 else end + 1 + len(hashes)
            out.append('""')
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            out.append('""')
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i:i + 4]):
            i += len(re.match(r"'(\\[^']*|[^\\'])'", text[i:]).group(0))
        else:
            out.append(c)
            i += 1
    return "".join(out)


def without_tests(code):
    """The code before the first `#[cfg(test)]`."""
    at = code.find("#[cfg(test)]")
    return code if at < 0 else code[:at]


def expand_use(tree):
    """`a::{b, c::{d, e}}` -> ['a::b', 'a::c::d', 'a::c::e'] (`as` renames dropped)."""
    tree = re.sub(r"\s+as\s+" + IDENT, "", tree)
    tree = re.sub(r"\s+", "", tree)
    if "{" not in tree:
        return [tree]
    start = tree.index("{")
    prefix = tree[:start]
    depth, parts, current = 0, [], ""
    for c in tree[start + 1:-1]:
        if c == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        depth += c == "{"
        depth -= c == "}"
        current += c
    parts.append(current)
    paths = []
    for part in parts:
        if not part:
            continue
        for sub in expand_use(part):
            paths.append(prefix + sub if sub != "self" else prefix.rstrip(":"))
    return paths


def modules_of(src):
    """{module path tuple: file} for the crate rooted at `src`."""
    modules = {}
    for file in src.rglob("*.rs"):
        rel = file.relative_to(src).with_suffix("")
        parts = list(rel.parts)
        if parts in (["lib"], ["main"]):
            parts = []
        elif parts[-1] == "mod":
            parts = parts[:-1]
        modules[tuple(parts)] = file
    return modules


def resolve(module, path, modules):
    """The module `path` (as written in `module`) lands in, or None."""
    segments = [s for s in path.split("::") if s]
    if not segments:
        return None
    if segments[0] == "crate":
        base, rest = (), segments[1:]
    elif segments[0] in ("super", "self"):
        base = list(module)
        while segments and segments[0] in ("super", "self"):
            if segments[0] == "super":
                if not base:
                    return None
                base.pop()
            segments = segments[1:]
        base, rest = tuple(base), segments
    else:
        return None
    target = base
    for segment in rest:
        if target + (segment,) in modules:
            target = target + (segment,)
        else:
            break
    return target


def edges_of(modules):
    edges = {module: set() for module in modules}
    for module, file in modules.items():
        code = without_tests(strip_comments_and_strings(file.read_text(encoding="utf-8")))
        paths = []
        for use in USE_RE.finditer(code):
            paths.extend(expand_use(use.group(1)))
        code_without_uses = USE_RE.sub("", code)
        paths.extend(m.group(1) for m in INLINE_RE.finditer(code_without_uses))
        for path in paths:
            target = resolve(module, path, modules)
            if target is not None and target != module:
                edges[module].add(target)
    return edges


def components(edges):
    """Strongly connected components (Tarjan), iteratively."""
    index, low, on_stack, stack, result = {}, {}, set(), [], []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    result.append(sorted(component))
    return result


def cycle_through(component, edges):
    """One closed walk from the first module back to it within the component."""
    members = set(component)
    start = component[0]
    # Breadth-first from start's successors back to start.
    previous = {}
    queue = [start]
    seen = {start}
    while queue:
        node = queue.pop(0)
        for child in sorted(edges[node] & members):
            if child == start:
                walk = [node]
                while walk[-1] != start:
                    walk.append(previous[walk[-1]])
                return list(reversed(walk)) + [start]
            if child not in seen:
                seen.add(child)
                previous[child] = node
                queue.append(child)
    return component + [start]


def top_level(edges):
    """The graph between top-level modules (directories and top-level files)."""
    collapsed = {}
    for module, targets in edges.items():
        source = module[:1]
        collapsed.setdefault(source, set())
        for target in targets:
            if target[:1] != source:
                collapsed[source].add(target[:1])
                collapsed.setdefault(target[:1], set())
    return collapsed


def name(module):
    return "::".join(module) if module else "crate"


def main(argv):
    root = Path(__file__).resolve().parent.parent
    crates = [Path(a) for a in argv] or sorted(p for p in (root / "crates").iterdir() if (p / "src").is_dir())
    found = 0
    for crate in crates:
        modules = modules_of(crate / "src")
        edges = edges_of(modules)
        for component in components(edges):
            found += 1
            walk = " -> ".join(name(m) for m in cycle_through(component, edges))
            print(f"{crate.name}: {walk}  ({len(component)} modules: {', '.join(name(m) for m in component)})")
        if components(edges):
            continue
        # Directory level, once the files are clear (a file circle is one here too).
        directories = top_level(edges)
        for component in components(directories):
            found += 1
            walk = " -> ".join(name(m) for m in cycle_through(component, directories))
            print(f"{crate.name} (directories): {walk}")
    print(f"{found} circle(s)", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
