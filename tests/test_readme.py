"""CI runs the README's test command, and the README's example target works as written."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _commands() -> list[str]:
    return re.findall(r"```bash\n\s*(.+?)\n\s*```", (ROOT / "README.md").read_text())


def test_ci_runs_readme_command_2():
    command_2 = _commands()[1]
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert command_2.startswith("pip install -e '.[test]'")
    assert command_2 in ci_lines


def test_readme_command_1_runs_a_campaign():
    assert "layoutfuzz run --budget 60s" in _commands()[0]
