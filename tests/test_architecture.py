"""The pipeline's one-way data flow: a stage never imports a later one (DEVELOPERS.md, "Layout"), and no
package has an import cycle."""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Collection
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "odeval"
STAGES = ["data", "neighbors", "detectors", "scaling", "measures", "compare", "labelfree", "protocols", "bench",
          "analysis", "report", "render"]


def _module_name(path: Path) -> str:
    """``src/odeval/report/html.py`` → ``odeval.report.html``; a package's ``__init__.py`` → the package."""
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(SRC.rglob("*.py"))}
PACKAGES = sorted(_module_name(p.parent / "__init__.py") for p in SRC.rglob("__init__.py"))


def _stage_of(module: str) -> str | None:
    """``odeval.detectors.lof`` → ``detectors``; None for top-level helpers (``odeval._validation``, ``odeval``)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in STAGES else None


def _under_type_checking(tree: ast.AST) -> set[int]:
    """Ids of the nodes inside ``if TYPE_CHECKING:`` blocks (imports for annotations only, never executed)."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            inside.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return inside


def _import_edges(path: Path, *, type_checking: bool = True) -> dict[str, int]:
    """The odeval modules the file ``path`` of the tree imports → the line of its first import of each."""
    return _source_imports(path.read_text(), _module_name(path), is_package=path.name == "__init__.py",
                           type_checking=type_checking)


def _source_imports(source: str, module: str, *, is_package: bool, known: Collection[str] = MODULES,
                    type_checking: bool = True) -> dict[str, int]:
    """The odeval modules the source of ``module`` imports → the line of its first import of each.

    Absolute and relative imports, at module level or inside functions (``type_checking=False`` leaves out the
    ``if TYPE_CHECKING:`` blocks). ``from pkg import name`` is an import of the module ``pkg.name`` when that is
    one of the ``known`` modules, else of ``pkg`` itself (its ``__init__``).
    """
    tree = ast.parse(source)
    skip = set() if type_checking else _under_type_checking(tree)
    found: dict[str, int] = {}
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the file's package (its own, for an __init__.py), one up per extra dot
                base = module if is_package else module.rpartition(".")[0]
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        for target in targets:
            if target.split(".")[0] == "odeval" and target != module:
                found.setdefault(target, node.lineno)
    return found


def _imports(path: Path) -> set[str]:
    return set(_import_edges(path))


@pytest.mark.parametrize("stage", STAGES)
def test_stage_imports_only_earlier_stages(stage):
    own = STAGES.index(stage)
    offending = []
    for path in sorted((SRC / stage).rglob("*.py")):
        for module in _imports(path):
            other = _stage_of(module)
            if other is not None and STAGES.index(other) > own:
                offending.append(f"{path.relative_to(SRC)} imports {module}")
    assert not offending, "later stage imported:\n" + "\n".join(offending)


def test_cli_is_the_only_top_level_consumer():
    helpers = [p for p in SRC.glob("*.py") if p.name not in {"__init__.py", "cli.py"}]
    for path in helpers:  # _validation and friends are used by every stage, so they import none
        assert not {m for m in _imports(path) if _stage_of(m)}, f"{path.name} imports a pipeline stage"


def _import_graph() -> dict[str, dict[str, int]]:
    """Module → {imported module of the tree: line}, without the imports that exist only for type checkers."""
    return {m: {t: line for t, line in _import_edges(p, type_checking=False).items() if t in MODULES}
            for m, p in MODULES.items()}


def _cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]  # iterative DFS: no recursion limit on deep chains
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, successors = work[-1]
            w = next(successors, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _package_of(component: list[str]) -> str:
    """The smallest package holding every module of ``component``."""
    common = component[0].split(".")
    for name in component[1:]:
        parts = name.split(".")
        n = 0
        while n < min(len(common), len(parts)) and common[n] == parts[n]:
            n += 1
        common = common[:n]
    while ".".join(common) not in PACKAGES:
        common.pop()
    return ".".join(common)


def _describe(component: list[str], graph: dict[str, dict[str, int]]) -> str:
    """One shortest cycle through the first module of ``component``, each step with the file and line."""
    start, members = component[0], set(component)
    parent: dict[str, str] = {}
    queue = deque([start])
    while queue:  # breadth first from start until an edge leads back to it
        v = queue.popleft()
        if start in graph[v]:
            path = [v]
            while path[-1] != start:
                path.append(parent[path[-1]])
            path.reverse()
            break
        for w in sorted(graph[v]):
            if w in members and w not in parent and w != start:
                parent[w] = v
                queue.append(w)
    steps = [f"  {a} imports {b} ({MODULES[a].relative_to(SRC.parents[1])}:{graph[a][b]})"
             for a, b in zip(path, [*path[1:], start], strict=True)]
    return f"{' → '.join([*path, start])}\n" + "\n".join(steps) + f"\n  (all modules of the cycle: {component})"


#: Cycles that exist on main and belong to other parts of issue 23: strict, so the test fails once they are gone
#: and the entry must be removed.
KNOWN_CYCLES: dict[str, str] = {}  # package -> why its cycle is tolerated (none today)


@pytest.mark.parametrize("package", [pytest.param(p, marks=pytest.mark.xfail(strict=True, reason=KNOWN_CYCLES[p]))
                                     if p in KNOWN_CYCLES else p for p in PACKAGES])
def test_no_import_cycle_inside_a_package(package):
    """Modules of a package import each other one way only (lazy imports inside functions count; imports under
    ``if TYPE_CHECKING:`` do not, as they never run)."""
    graph = _import_graph()
    cycles = [c for c in _cycles(graph) if _package_of(c) == package]
    assert not cycles, f"import cycle(s) in {package}:\n" + "\n".join(_describe(c, graph) for c in cycles)


def test_the_cycle_finder_sees_lazy_and_relative_imports():
    """The import reader and the cycle search on a made-up package ``odeval.p``: a relative import and one inside
    a function close a cycle; an import under TYPE_CHECKING does not."""
    known = {"odeval.p", "odeval.p.a", "odeval.p.b", "odeval.p.c", "odeval.q"}
    sources = {
        "odeval.p": ("from odeval.p.a import thing\n", True),
        "odeval.p.a": ("import numpy\nfrom . import b\nfrom .c import helper\n", False),
        "odeval.p.b": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from odeval.p.c import T\n"
                       "def f():\n    from .. import q\n    from odeval.p import thing\n", False),
        "odeval.p.c": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from odeval.p import a\n", False),
    }
    graph = {m: _source_imports(src, m, is_package=pkg, known=known, type_checking=False)
             for m, (src, pkg) in sources.items()}
    assert graph["odeval.p.a"] == {"odeval.p.b": 2, "odeval.p.c": 3}
    assert graph["odeval.p.b"] == {"odeval.q": 5, "odeval.p": 6}
    assert graph["odeval.p.c"] == {}
    graph["odeval.q"] = {}
    assert _cycles(graph) == [["odeval.p", "odeval.p.a", "odeval.p.b"]]
    with_types = _source_imports(sources["odeval.p.c"][0], "odeval.p.c", is_package=False, known=known)
    assert with_types == {"odeval.p.a": 3}  # the stage-order test counts imports for type checkers too
    assert _cycles({"odeval.x": {"odeval.y": 1}, "odeval.y": {}}) == []
