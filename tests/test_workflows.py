"""The nightly workflow parses, calls `layoutfuzz nightly` with flags the CLI accepts, and keeps
tonight's results (cache, artifacts) whatever the outcome."""

from __future__ import annotations

import shlex
from pathlib import Path

import yaml

from layoutfuzz.harness.cli import build_parser

WORKFLOW = Path(__file__).resolve().parent.parent / ".github" / "workflows" / "nightly.yml"


def test_nightly_workflow_commands_parse_and_results_are_always_kept():
    flow = yaml.safe_load(WORKFLOW.read_text())
    assert set(flow[True if True in flow else "on"]) >= {"schedule", "workflow_dispatch"}  # YAML reads `on` as True
    nights = 0
    for name, job in flow["jobs"].items():
        for step in job["steps"]:
            run = step.get("run", "")
            if "layoutfuzz nightly" in run:
                nights += 1
                argv = shlex.split(run.replace("${{ matrix.shard }}", "1"))[1:]
                args = build_parser().parse_args(argv)  # exits 2 on a flag the CLI does not know
                assert args.func.__name__ == "cmd_nightly"
            if step.get("uses", "").startswith(("actions/upload-artifact", "actions/cache/save")):
                assert step.get("if") == "always()", (name, step)
        if name == "cpu":
            assert len(job["strategy"]["matrix"]["shard"]) == 4
    assert nights == 2
