"""Campaigns from Python: ``run_campaign(CampaignSettings(...))``, as docs/python-api.md shows, with no CLI."""

from __future__ import annotations

import sqlite3

import pytest

from layoutfuzz.harness.campaign import CampaignSettings, UsageError, run_campaign

TARGET = "tests.resume_targets:First"


def test_a_campaign_runs_from_python_and_resumes(tmp_path, monkeypatch):
    monkeypatch.setenv("RESUME_SLEEP_S", "0")
    out = tmp_path / "out"
    done = run_campaign(CampaignSettings(out=out, targets=(TARGET,), cases=10, jobs=1, quiet=True))
    assert (done.counts["pass"], done.counts["diverge"]) == (8, 2)  # every fifth case diverges (indices 4 and 9)
    assert set(done.table["target"]) >= {"test.resume1"}
    again = run_campaign(CampaignSettings(out=out, targets=(TARGET,), resume=True, jobs=1, quiet=True))
    assert sum(again.counts.values()) == 0  # everything was recorded: nothing runs again
    with sqlite3.connect(out / "layoutfuzz.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM outcomes").fetchone() == (10,)


@pytest.mark.parametrize("changed", [{"seed": 1}, {"cases": 5}, {"targets": ("triton.layouts",)}, {"force": True}])
def test_resumed_settings_cannot_change_the_campaign(changed):
    with pytest.raises(UsageError, match="stored settings"):
        CampaignSettings(resume=True, **changed)


def test_targets_are_a_tuple_of_names_not_a_string():
    with pytest.raises(TypeError):
        CampaignSettings(targets="triton.layouts")


def test_a_target_that_errors_on_every_case_is_stopped_early(tmp_path, capsys):
    done = run_campaign(CampaignSettings(out=tmp_path / "out", targets=("tests.resume_targets:Placeholder",),
                                         budget=20.0, jobs=2, quiet=True))
    assert done.elapsed_s < 10, "a broken target must not run for its whole budget"
    assert 20 <= done.counts["error"] < 500
    err = capsys.readouterr().err
    assert err.count("test.placeholder: stopped: its first 20 cases all ended in `error`") == 1, err
