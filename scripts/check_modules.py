#!/usr/bin/env python3
"""Module circles and long functions in the workspace's non-test Rust code.

Run from anywhere: `python3 scripts/check_modules.py`. Exits 1 and lists what it finds when a
crate has an import circle between its modules or a function outside tests is over
MAX_FN_LINES lines; `--list-functions N` prints every function over N lines and exits 0.

What counts as a module and an edge:

- A module is a file. Each crate root (`src/lib.rs`, `src/main.rs`) is walked through its
  `mod name;` declarations (`name.rs` or `name/mod.rs`); a module declared under an attribute
  naming `test` (`#[cfg(test)]`, `#[cfg(any(test, feature = "testsuite"))]`) is test code and
  left out with everything below it, as are inline items under such an attribute.
- Module M depends on module T when M's non-test code names an item of T by a path: `use`
  trees (`use crate::a::{b, c::D}`, `use super::x`, `use child::y`) and inline paths
  (`crate::a::f(..)`, `super::x::Y`). A path resolves to the deepest module it names; when the
  item there is itself imported (`pub use sub::Item`, or a plain `use`, which the module's
  descendants also see), the path is followed to where the item is defined, so naming a
  re-export depends on the module that defines the item, not on the one that re-exports it.
- The rule for parents and children: an edge from a module to one of its own ancestors is not
  counted. A child using items its parent defines (`super::Config`) is the usual Rust shape
  of a parent that owns shared types and children that implement parts, and the parent's
  `mod` line is not a use. A parent using a child's items (`use self::child::f`, `child::f`)
  counts as parent -> child, and every other edge (siblings, cousins, a module using a
  descendant of a sibling) counts as written. So a circle is always between modules of which
  neither contains the other: two files that each need the other, directly or through others.

Long functions: a `fn` with a body whose lines from the `fn` keyword to its closing brace are
more than MAX_FN_LINES, in non-test code (files under a `tests/` directory and test modules as
above are left out). The functions listed in `scripts/long-functions.txt` are known and not
split yet; the check fails on any other, and on a listed one that is no longer long. A declarative table — a function that is one `match` from keys to values
— may carry `// long: declarative table` on the line before its `fn` (or before its
attributes) to be allowed.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

MAX_FN_LINES = 100
ALLOW_MARKER = "// long: declarative table"
ROOT = Path(__file__).resolve().parent.parent
# Long functions not split yet, one `path: fn name` a line. The check fails on a long function
# not listed and on a listed one that is no longer long, so the list only shrinks.
TO_SPLIT = ROOT / "scripts" / "long-functions.txt"

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


# ---------------------------------------------------------------- lexing


def blank_literals(src: str) -> str:
    """Returns the source with comments, strings and char literals replaced by spaces.

    Newlines are kept, so line numbers stay those of the file.
    """
    out = []
    i, n = 0, len(src)

    def blank(text: str) -> str:
        return "".join("\n" if c == "\n" else " " for c in text)

    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(blank(src[i:j]))
            i = j
        elif src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(blank(src[i:j]))
            i = j
        elif (m := re.compile(r'b?r(#*)"').match(src, i)) and (
            i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")
        ):
            end = '"' + m.group(1)
            j = src.find(end, m.end())
            j = n if j < 0 else j + len(end)
            out.append(blank(src[i:j]))
            i = j
        elif c == '"' or (c == "b" and src.startswith('b"', i) and
                          (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_"))):
            j = i + (2 if c == "b" else 1)
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            j += 1
            out.append(blank(src[i:j]))
            i = j
        elif c == "'" and (m := re.compile(r"'(?:\\(?:u\{[0-9a-fA-F]+\}|x..|.)|[^\\'\n])'").match(src, i)):
            out.append(blank(m.group(0)))
            i = m.end()
        else:
            out.append(c)
            i += 1
    return "".join(out)


def matching_brace(code: str, open_at: int) -> int:
    """Returns the index of the brace closing the one at `open_at` (code without literals)."""
    depth = 0
    for j in range(open_at, len(code)):
        if code[j] == "{":
            depth += 1
        elif code[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(code) - 1


ATTR_TEST = re.compile(r"#\[cfg\((?:[^\]]*\btest\b[^\]]*)\)\]")


def strip_test_items(code: str) -> str:
    """Blanks every item under an attribute naming `test` (an inline test module, a test fn).

    `#[cfg(not(test))]` items are code, not tests, and stay.
    """
    pos = 0
    while True:
        m = ATTR_TEST.search(code, pos)
        if not m:
            return code
        if re.search(r"not\s*\(\s*test\b", m.group(0)):
            pos = m.end()
            continue
        j = m.end()
        # The item ends at its first `;` before any `{`, or at the brace closing its body.
        k = j
        while k < len(code) and code[k] not in "{;":
            k += 1
        end = k if k >= len(code) or code[k] == ";" else matching_brace(code, k)
        code = code[: m.start()] + "".join(
            "\n" if c == "\n" else " " for c in code[m.start() : end + 1]
        ) + code[end + 1 :]
        pos = m.start()


# ---------------------------------------------------------------- modules


class Module:
    def __init__(self, path: tuple[str, ...], file: Path, code: str):
        self.path = path  # ("engine", "hybrid"); () for the crate root
        self.file = file
        self.code = code  # without literals and test items
        self.children: set[str] = set()
        self.imports: dict[str, tuple[str, ...]] = {}  # name -> absolute path
        self.uses: list[tuple[str, ...]] = []  # every absolute path the module names

    @property
    def name(self) -> str:
        return "::".join(self.path) or "crate"


MOD_DECL = re.compile(r"(?m)^[ \t]*(?:pub(?:\([^)]*\))?\s+)?mod\s+(" + IDENT + r")\s*;")


def load_crate(root_file: Path) -> dict[tuple[str, ...], Module]:
    """Returns the crate's non-test modules, walked from its root file."""
    modules: dict[tuple[str, ...], Module] = {}

    def visit(path: tuple[str, ...], file: Path, dir_for_children: Path) -> None:
        code = strip_test_items(blank_literals(file.read_text()))
        module = Module(path, file, code)
        modules[path] = module
        for m in MOD_DECL.finditer(code):
            child = m.group(1)
            for candidate in (dir_for_children / f"{child}.rs", dir_for_children / child / "mod.rs"):
                if candidate.exists():
                    module.children.add(child)
                    visit(path + (child,), candidate, dir_for_children / child)
                    break

    root_dir = root_file.parent
    visit((), root_file, root_dir)
    # A file `foo.rs` has its children in `foo/`; `foo/mod.rs` too (handled by dir_for_children).
    return modules


