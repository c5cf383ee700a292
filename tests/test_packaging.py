"""What an installed layoutfuzz puts into a user's environment: one import name."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib

from tests.test_cli import ROOT

FOLDERS = ("generators", "gpu", "harness", "oracles", "reports")


def _python(code: str, cwd) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=environment, capture_output=True, text=True)


def test_the_folders_install_as_subpackages_of_layoutfuzz_only(tmp_path):
    # outside the checkout, the installed package answers to layoutfuzz.* and to none of the generic names
    found = _python("import layoutfuzz.harness.cli, layoutfuzz.oracles.f2, layoutfuzz.reports.store; print('ok')", tmp_path)
    assert found.stdout.strip() == "ok", found.stderr
    for name in FOLDERS:
        gone = _python(f"import {name}", tmp_path)
        assert gone.returncode != 0 and "ModuleNotFoundError" in gone.stderr, (name, gone.stdout)


def test_every_package_of_the_project_is_listed_under_layoutfuzz():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert all(p.startswith("layoutfuzz.") for p in config["packages"])
    assert config["package-dir"] == {f"layoutfuzz.{name}": name for name in FOLDERS}
    on_disk = {"layoutfuzz." + str(p.parent.relative_to(ROOT)).replace("/", ".")
               for name in FOLDERS for p in (ROOT / name).rglob("__init__.py")}
    assert on_disk == set(config["packages"])  # a new subpackage that is not listed would be left out of the wheel
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"layoutfuzz": "layoutfuzz.harness.cli:main"}
