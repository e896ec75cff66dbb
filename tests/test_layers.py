"""gpuprof's stages import one way only, and no module imports itself back through others.

Every ``gpuprof/**.py`` is read with :mod:`ast`, function-level imports included, so a lazy import cannot
hide an edge. The stages, earliest first (a module may import its own stage or an earlier one)::

    errors → model → readers | workloads | devices | energy → launch → derive → store → render
           → questions → api → cli

The check is a pure function over a module graph, so the last two tests show it catching a cycle and an
upward edge in a made-up graph.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "gpuprof"

QUESTIONS = (
    "importing",
    "compare",
    "diffing",
    "stalls",
    "profile",
    "doctor",
    "sweep",
    "calibrate",
    "merge",
    "measure",
    "tracing",
    "job_sweep",
    "simulate",
)
STAGES: list[tuple[str, ...]] = [
    ("errors", "outputs", "inputs"),  # outputs: how every writer writes a file (regular, symlink, device or FIFO)
    (
        "model",
        "data",
        "regions",
        "counting",
    ),  # regions and counting: what a user's program records, standard library only
    ("readers", "workloads", "devices", "energy", "regions_torch", "regions_keras"),
    ("launch",),
    ("derive",),
    ("store",),
    ("render",),
    QUESTIONS,
    ("api", ""),  # "": the package itself (gpuprof/__init__.py, the library's lazy front door)
    ("cli", "__main__"),
]


def stage(module: str) -> int:
    """Index in STAGES of a dotted module name under gpuprof."""
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else ""
    for index, names in enumerate(STAGES):
        if top in names:
            return index
    raise AssertionError(f"{module}: no stage; add its top-level name to STAGES in {Path(__file__).name}")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = importer.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(path: Path, known: set[str]) -> set[str]:
    """gpuprof modules that ``path`` imports anywhere in its body (a name imported from a package counts as
    the submodule when one of that name exists, else as the package)."""
    importer = module_name(path)
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.split(".")[0] == "gpuprof")
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(importer, is_package, node)
            if target.split(".")[0] != "gpuprof":
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in known else target)
    return {name for name in found if name != importer}


def deferred_imports(path: Path) -> list[int]:
    """Lines of ``path`` that import a gpuprof module inside a function or class."""
    tree = ast.parse(path.read_text(), str(path))
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for inner in ast.walk(node):
                if isinstance(inner, ast.ImportFrom) and (inner.level or (inner.module or "").startswith("gpuprof")):
                    lines.append(inner.lineno)
                elif isinstance(inner, ast.Import) and any(a.name.startswith("gpuprof") for a in inner.names):
                    lines.append(inner.lineno)
    return sorted(set(lines))


@functools.cache  # parsed once for the module's tests (every gpuprof module: about 1 s)
def graph() -> dict[str, set[str]]:
    paths = sorted(PACKAGE.rglob("*.py"))
    known = {module_name(p) for p in paths}
    return {module_name(p): imports(p, known) & known for p in paths}


# Where gpuprof's own modules may be imported inside functions: the entry points, so that ``gpuprof --help``
# and ``gpuprof X --help`` load no library code (each command module loads its question when it runs).
# launch/inject/ runs inside the user's program at start-up, where it loads gpuprof only when asked to.
DEFERRING = ("gpuprof/__init__.py", "gpuprof/cli/", "gpuprof/launch/inject/")


def upward(edges: dict[str, set[str]]) -> set[tuple[str, str]]:
    """(importer, imported) pairs where a module imports from a later stage than its own."""
    return {(a, b) for a, targets in edges.items() for b in targets if stage(b) > stage(a)}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
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

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_every_module_has_a_stage_and_the_graph_is_real():
    edges = graph()
    assert len(edges) > 120
    for name in edges:
        stage(name)
    # a known edge, seen through a function-level or top-level import alike
    assert "gpuprof.model" in edges["gpuprof.readers.ncu_csv"]
    assert "gpuprof.api" in edges["gpuprof"]


def test_no_import_cycles():
    assert cycles(graph()) == []


def test_no_module_imports_a_later_stage():
    assert upward(graph()) == set()


def test_gpuprof_modules_are_imported_at_the_top():
    """Function-level imports are for heavy third-party libraries; gpuprof's own modules come at the top,
    where a reader (and this test) sees what a module depends on."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE.parent).as_posix()
        if name.startswith(DEFERRING):
            continue
        if lines := deferred_imports(path):
            found[name] = lines
    assert found == {}


def test_the_check_catches_a_cycle_in_a_made_up_graph():
    edges = {
        "gpuprof.derive.a": {"gpuprof.derive.b"},
        "gpuprof.derive.b": {"gpuprof.derive.c"},
        "gpuprof.derive.c": {"gpuprof.derive.a", "gpuprof.model"},
        "gpuprof.model": set(),
    }
    assert cycles(edges) == [["gpuprof.derive.a", "gpuprof.derive.b", "gpuprof.derive.c"]]
    del edges["gpuprof.derive.c"]
    assert cycles(edges) == []


def test_the_check_catches_an_upward_edge_in_a_made_up_graph():
    edges = {
        "gpuprof.readers.x": {"gpuprof.derive.stalls", "gpuprof.model"},
        "gpuprof.derive.stalls": set(),
        "gpuprof.model": set(),
        "gpuprof.cli.run": {"gpuprof.api", "gpuprof.store"},
    }
    assert upward(edges) == {("gpuprof.readers.x", "gpuprof.derive.stalls")}
