"""Parameter coverage: which parts of a target's legal parameter space a campaign's cases drew.

A target declares its space (``Target.parameter_space``): each parameter with every legal value (or value
range, as bins), where that range is defined (the PTX text, the API, a seed), how to read it off a case's
params, and the values it leaves out on purpose, with why. ``measure`` draws a campaign's first cases as the
runner would and counts values and pairs of values; the tables say, per parameter, the legal range against
what was drawn, and which legal pairs were never drawn together.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from layoutfuzz.generators.space import Space
from layoutfuzz.harness.target import Target, make_case

SHOWN = 8  # values or pairs a table cell lists before "... and N more"


@dataclass(frozen=True)
class Coverage:
    """What ``cases`` cases of a target drew: per parameter, each value's count; per pair of parameters, the
    pairs of values drawn together."""

    target: str
    cases: int
    drawn: Mapping[str, Counter]
    pairs: Mapping[tuple[str, str], frozenset[tuple[Any, Any]]]
    at_edge: int = 0  # cases that drew at least one parameter's edge value

    @property
    def edge_share(self) -> float:
        """The share of cases at the domain's edges."""
        return self.at_edge / max(self.cases, 1)


def measure(target: Target, space: Space, seed: int, cases: int) -> Coverage:
    """Draws cases 0..cases-1 of ``seed`` as a campaign does and counts their parameter values."""
    drawn = {p.name: Counter() for p in space.parameters}
    pairs: dict[tuple[str, str], set] = {(a.name, b.name): set() for a, b in itertools.combinations(space.parameters, 2)}
    edges = {p.name: set(p.edge_values) for p in space.parameters}
    at_edge = 0
    for index in range(cases):
        params = make_case(target, seed, index).params
        values = {p.name: p.draw(params) for p in space.parameters}
        at_edge += any(v in edges[name] for name, v in values.items())
        for name, value in values.items():
            if value is not None:
                drawn[name][value] += 1
        for (a, b), seen in pairs.items():
            if values[a] is not None and values[b] is not None:
                seen.add((values[a], values[b]))
    return Coverage(target.name, cases, drawn, {k: frozenset(v) for k, v in pairs.items()}, at_edge)


def _listed(values: Sequence[Any]) -> str:
    shown = ", ".join(str(v) for v in values[:SHOWN])
    return shown + (f" ... and {len(values) - SHOWN} more" if len(values) > SHOWN else "") if values else "-"


def _excluded(excluded: Mapping[Any, str]) -> str:
    """Excluded values grouped by their reason: ``"11, 12 (why)"``."""
    reasons: dict[str, list[str]] = {}
    for value, why in excluded.items():
        reasons.setdefault(why, []).append(str(value))
    return "; ".join(f"{', '.join(values)} ({why})" for why, values in reasons.items()) or "-"


def value_table(space: Space, coverage: Coverage) -> pd.DataFrame:
    """Per parameter: legal values, how many were drawn, which never were, which are excluded and why."""
    rows = []
    for p in space.parameters:
        counts = coverage.drawn[p.name]
        never = [v for v in p.wanted if counts[v] == 0]
        outside = sorted(str(v) for v in counts if v not in p.values)
        rows.append({
            "parameter": p.name, "legal values": len(p.values), "drawn": sum(1 for v in p.values if counts[v]),
            "wanted": len(p.wanted), "coverage %": round(100 * (len(p.wanted) - len(never)) / max(len(p.wanted), 1), 1),
            "never drawn": _listed(never), "excluded (why)": _excluded(p.excluded),
            "drawn outside the legal range": _listed(outside), "legal range from": p.source,
        })
    return pd.DataFrame(rows)


def edge_table(space: Space, coverage: Coverage) -> pd.DataFrame:
    """Per parameter with edges: its edge values, how often each was drawn, and those never drawn."""
    rows = []
    for p in space.parameters:
        if p.edge_values:
            counts = coverage.drawn[p.name]
            rows.append({"parameter": p.name, "edge values": _listed(list(p.edge_values)),
                         "cases at these edges": sum(counts[v] for v in p.edge_values),
                         "never drawn": _listed([v for v in p.edge_values if not counts[v]])})
    return pd.DataFrame(rows, columns=["parameter", "edge values", "cases at these edges", "never drawn"])


def edges_missed(space: Space, coverage: Coverage) -> list[tuple[str, Any]]:
    """(parameter, edge value) pairs the cases never drew."""
    return [(p.name, v) for p in space.parameters for v in p.edge_values if not coverage.drawn[p.name][v]]


def pair_table(space: Space, coverage: Coverage) -> pd.DataFrame:
    """Per pair of parameters: legal pairs of wanted values, how many were drawn together, and some never drawn."""
    rows = []
    for (a, b), legal in space.legal_pairs().items():
        seen = coverage.pairs[a, b] & legal
        never = sorted(legal - seen, key=str)
        rows.append({"parameters": f"{a} x {b}", "legal pairs": len(legal), "drawn": len(seen),
                     "coverage %": round(100 * len(seen) / max(len(legal), 1), 1),
                     "never drawn together": _listed([f"{x}/{y}" for x, y in never])})
    return pd.DataFrame(rows)


def pair_coverage(pairs: pd.DataFrame) -> tuple[int, int]:
    """(drawn, legal) over every pair of parameters, from ``pair_table``."""
    return int(pairs["drawn"].sum()), int(pairs["legal pairs"].sum())
