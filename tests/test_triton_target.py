"""The triton.linear_layout target: its comparisons catch planted oracle faults, and its finding."""

from __future__ import annotations

import pytest

from layoutfuzz.generators.case import Case
from layoutfuzz.harness.runner import Runner
from layoutfuzz.harness.target import Outcome, make_case
from layoutfuzz.oracles.linear_layout import LinearLayout

triton_ll = pytest.importorskip("triton._C.libtriton.linear_layout", reason="needs triton's CPU binding")

from layoutfuzz.harness.targets.triton_linear_layout import TritonLinearLayout  # noqa: E402

SPEC = "layoutfuzz.harness.targets.triton_linear_layout:TritonLinearLayout"


def _cases(op: str, count: int = 40) -> list[Case]:
    target = TritonLinearLayout()
    found, index = [], 0
    while len(found) < count:
        case = make_case(target, 11, index)
        index += 1
        if case.params["op"] == op and not (op == "invert_and_compose" and case.params["kind"].startswith("arbitrary")):
            found.append(case)
    return found


def _verdicts(target, op: str) -> list[bool]:
    return [target.compare(c, target.expected(c), target.observed(c)).ok for c in _cases(op)]


@pytest.mark.parametrize("op", ["apply", "compose", "product", "invert", "pseudoinvert", "invert_and_compose",
                                "predicates", "matrix_view", "constructors"])
def test_oracle_agrees_with_triton(op):
    assert all(_verdicts(TritonLinearLayout(), op))


def _zero_last_nonzero_basis(layout: dict) -> dict:
    for entry in reversed(layout["bases"]):
        for k in reversed(range(len(entry[1]))):
            if any(entry[1][k]):
                entry[1][k] = [0] * len(entry[1][k])
                return layout
    return layout


class DroppedBasisCompose(TritonLinearLayout):
    """Planted fault: the composed layout loses its last non-zero basis."""

    def expected(self, case):
        result = super().expected(case)
        return _zero_last_nonzero_basis(result) if case.params["op"] == "compose" else result


class NotARightInverse(TritonLinearLayout):
    """Planted fault: the oracle's right inverse loses its last non-zero basis."""

    def expected(self, case):
        result = super().expected(case)
        return _zero_last_nonzero_basis(result) if case.params["op"] == "pseudoinvert" else result


class FlippedApply(TritonLinearLayout):
    def expected(self, case):
        result = super().expected(case)
        if case.params["op"] == "apply" and len(result["values"]["dim0"]) > 1:
            result["values"]["dim0"] = result["values"]["dim0"] ^ 1
        return result


@pytest.mark.parametrize(("mutant", "op"), [(DroppedBasisCompose, "compose"), (FlippedApply, "apply")])
def test_planted_oracle_faults_diverge(mutant, op):
    verdicts = _verdicts(mutant(), op)
    assert verdicts.count(False) >= len(verdicts) // 2


def test_a_wrong_right_inverse_fails_the_property_check():
    target = NotARightInverse()
    cases = [c for c in _cases("pseudoinvert") if LinearLayout.from_dict(c.params["layout"]).total_out_bits]
    # the mutant's answer is compared by property, so feed it back as the observed side
    for case in cases:
        wrong = target.expected(case)
        assert not target.compare(case, TritonLinearLayout().expected(case), wrong).ok


def test_triton_invert_and_compose_aborts_on_shared_identical_dim_where_the_ledger_says():
    # 3.6.0 to 3.8.0 abort (`layoutfuzz bisect` recorded first good 3.9.0 in layoutfuzz-known.toml); later ones pass
    import triton

    from layoutfuzz.harness.triton_compat import parse_version
    from tests.conftest import known_problem

    problem = known_problem("linear-layout-invert-and-compose-abort.json")
    a = LinearLayout.from_bases([("register", [[1, 1]]), ("lane", [[0, 1]])], [("dim0", 2), ("dim1", 2)])
    b = LinearLayout.from_bases([("register", [[0, 0], [1, 0]]), ("lane", [[0, 1]])], [("dim0", 2), ("dim1", 2)])
    case = Case("triton.linear_layout", 0, 0, {"op": "invert_and_compose", "kind": "arbitrary/distributed",
                                               "layout": a.to_dict(), "outer": b.to_dict()})
    with Runner(jobs=1, timeout_s=60) as runner:
        runner.submit(SPEC, case, "invert_and_compose/arbitrary/distributed")
        (result,) = runner.results()
    if problem.present_in(triton.__version__, parse_version):
        assert result.outcome is Outcome.CRASH
        assert "SIGABRT" in result.detail and "Im(B) not contained in Im(A)" in result.detail
    else:
        assert result.outcome is Outcome.PASS, result.detail