def split_top(text: str) -> list[str]:
    """Splits a use-tree list on commas that are not inside braces."""
    parts, depth, cur = [], 0, []
    for c in text:
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        if c == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def expand_use_tree(tree: str, prefix: list[str]) -> list[tuple[list[str], str | None]]:
    """Returns (path, bound name) for each leaf of a use tree; the name is None for a glob."""
    tree = re.sub(r"\s+", "", tree.replace("::", "\x00")).replace("\x00", "::")
    if tree.startswith("::"):
        tree = tree[2:]
    if "{" in tree and tree.endswith("}"):
        head, _, body = tree.partition("{")
        head_segs = [s for s in head.split("::") if s]
        out = []
        for part in split_top(body[:-1]):
            out.extend(expand_use_tree(part, prefix + head_segs))
        return out
    alias = None
    if "as" in tree and re.search(r"\bas\b", tree.replace("::", " :: ")):
        tree, alias = re.split(r"(?<=[A-Za-z0-9_])as(?=[A-Za-z_])", tree, maxsplit=1)
    segs = [s for s in tree.split("::") if s]
    if segs and segs[-1] == "*":
        return [(prefix + segs[:-1], None)]
    if segs and segs[-1] == "self":
        segs = segs[:-1]
    full = prefix + segs
    if not full:
        return []
    name = alias if alias else full[-1]
    return [(full, None if name == "_" else name)]


