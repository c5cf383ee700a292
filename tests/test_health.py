"""A target that errors on every case is told from a target with a bug after its first cases."""

from __future__ import annotations

from layoutfuzz.harness.health import FIRST, Health, errors_on_every_case
from layoutfuzz.harness.runner import Runner
from layoutfuzz.harness.target import make_case
from layoutfuzz.reports.signatures import root_cause
from tests.planted_faults import BrokenTarget, SometimesBroken

BROKEN = "tests.planted_faults:BrokenTarget"
SOMETIMES = "tests.planted_faults:SometimesBroken"


def _first_results(spec: str, target, count: int = FIRST) -> list[tuple[str, str]]:
    """(outcome, root cause) of the target's first ``count`` cases, run in workers as a campaign runs them."""
    with Runner(jobs=2, timeout_s=30) as runner:
        for index in range(count):
            case = make_case(target, 0, index)
            runner.submit(spec, case, target.family(case))
        results = []
        while runner.in_flight:
            results += runner.results()
    return [(r.outcome.value, root_cause(r)) for r in sorted(results, key=lambda r: r.case.index)]


def test_a_target_that_raises_on_every_case_is_broken_after_its_first_cases():
    results = _first_results(BROKEN, BrokenTarget())
    signature = errors_on_every_case(results)
    assert signature is not None and "AttributeError" in signature and "mylib" in signature
    health = Health()
    said = [health.see("test.broken", outcome, sig) for outcome, sig in results]
    assert said[:-1] == [None] * (FIRST - 1) and "test.broken: stopped: its first 20 cases" in said[-1]
    assert health.see("test.broken", "error", signature) is None  # said once


def test_a_target_with_a_bug_is_not_broken():
    results = _first_results(SOMETIMES, SometimesBroken())
    assert {o for o, _ in results} == {"error", "pass"} and errors_on_every_case(results) is None
    health = Health()
    assert not any(health.see("t", o, s) for o, s in results + [("error", results[0][1])] * 40)


def test_the_first_cases_decide_and_only_one_shared_error_is_broken():
    same = [("error", "exception in the system under test; ModuleNotFoundError: No module named 'mylib'")] * FIRST
    assert errors_on_every_case(same) == same[0][1]
    assert errors_on_every_case(same[:-1]) is None  # too few to tell
    assert errors_on_every_case([("pass", "")] + same) is None  # a pass first: later errors are the target's bugs
    assert errors_on_every_case(same + [("pass", "")]) == same[0][1]  # only the first FIRST count
    mixed = same[:10] + [("error", "exception in the oracle; KeyError: 'n'")] * 10
    assert errors_on_every_case(mixed) is None  # errors of two kinds: bugs, not a dead target
    health = Health()
    health.passed("t", 3)  # passes a worker stored itself
    assert not any(health.see("t", o, s) for o, s in same)
    assert Health(first=2).see("u", *same[0]) is None
