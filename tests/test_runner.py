"""Crash isolation: aborts, segfaults and hangs are recorded and the campaign goes on."""

from __future__ import annotations

from harness.runner import Shard, plan, run_cases
from harness.target import Outcome
from tests.crashy_target import BEHAVIOURS, CrashyTarget

SPEC = "tests.crashy_target:CrashyTarget"


def test_campaign_survives_abort_segfault_and_hang():
    target = CrashyTarget()
    results = []
    work = plan([(SPEC, target)], seed=3, shard=Shard(), cases=12, skip=lambda t, i: False)
    finished = run_cases(work, results.append, jobs=2, timeout_s=3)
    assert finished
    assert sorted(r.case.index for r in results) == list(range(12))
    by_index = {r.case.index: r for r in results}
    for index, result in by_index.items():
        behaviour = BEHAVIOURS[index % len(BEHAVIOURS)]
        want = {
            "pass": Outcome.PASS, "slow": Outcome.PASS, "abort": Outcome.CRASH, "segfault": Outcome.CRASH,
            "hang": Outcome.TIMEOUT, "diverge": Outcome.DIVERGE,
        }[behaviour]
        assert result.outcome is want, (index, result)
        assert result.family == behaviour
    assert "SIGABRT" in by_index[1].detail and "crashy: about to abort" in by_index[1].detail
    assert "SIGSEGV" in by_index[2].detail
    assert by_index[4].mismatch_count == 1 and by_index[4].mismatches == ("value: expected " + repr(
        by_index[4].case.params["value"]) + ", observed " + repr(by_index[4].case.params["value"] ^ 1),)


def test_shards_partition_the_indices():
    shards = [set(Shard(i, 3).indices(20)) for i in (1, 2, 3)]
    assert set().union(*shards) == set(range(20))
    assert sum(len(s) for s in shards) == 20
    assert Shard.parse("2/3") == Shard(2, 3)