USE_STMT = re.compile(r"(?m)^[ \t]*(?:pub(?:\([^)]*\))?\s+)?use\s+([^;]+);")
INLINE_PATH = re.compile(r"(?<![A-Za-z0-9_:])((?:crate|super|self)(?:\s*::\s*" + IDENT + r")+)")


LOCAL_PATH = re.compile(r"(?<![A-Za-z0-9_:])(" + IDENT + r"(?:\s*::\s*" + IDENT + r")+)")


def absolute(module: Module, segs: list[str]) -> tuple[str, ...] | None:
    """Returns the crate-absolute form of a path written in `module`, or None if external."""
    if not segs:
        return None
    head = segs[0]
    if head == "crate":
        return tuple(segs[1:])
    if head in ("self", "super"):
        base = list(module.path)
        rest = segs
        while rest and rest[0] in ("self", "super"):
            if rest[0] == "super":
                if not base:
                    return None
                base.pop()
            rest = rest[1:]
        return tuple(base + rest)
    if head in module.children:
        return tuple(module.path) + tuple(segs)
    return None


def collect_paths(modules: dict[tuple[str, ...], Module]) -> None:
    for module in modules.values():
        for m in USE_STMT.finditer(module.code):
            public = m.group(0).lstrip().startswith("pub")
            for segs, name in expand_use_tree(m.group(1), []):
                path = absolute(module, segs)
                if path is None:
                    continue
                if name is not None:
                    module.imports[name] = path
                # Importing a module is no edge by itself: the paths through it are. A parent
                # re-exporting its descendants' items declares its interface, like its `mod`
                # lines; whoever names the item depends on the module defining it.
                if path in modules or (public and is_ancestor(module.path, resolve(modules, path))):
                    continue
                module.uses.append(path)
        # Inline paths are read outside `use` statements, whose trees are expanded above:
        # `crate::a::f`, `super::x::Y`, and `m::f` where `m` is a child or an imported module.
        code = USE_STMT.sub(lambda u: " " * len(u.group(0)), module.code)
        for m in INLINE_PATH.finditer(code):
            segs = [s.strip() for s in m.group(1).split("::")]
            path = absolute(module, segs)
            if path is not None:
                module.uses.append(path)
        for m in LOCAL_PATH.finditer(code):
            segs = [s.strip() for s in m.group(1).split("::")]
            head = module.imports.get(segs[0])
            if segs[0] in module.children:
                module.uses.append(module.path + tuple(segs))
            elif head is not None and head in modules:
                module.uses.append(head + tuple(segs[1:]))


def resolve(modules: dict[tuple[str, ...], Module], path: tuple[str, ...]) -> tuple[str, ...]:
    """Returns the module defining what `path` names, following imports (re-exports)."""
    for _ in range(16):
        k = len(path)
        while k > 0 and path[:k] not in modules:
            k -= 1
        owner = path[:k]
        rest = path[k:]
        if not rest:
            return owner
        # The item may be imported into `owner` or, for an ancestor's private `use`, seen there.
        target = modules[owner].imports.get(rest[0])
        if target is None or target == owner + (rest[0],):
            return owner
        path = target + rest[1:]
    return path


