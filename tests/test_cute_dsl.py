"""The cute.layouts target: CUTLASS's Python DSL (cutlass.cute) layout algebra against its defining properties,
drawing the same cases as pycute.layouts."""

from __future__ import annotations

import pytest

from layoutfuzz.harness import registry
from layoutfuzz.harness.target import make_case
from tests.test_cli import layoutfuzz


def test_both_cute_implementations_draw_the_same_cases():
    dsl, pycute = registry.load("cute.layouts"), registry.load("pycute.layouts")
    for index in range(300):
        a, b = make_case(dsl, 5, index), make_case(pycute, 5, index)
        assert a.params == b.params and (a.target, b.target) == ("cute.layouts", "pycute.layouts")


def test_a_wrong_result_is_a_divergence_named_by_the_property_it_breaks():
    from layoutfuzz.harness.targets.cute_algebra import _layout as layout
    from layoutfuzz.harness.targets.cute_algebra import precondition
    from layoutfuzz.oracles import cute_properties as props

    target = registry.load("cute.layouts")
    cases = (make_case(target, 0, i) for i in range(400))
    # a composition whose A is not itself A o B, so A returned as the answer is wrong
    case = next(c for c in cases if c.params["op"] == "composition" and isinstance(c.params["b"], dict)
                and precondition(c.params) is None
                and props.composition(layout(c.params["a"]), layout(c.params["b"]), layout(c.params["a"])))
    a = case.params["a"]
    verdict = target.compare(case, target.expected(case), {"shape": a["shape"], "stride": a["stride"]})
    assert not verdict.ok and verdict.signature.startswith("composition:")
    assert target.compare(case, target.expected(case), {"shape": [2, 3], "stride": [1]}).signature == \
        "composition: the result is not a layout"


def test_the_dsl_answers_a_worked_composition():
    pytest.importorskip("cutlass.cute", reason="needs CUTLASS's Python DSL: pip install 'layoutfuzz[cutedsl]'")
    from layoutfuzz.harness.targets.cute_algebra import Call
    from layoutfuzz.harness.targets.cute_layouts import evaluate_many

    # (4,(2,3)):(6,(1,2)) o 6:2 takes A at 0, 2, 4, ..., 10: offsets 0, 12, 1, 13, 2, 14 = (2,3):(12,1) (by hand)
    result = evaluate_many([Call("composition", ((4, (2, 3)), (6, (1, 2))), (6, 2))])[0]
    shape, stride = result["shape"], result["stride"]
    offsets = [sum(c * s for c, s in zip((i % shape[0], i // shape[0]), stride)) for i in range(6)]
    assert offsets == [0, 12, 1, 13, 2, 14]


def test_products_of_one_mode_layouts_are_drawn_and_the_dsls_raked_refusal_is_among_them():
    """A quarter of the products take two one-mode layouts, as CuTe's own examples write them; over those the DSL
    refuses some raked products whose logical product it computes (docs/findings.md), so campaigns meet it."""
    target = registry.load("cute.layouts")
    products = [c for c in (make_case(target, 21, i) for i in range(6000)) if c.params["op"].endswith("product")
                and isinstance(c.params["b"], dict)]
    one_mode = [c for c in products if isinstance(c.params["a"]["shape"], int) and isinstance(c.params["b"]["shape"], int)]
    assert 0.2 < len(one_mode) / len(products) < 0.6, (len(one_mode), len(products))
    pytest.importorskip("cutlass.cute", reason="needs CUTLASS's Python DSL: pip install 'layoutfuzz[cutedsl]'")
    raked = [c for c in one_mode if c.params["op"] == "raked_product"]
    verdicts = [target.compare(c, target.expected(c), o) for c, o in zip(raked, target.observed_batch(raked))]
    assert any("raked_product: spurious refusal" in v.signature for v in verdicts if not v.ok), len(raked)


@pytest.mark.slow
def test_a_campaign_of_the_dsl_meets_only_known_root_causes(tmp_path):
    pytest.importorskip("cutlass.cute", reason="needs CUTLASS's Python DSL: pip install 'layoutfuzz[cutedsl]'")
    from tests.test_cli import ledgered_run

    done, rows, unknown = ledgered_run(tmp_path, "cute.layouts,pycute.layouts", 600)
    assert done.returncode == 0, done.stderr
    cases, passed = next(r for r in rows if r[:2] == ["cute.layouts", "(all)"])[2:4]
    assert cases == "600" and int(passed) < 600, done.stdout  # the whole domain reaches the DSL's known root causes
    assert not unknown, unknown  # and each is in the ledger (docs/findings.md)
    assert registry.load("cute.layouts").versions()["nvidia-cutlass-dsl"]  # recorded in every report


def test_without_the_dsl_the_target_is_unsupported_with_the_reason(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "cutlass", None)  # import cutlass raises ImportError
    monkeypatch.setitem(sys.modules, "cutlass.cute", None)
    availability = registry.load("cute.layouts").availability()
    assert not availability.available and "pip install 'layoutfuzz[cutedsl]'" in availability.reason


def test_targets_of_one_case_model_are_compared_case_by_case(tmp_path):
    done = layoutfuzz("run", "--target", "tests.crashy_target:CrashyTarget", "--target", "tests.crashy_target:TwinTarget",
                      "--cases", "6", "--timeout", "2", "--jobs", "2", "-q", "--out", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    table = (tmp_path / "out" / "side-by-side.md").read_text()
    rows = {line.split("|")[2].strip(): [c.strip() for c in line.split("|")[3:8]] for line in table.splitlines()[2:]}
    # CrashyTarget: 0 pass, 1 abort, 2 segfault, 3 hang, 4 diverge, 5 pass (slow); its twin passes all six
    assert rows["pass"] == ["1", "test.crashy / test.twin", "1", "1 / 1", "0"]
    assert rows["abort"] == ["1", "test.crashy / test.twin", "1", "0 / 1", "1"]
    assert rows["diverge"] == ["1", "test.crashy / test.twin", "1", "0 / 1", "1"]
    assert rows["hang"] == ["1", "test.crashy / test.twin", "0", "0 / 0", "0"]  # the twin did not run it: no difference
    assert "Systems side by side" in done.stdout
