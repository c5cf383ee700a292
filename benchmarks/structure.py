"""The package's shape in figures, at this commit and, with --baseline REV, at another one side by side: import cycles,
imports up a layer, function-level imports, target modules that hold more than one target, and the README's size.

    python benchmarks/structure.py [--baseline c3c83fb]

The import graph is read as tests/test_layering.py reads it (every import that runs, function-level ones included).
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent


def figures(root: Path) -> dict[str, float]:
    """The structural figures of the checkout at ``root``."""
    sys.path.insert(0, str(ROOT))
    from tests import test_layering as layering

    layering.ROOT = root
    layering.modules.cache_clear()
    names = layering.modules()
    graph = layering.edges()
    upward = sum(1 for name in names for m, _, _ in layering.imports(name)
                 if m.startswith("layoutfuzz.") and layering.top(m) not in layering.ALLOWED.get(layering.top(name), set()))
    nested = sum(1 for name in names for _, _, inside in layering.imports(name) if inside)
    targets_per_module = [_targets(path) for path in names.values()]
    readme = (root / "README.md").read_text()
    return {
        "modules": len(names),
        "modules in an import cycle": sum(len(c) for c in layering.cycles(graph)),
        "imports up a layer": upward,
        "function-level imports of the package": nested,
        "modules holding 2+ targets": sum(1 for n in targets_per_module if n > 1),
        "README bytes": len(readme.encode()),
        "README lines over 120 characters": sum(1 for line in readme.splitlines() if len(line) > 120),
    }


def _targets(path: Path) -> int:
    """Concrete targets a module defines: classes with a ``name = "..."`` attribute."""
    tree = ast.parse(path.read_text())
    return sum(1 for node in tree.body if isinstance(node, ast.ClassDef) and any(
        isinstance(s, ast.Assign) and any(getattr(t, "id", "") == "name" for t in s.targets) for s in node.body))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", help="a git revision to measure beside this checkout")
    args = parser.parse_args()
    columns = {"now": figures(ROOT)}
    if args.baseline:
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", tmp, args.baseline], check=True,
                           capture_output=True)
            try:
                columns[args.baseline] = figures(Path(tmp))
            finally:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", tmp], capture_output=True)
    table = pd.DataFrame(columns)
    print(table.to_markdown())


if __name__ == "__main__":
    main()
