"""Every target draws its domain's edges in every campaign: each declares a parameter space with edge values, a
campaign's first 1,000 cases draw every one of them, and at least a quarter of its cases sit at an edge."""

from __future__ import annotations

import pytest

from layoutfuzz.generators.space import Parameter, Space, bins
from layoutfuzz.harness import registry
from layoutfuzz.harness.coverage import edge_table, edges_missed, measure

CASES = 1000
EDGE_SHARE = 0.25


def _parameter(values, **kwargs) -> Parameter:
    return Parameter("p", tuple(values), "a test", lambda p: p["p"], **kwargs)


def test_edges_of_ordered_values_are_their_least_and_greatest():
    assert _parameter((4, 1, 16, 2)).edge_values == (1, 16)
    assert _parameter(bins(0, 99, 4)).edge_values == ("0-24", "75-99")


def test_excluded_values_are_not_edges_and_declared_edges_win():
    assert _parameter((1, 2, 4, 8), excluded={8: "too large"}).edge_values == (1, 4)
    assert _parameter(("a", "b", "c"), edges=("c", "z")).edge_values == ("c",)


def test_two_values_or_unordered_ones_have_no_edges_unless_declared():
    assert _parameter((2, 3)).edge_values == ()
    assert _parameter(("x", "y", "z")).edge_values == ()
    assert _parameter((True, False, None)).edge_values == ()


class _Counting:
    """A target of one parameter whose case i draws the value i % 5."""

    name = "counting"

    def generate(self, source):
        return {}


def test_the_share_counts_cases_at_any_edge(monkeypatch):
    import layoutfuzz.harness.coverage as coverage_module

    monkeypatch.setattr(coverage_module, "make_case", lambda target, seed, index: type("C", (), {"params": {"p": index % 5}}))
    space = Space((_parameter(range(5)),))
    coverage = measure(_Counting(), space, 0, 10)  # 0 and 4 are the edges: 4 cases of 10
    assert coverage.at_edge == 4 and coverage.edge_share == 0.4
    assert edges_missed(space, coverage) == []
    assert edge_table(space, coverage).iloc[0]["cases at these edges"] == 4
    assert edges_missed(Space((_parameter(range(7)),)), coverage) == [("p", 6)]


@pytest.mark.parametrize("name", sorted(registry.available_specs()))
def test_every_target_draws_its_edges(name):
    target = registry.load(name)
    space = target.parameter_space()
    assert space is not None, f"{name} declares no parameter space"
    assert any(p.edge_values for p in space.parameters), f"{name} declares no edges"
    coverage = measure(target, space, 0, CASES)
    assert edges_missed(space, coverage) == []
    assert coverage.edge_share >= EDGE_SHARE
