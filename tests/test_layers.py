"""The floors of docs/architecture.md, checked against every import of `vlnkit/`, `transforms/` and `pipelines/`.

The floor table of docs/architecture.md is the one statement of the structure: each row names a module
folder (or a single module), its floor and what it may import. This test reads that table and every
import statement of the three packages with `ast` (at the top of a module, inside functions, under
`if TYPE_CHECKING:`: all of them), and fails on

- a circle between modules (two or more modules that import each other, directly or through others);
- an import from a lower floor to a higher one, or between two folders of one floor;
- an import of a folder the importing folder's row does not list under "may import";
- a module no row of the table covers (a new folder needs its row).

Imports by `importlib` (the job launcher's) are not statements and are not seen; `from P import m`
names the module `P.m` when there is one (the package `P`'s `__init__` only hands names on).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.conftest import ROOT

PACKAGES = ("vlnkit", "transforms", "pipelines")
ARCHITECTURE = ROOT / "docs" / "architecture.md"
EVERY_FLOOR_BELOW = "every floor below"

# Imports known to break the floors that are waiting for a change in progress: {(importing module, imported
# module)}, each with a comment saying whose change removes it. Empty today. The test fails when an entry is
# not needed any more, so the list cannot go stale.
PENDING: set[tuple[str, str]] = set()


# ---------------------------------------------------------------------------- the floor table
def floor_table(text: str) -> dict[str, tuple[int, set[str] | None]]:
    """{folder: (floor, folders it may import, or None for every floor below)} from the markdown table
    whose header starts `| floor | folder |`."""
    rows, inside = {}, False
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if cells[:2] == ["floor", "folder"]:
            inside = True
            continue
        if not inside:
            continue
        if not cells:
            break
        if set(cells[0]) <= {"-", ":", " "}:
            continue
        (folder,) = re.findall(r"`([^`]+)`", cells[1])
        may = cells[-1]
        allowed = None if may == EVERY_FLOOR_BELOW else set(re.findall(r"`([^`]+)`", may))
        rows[folder] = (int(cells[0]), allowed)
    return rows


def test_the_table_is_read_and_every_row_may_import_only_lower_floors():
    rows = floor_table(ARCHITECTURE.read_text())
    assert {"vlnkit/io/fileio.py", "vlnkit/io/", "vlnkit/datasets/", "transforms/", "pipelines/"} <= set(rows)
    for folder, (floor, allowed) in rows.items():
        for other in allowed or ():
            assert other in rows, f"{folder}: may import {other}, which has no row"
            assert rows[other][0] < floor, f"{folder} (floor {floor}) may import {other} (floor {rows[other][0]})"


# ---------------------------------------------------------------------------- the imports
def module_files() -> dict[str, Path]:
    """{dotted module name: file} of every module of PACKAGES."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> dict[str, int]:
    """{imported module of PACKAGES: the line of its first import} for every import statement of a module."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: dict[str, int] = {}

    def add(target: str, line: int) -> None:
        while target and target not in modules:
            target = target.rpartition(".")[0]  # `import a.b.c` of a name inside a module: that module
        if target and target != name:
            found.setdefault(target, line)

    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*up, base] if base else up)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                add(full if full in modules else base, node.lineno)
    return found


def import_graph() -> tuple[dict[str, Path], dict[str, dict[str, int]]]:
    modules = module_files()
    return modules, {name: imports_of(name, path, modules) for name, path in modules.items()}


def circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def folder_of(module: str, modules: dict[str, Path], rows) -> str | None:
    """The longest row of the table that holds the module's file."""
    relative = modules[module].relative_to(ROOT).as_posix()
    held = [f for f in rows if relative == f or (f.endswith("/") and relative.startswith(f))]
    return max(held, key=len) if held else None


def test_circles_are_found():
    assert circles({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}) == [["a", "b", "c"]]
    assert circles({"a": {"b": 1}, "b": {}}) == []


def test_no_module_imports_another_that_imports_it_back():
    modules, graph = import_graph()
    assert len(modules) > 120 and "vlnkit.io.fileio" in graph
    found = circles(graph)
    described = [
        " -> ".join(c)
        + ": "
        + "; ".join(f"{a} imports {b} (line {graph[a][b]})" for a in c for b in c if b in graph[a])
        for c in found
    ]
    assert not found, "\n".join(described)


def test_every_import_goes_down_the_floors():
    rows = floor_table(ARCHITECTURE.read_text())
    modules, graph = import_graph()
    homeless = sorted(m for m in modules if folder_of(m, modules, rows) is None)
    assert not homeless, f"no row of the floor table in docs/architecture.md holds {homeless}: add their folder"
    wrong, pending_seen = [], set()
    for importer, imported in sorted(graph.items()):
        here = folder_of(importer, modules, rows)
        floor, allowed = rows[here]
        for target, line in sorted(imported.items()):
            there = folder_of(target, modules, rows)
            if there == here:
                continue
            ok = rows[there][0] < floor and (allowed is None or there in allowed)
            if ok:
                continue
            if (importer, target) in PENDING:
                pending_seen.add((importer, target))
                continue
            why = "a higher or the same floor" if rows[there][0] >= floor else "a folder its row does not list"
            wrong.append(f"{importer} (line {line}, {here} floor {floor}) imports {target} ({there}): {why}")
    assert not wrong, "\n".join(wrong)
    assert pending_seen == PENDING, f"no longer needed in PENDING: {sorted(PENDING - pending_seen)}"


def test_the_ground_floor_file_access_imports_nothing_of_the_project():
    modules, graph = import_graph()
    assert graph["vlnkit.io.fileio"] == {}
