"""The package's shape, read from its imports: data flows one way (generators -> oracles/targets -> harness ->
reports), the records sit at the bottom, only gpu/ touches CUDA, and no module imports itself back."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("generators", "oracles", "reports", "harness", "gpu")
# what each package may import of the others: oracles and generators nothing above them, reports (the records) no
# harness or gpu, the harness no gpu (the registry names GPU targets by module path, it does not import them)
ALLOWED = {
    "oracles": {"oracles"},
    "generators": {"generators", "oracles"},
    "reports": {"reports", "generators", "oracles"},
    "harness": {"harness", "reports", "generators", "oracles"},
    "gpu": set(PACKAGES),
    "cli": {*PACKAGES, "cli"},  # harness/cli/: the command line, on top of everything (`kernels` compiles on the GPU side)
}
CUDA = ("cuda", "torch")  # the GPU stacks: imported under gpu/ only


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return "layoutfuzz." + ".".join(parts)


@cache
def modules() -> dict[str, Path]:
    return {module_name(f): f for package in PACKAGES for f in (ROOT / package).rglob("*.py")}


def imports(name: str) -> Iterator[tuple[str, int, bool]]:
    """(imported module, line, inside a function) of every import in module ``name`` that runs (``from P import M`` of
    a submodule M is an import of P.M; an import under ``if TYPE_CHECKING:`` is none)."""
    path = modules()[name]
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    nested = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
              for n in ast.walk(f) if isinstance(n, (ast.Import, ast.ImportFrom))}
    typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
                   for n in ast.walk(block)}  # names for annotations: no import at run time
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno, id(node) in nested
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                yield (sub if sub in modules() else base), node.lineno, id(node) in nested


def top(module: str) -> str:
    """The layer of a module: its package, or "cli" for the command line."""
    if module.startswith("layoutfuzz.harness.cli"):
        return "cli"
    return module.split(".")[1] if module.startswith("layoutfuzz.") and module.count(".") >= 1 else ""


def edges() -> dict[str, set[str]]:
    return {name: {m for m, _, _ in imports(name) if m in modules()} for name in modules()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
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

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_module_imports_itself_back():
    assert cycles(edges()) == []


@pytest.mark.parametrize("package", (*PACKAGES, "cli"))
def test_no_package_imports_a_layer_above_it(package):
    upward = [f"{name}:{line} imports {m}" for name in modules() if top(name) == package
              for m, line, _ in imports(name) if m.startswith("layoutfuzz.") and top(m) not in ALLOWED[package]]
    assert upward == []


def test_only_gpu_touches_cuda():
    touching = [f"{name}:{line} imports {m}" for name in modules() if top(name) != "gpu"
                for m, line, _ in imports(name) if m.split(".")[0] in CUDA]
    assert touching == []


def test_the_checks_see_a_cycle_and_an_upward_import():
    # the test's own machinery: a graph with a cycle is found, one without is not
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    assert top("layoutfuzz.harness.cli.run") == "cli" and top("layoutfuzz.harness.runner") == "harness"
    assert top("numpy") == ""


def test_every_target_lives_in_a_module_named_after_it():
    from layoutfuzz.harness import registry

    homes = {name: spec.split(":")[0] for name, spec in registry.BUILTIN.items()}
    misplaced = [f"{name}: {module}" for name, module in homes.items()
                 if module.rsplit(".", 1)[1] != name.replace(".", "_")
                 or module.rsplit(".", 1)[0] not in ("layoutfuzz.gpu.targets", "layoutfuzz.harness.targets")]
    assert misplaced == []
    assert not [n for n in modules() if top(n) == "gpu" and ".targets." not in n and _defines_a_target(n)]


def _defines_a_target(name: str) -> bool:
    """Whether a module defines a concrete target: a class with a ``name = "..."`` attribute."""
    tree = ast.parse(modules()[name].read_text())
    return any(isinstance(node, ast.ClassDef) and any(
        isinstance(s, ast.Assign) and any(getattr(t, "id", "") == "name" for t in s.targets) for s in node.body)
        for node in tree.body)
