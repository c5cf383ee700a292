"""The benchmarks survive a fresh machine: a one-off build that outlasts a run's budget leaves a rate of 0 and a note
saying why, never an exception, and the builds are timed apart from the steady-state rate."""

from __future__ import annotations

import importlib.util
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCHMARK = ROOT / "benchmarks" / "campaign_throughput.py"


def _benchmark():
    spec = importlib.util.spec_from_file_location("campaign_throughput", BENCHMARK)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_no_case_to_time_is_a_rate_of_0_with_a_reason():
    bench = _benchmark()
    alone = bench.in_process("pycute.layouts", [], 1.0)
    assert alone.rate == 0 and math.isnan(alone.first_case_s)
    assert math.isnan(bench.ratio(120.0, 0.0)) and math.isnan(bench.ratio(1.0, math.nan)) and bench.ratio(3.0, 2.0) == 1.5
    empty = bench.Run(0.0, 0.0, 0, 0, set(), math.nan, 0, math.nan)
    note = bench.why_none(30, 41.2, {"run": empty}, alone)
    assert note == ("`run` recorded no case within its 30 s budget (the one-off builds before it took 41 s); "
                    "no case to time in-process: the runs recorded none that did not crash or hang")


def _rows(table: str) -> dict[str, dict[str, str]]:
    """A Markdown table's rows by their first cell, each as {header: cell}."""
    lines = [line for line in table.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    cells = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:]]
    return {row[0]: dict(zip(header, row)) for row in cells}


@pytest.mark.slow
def test_campaign_throughput_on_a_fresh_machine_times_the_builds_apart_and_survives_a_run_with_no_case(tmp_path):
    # regression: the wgmma probe's NVRTC build (41 s) outlasted a 30 s run, and in_process indexed an empty list
    once, every = "tests.bench_targets:BuiltOncePerMachine", "tests.bench_targets:BuiltEveryStart"
    env = {**os.environ, "LAYOUTFUZZ_CACHE": str(tmp_path / "machine")}  # a fresh machine: nothing built yet
    done = subprocess.run([sys.executable, str(BENCHMARK), "--targets", f"{once},{every}", "--budget", "2", "--jobs", "1",
                           "--no-single", "--out", str(tmp_path / "table.md")], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = _rows((tmp_path / "table.md").read_text())
    built = rows[once]  # built once, before the timed run: the run's cases are all steady state
    assert float(built["one-off builds s"]) >= 6 and float(built["run cases/s"]) > 0, built
    assert float(built["in-process cases/s (1 core)"]) > 0 and built["note"] == "", built
    never = rows[every]  # built again in every process: the run's 2 s end before its first case does
    assert float(never["one-off builds s"]) >= 6 and float(never["run cases/s"]) == 0, never
    assert float(never["in-process cases/s (1 core)"]) == 0, never
    assert never["note"].startswith("`run` recorded no case within its 2 s budget (the one-off builds before it took"), never


def test_new_root_causes_counts_bugs_whose_signatures_the_earlier_ledger_never_held():
    spec = importlib.util.spec_from_file_location("new_root_causes", ROOT / "benchmarks" / "new_root_causes.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def entry(signature, variants="", status="unreported", attribution="system under test", target="cute.layouts"):
        return {"target": target, "outcome": "diverge", "signature": signature, "variants": variants, "status": status,
                "attribution": attribution, "title": signature}

    before = [entry("a"), entry("b")]
    now = [entry("a", "c"),  # an old one that took a variant since: not new
           entry("d", "b"),  # merged with an old one as its variant: not new
           entry("e"), entry("f", status="expected behaviour"), entry("g", attribution="harness"),
           entry("h", target="mosaic.transfers", status="fixed upstream")]
    table = module.new_root_causes(before, now)
    assert list(table["title"]) == ["e", "h"]
    assert list(table["system"]) == ["CuTe DSL", "Mosaic GPU"]