def is_ancestor(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    return len(a) < len(b) and b[: len(a)] == a


def module_edges(modules) -> dict[tuple[str, ...], dict[tuple[str, ...], set[str]]]:
    """Returns module -> module -> the paths behind the edge."""
    edges: dict[tuple[str, ...], dict[tuple[str, ...], set[str]]] = {p: {} for p in modules}
    for module in modules.values():
        for path in module.uses:
            target = resolve(modules, path)
            if target == module.path or is_ancestor(target, module.path):
                continue
            edges[module.path].setdefault(target, set()).add("::".join(path))
    return edges


def circles(edges) -> list[list[tuple[str, ...]]]:
    """Returns the strongly connected components with more than one module (Tarjan)."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in list(edges):
        if v not in index:
            strong(v)
    return out


# ---------------------------------------------------------------- functions

FN_ITEM = re.compile(r"(?<![A-Za-z0-9_])fn\s+(" + IDENT + r")")


def long_functions(module: Module, raw_lines: list[str], limit: int):
    """Yields (name, first line, lines) for each fn with a body over `limit` lines."""
    code = module.code
    for m in FN_ITEM.finditer(code):
        k = m.end()
        paren = 0
        while k < len(code):
            c = code[k]
            if c in "([":
                paren += 1
            elif c in ")]":
                paren -= 1
            elif paren == 0 and c in "{;":
                break
            k += 1
        if k >= len(code) or code[k] == ";":
            continue
        end = matching_brace(code, k)
        first = code.count("\n", 0, m.start()) + 1
        last = code.count("\n", 0, end) + 1
        lines = last - first + 1
        if lines <= limit:
            continue
        # The marker sits on the line before the fn or before its attributes.
        j = first - 2
        while j >= 0 and raw_lines[j].strip().startswith("#["):
            j -= 1
        if j >= 0 and raw_lines[j].strip() == ALLOW_MARKER:
            continue
        yield m.group(1), first, lines


# ---------------------------------------------------------------- main


def crate_roots() -> list[Path]:
    roots = []
    for base in ("crates", "apps"):
        for crate in sorted((ROOT / base).iterdir()):
            for root in ("lib.rs", "main.rs"):
                f = crate / "src" / root
                if f.exists():
                    roots.append(f)
    return roots


def main(argv: list[str]) -> int:
    limit = MAX_FN_LINES
    listing = False
    if len(argv) == 2 and argv[0] == "--list-functions":
        limit, listing = int(argv[1]), True
    found_circles, found_long = [], []
    seen_files: set[Path] = set()
    for root in crate_roots():
        crate = root.parent.parent.relative_to(ROOT)
        modules = load_crate(root)
        collect_paths(modules)
        edges = module_edges(modules)
        for comp in circles(edges):
            lines = [f"{crate} ({root.name}): " + " <-> ".join(
                "::".join(p) or "crate" for p in comp)]
            members = set(comp)
            for a in comp:
                for b, paths in sorted(edges[a].items()):
                    if b in members:
                        lines.append(f"    {'::'.join(a) or 'crate'} -> {'::'.join(b)}: "
                                     + ", ".join(sorted(paths)[:4]))
            found_circles.append("\n".join(lines))
        for module in modules.values():
            if module.file in seen_files or "tests" in module.file.relative_to(ROOT).parts:
                continue
            seen_files.add(module.file)
            raw = module.file.read_text().splitlines()
            for name, first, lines in long_functions(module, raw, limit):
                found_long.append(f"{module.file.relative_to(ROOT)}:{first}: fn {name}: {lines} lines")
    if listing:
        print("\n".join(found_long))
        return 0
    status = 0
    if found_circles:
        print("import circles between modules:", file=sys.stderr)
        print("\n".join(found_circles), file=sys.stderr)
        status = 1
    else:
        print("no import circle between the modules of any crate", file=sys.stderr)
    listed = set()
    if TO_SPLIT.exists():
        listed = {line.strip() for line in TO_SPLIT.read_text().splitlines()
                  if line.strip() and not line.startswith("#")}
    keys = {f.split(":")[0] + ": fn " + f.split(": fn ")[1].split(":")[0]: f for f in found_long}
    new = [f for k, f in keys.items() if k not in listed]
    gone = sorted(listed - set(keys))
    if new:
        print(f"functions outside tests over {MAX_FN_LINES} lines (split them; a declarative "
              f"table may say `{ALLOW_MARKER}` on the line before):", file=sys.stderr)
        print("\n".join(new), file=sys.stderr)
        status = 1
    if gone:
        print(f"no longer over {MAX_FN_LINES} lines, remove from {TO_SPLIT.relative_to(ROOT)}:",
              file=sys.stderr)
        print("\n".join(gone), file=sys.stderr)
        status = 1
    if not new and not gone:
        print(f"no function outside tests over {MAX_FN_LINES} lines but the "
              f"{len(listed)} listed in {TO_SPLIT.relative_to(ROOT)}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
