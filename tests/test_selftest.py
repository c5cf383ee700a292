"""`layoutfuzz selftest`: every planted fault is exposed by the recorded truth, and a fault that
is not lowers the score below 95% and is listed."""

from __future__ import annotations

import contextlib

import pytest

from layoutfuzz.harness import cli, selftest


def test_every_mutant_is_caught_and_the_unmutated_oracles_are_clean():
    verdicts = list(selftest.run())
    assert len(verdicts) >= 10 and [v.mutant.name for v in verdicts if not v.caught] == []
    assert {v.mutant.evidence for v in verdicts} == set(selftest.EVIDENCE)
    assert selftest.seed_tables() == 0 and selftest.tma_records() == 0 and selftest.convert_records() == 0


def test_a_missed_mutant_fails_the_selftest_and_is_listed(monkeypatch, capsys):
    equivalent = selftest.Mutant("noop", "nothing planted", "seed004", contextlib.nullcontext)
    monkeypatch.setattr(selftest, "MUTANTS", selftest.MUTANTS + (equivalent,))
    monkeypatch.setattr(selftest, "baseline", lambda: {name: 0 for name in selftest.EVIDENCE})
    assert cli.main(["selftest", "--no-spread"]) == 1  # 13 of 14 is below 95%
    out = capsys.readouterr().out
    assert "missed: noop: nothing planted" in out and f"mutation score: {len(selftest.MUTANTS) - 1}/{len(selftest.MUTANTS)}" in out


def test_a_broken_baseline_is_reported_not_scored(monkeypatch, capsys):
    monkeypatch.setattr(selftest, "baseline", lambda: {"hw.tma": 3, "hw.wgmma": 0, "seed004": 0})
    assert cli.main(["selftest"]) == 1
    assert "already disagree" in capsys.readouterr().err


def test_a_planted_fault_lands_in_one_root_cause_and_reduces():
    mutant = next(m for m in selftest.MUTANTS if m.name == "tma.phase-off-by-one")
    spread = selftest.spread(mutant, records=60)
    assert spread.divergences > 10 and spread.buckets == ("misplaced data",)
    assert spread.reduced_chars is not None and spread.reduced_chars <= spread.original_chars


@pytest.mark.slow
def test_a_fault_spread_over_more_than_two_buckets_fails_the_selftest(monkeypatch, capsys):
    monkeypatch.setattr(selftest, "MUTANTS", selftest.MUTANTS[:1])
    monkeypatch.setattr(selftest, "spread", lambda m: selftest.Spread(m, 9, ("a", "b", "c"), 10, 5))
    assert cli.main(["selftest"]) == 1
    out = capsys.readouterr().out
    assert f"spread: {selftest.MUTANTS[0].name} lands in 3 buckets: a; b; c" in out
