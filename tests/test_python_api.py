"""docs/python-api.md works as written: its example, saved as a script and run, is a campaign."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parent.parent / "docs" / "python-api.md"


@pytest.mark.slow
def test_the_pages_example_runs_a_campaign(tmp_path):
    (example,) = re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.S)
    (tmp_path / "campaign.py").write_text(example)
    done = subprocess.run([sys.executable, "campaign.py"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert re.search(r"^400 cases in ", done.stdout, re.M), done.stdout
    assert "triton.linear_layout" in done.stdout and "pycute.layouts" in done.stdout
    assert (tmp_path / "py-campaign" / "layoutfuzz.sqlite").exists()


def test_the_pages_settings_table_lists_every_field():
    from dataclasses import fields

    from layoutfuzz.harness.campaign import CampaignSettings

    listed = set(re.findall(r"^\| `([a-z_]+)`", PAGE.read_text(), re.M))
    listed |= {name for row in re.findall(r"^\| (`[a-z_]+`, `[a-z_]+`) \|", PAGE.read_text(), re.M)
               for name in re.findall(r"`([a-z_]+)`", row)}
    assert {f.name for f in fields(CampaignSettings)} <= listed
