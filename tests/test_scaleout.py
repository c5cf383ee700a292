"""Campaigns as pytest-xdist tests (harness.pytest_plugin + gpu.scaleout): disjoint shards per
worker and per host, a combined table at the end, and a skip when no target is given."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.test_cli import ROOT


def _pytest(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "--pyargs", "layoutfuzz.gpu.scaleout",  # plugin: entry point
                           "-p", "no:cacheprovider", "-q", *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def test_two_workers_run_two_disjoint_shards_of_this_hosts_part(tmp_path):
    done = _pytest("-n", "2", "--layoutfuzz-targets", "triton.linear_layout", "--layoutfuzz-cases", "20",
                   "--layoutfuzz-jobs", "1", "--layoutfuzz-host", "2/2", "--layoutfuzz-out", "so", cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    shards = {json.loads(p.read_text())["shard"] for p in (tmp_path / "so").glob("shard*/shard.json")}
    assert shards == {"3/4", "4/4"}  # host 2 of 2, two workers: parts 3 and 4 of 4
    import sqlite3

    indices = [row[0] for p in sorted((tmp_path / "so").glob("shard*/layoutfuzz.sqlite"))
               for row in sqlite3.connect(p).execute("SELECT idx FROM outcomes")]
    assert sorted(indices) == [i for i in range(20) if i % 4 in (2, 3)]  # disjoint, and nothing of host 1
    assert "layoutfuzz: 2 shard(s), 10 cases" in done.stdout


def test_without_targets_the_shard_test_is_skipped(tmp_path):
    done = _pytest(cwd=tmp_path)
    assert done.returncode == 0 and "1 skipped" in done.stdout
