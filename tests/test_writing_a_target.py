"""docs/writing-a-target.md works as written: its example target, run by its command, is a working campaign."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "writing-a-target.md"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", PAGE.read_text(), re.S)


def _shell(command: str, cwd: Path) -> subprocess.CompletedProcess:
    """``command`` in bash as a user types it: the installed ``layoutfuzz`` on PATH, no PYTHONPATH of the test's."""
    scripts = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PATH": scripts + os.pathsep + os.environ["PATH"]}
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    if shutil.which("layoutfuzz", path=str(Path(sys.executable).parent)) is None:
        pytest.skip("the layoutfuzz command is not installed beside this Python")
    where = tmp_path_factory.mktemp("newcomer")
    (example,) = [b for b in _blocks("python") if b.startswith('"""my_target.py')]
    (where / "my_target.py").write_text(example)
    (run,) = [b.strip() for b in _blocks("bash") if "layoutfuzz run" in b]
    done = _shell(run, where)
    assert done.returncode == 0, done.stderr
    return where, run, done


def test_the_pages_example_runs_as_a_campaign_and_its_planted_bug_is_one_bucket(campaign):
    where, run, done = campaign
    assert run.startswith("PYTHONPATH=. layoutfuzz run --target my_target:MyLayouts")
    db = sqlite3.connect(where / "my-campaign" / "layoutfuzz.sqlite")
    counts = dict(((t, o), n) for t, o, n in db.execute("SELECT target, outcome, COUNT(*) FROM outcomes GROUP BY 1, 2"))
    assert counts.pop(("my.layouts", "pass")) == 300  # the evaluator as written agrees with the oracle
    assert counts.pop(("my.layouts_or", "pass")) > 30 and list(counts) == [("my.layouts_or", "diverge")], counts
    buckets = db.execute("SELECT DISTINCT signature FROM outcomes WHERE outcome = 'diverge'").fetchall()
    assert buckets == [("array values",)]  # one bug, one bucket
    assert "1 distinct problem(s)" in done.stdout and "array values" in done.stdout


def test_the_pages_finding_replays_and_reduces_as_it_says(campaign):
    where, _, _ = campaign
    (look,) = [b for b in _blocks("bash") if "layoutfuzz reduce" in b]
    done = _shell(look, where)
    assert done.returncode == 0 and "outcome: diverge" in done.stdout, done.stderr
    reduced = json.loads((where / "my-campaign" / "reports" / "my.layouts_or-0-0.reduced.json").read_text())["params"]
    assert reduced == {"layout": {"bases": [["warp", [[1], [1]]]], "out_dims": [["dim0", 2]]}}
    assert json.dumps(reduced["layout"]) in PAGE.read_text()


def test_the_page_says_why_the_module_must_be_on_the_path(campaign):
    where, run, _ = campaign
    bare = where / "without-pythonpath"
    bare.mkdir()
    shutil.copy(where / "my_target.py", bare)
    without = _shell(run.removeprefix("PYTHONPATH=. "), bare)
    assert without.returncode == 2
    message = "cannot load target 'my_target:MyLayouts': No module named 'my_target'"
    assert message in without.stderr and message in " ".join(PAGE.read_text().split())


def test_the_pages_entry_point_group_is_the_one_layoutfuzz_reads():
    from layoutfuzz.harness.registry import ENTRY_POINT_GROUP

    (toml,) = _blocks("toml")
    assert f'[project.entry-points."{ENTRY_POINT_GROUP}"]' in toml and '"my.layouts" = "my_target:MyLayouts"' in toml


def test_the_pages_bit_order_is_the_oracles():
    from layoutfuzz.oracles import LinearLayout

    layout = LinearLayout.from_dict({"bases": [["register", [[1, 0], [0, 1]]], ["lane", [[2, 0]]]],
                                     "out_dims": [["dim0", 4], ["dim1", 2]]})
    assert "packed input 5 is register 1, lane 1" in " ".join(PAGE.read_text().split())
    assert {k: int(v[5]) for k, v in layout.apply_all().items()} == layout.apply({"register": 1, "lane": 1})
    assert layout.apply({"register": 1, "lane": 1}) == {"dim0": 3, "dim1": 0}  # 1 XOR 2, as the page says


def test_the_readme_points_to_the_page_and_keeps_no_placeholder():
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("### Writing a target"):readme.index("## What is trusted")]
    assert "docs/writing-a-target.md" in section and "mylib.evaluate" not in readme
