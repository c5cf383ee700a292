"""Parameter spaces: what a target declares it may draw, for the coverage report (``harness.coverage``).

Each parameter lists every legal value (or range, as bins) from its source (the PTX text, the driver's API, a
seed), how to read it off a case's params, and the legal values its generator leaves out on purpose, with why.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Parameter:
    """One parameter of a space: its legal values, their source, how a case draws one (None: it does not
    apply to that case), the legal values left out on purpose, each with why, and the values at the domain's edges
    (``edge_values``), which every campaign must draw."""

    name: str
    values: tuple[Any, ...]
    source: str
    draw: Callable[[Mapping[str, Any]], Any]
    excluded: Mapping[Any, str] = field(default_factory=dict)
    edges: tuple[Any, ...] | None = None

    @property
    def wanted(self) -> tuple[Any, ...]:
        """The legal values a campaign should draw: all but the excluded ones."""
        return tuple(v for v in self.values if v not in self.excluded)

    @property
    def edge_values(self) -> tuple[Any, ...]:
        """The wanted values at the domain's edges: ``edges`` where declared, else the least and the greatest of
        ordered values (numbers, or ``bins`` in their order); none for two values or fewer, or unordered ones."""
        if self.edges is not None:
            return tuple(v for v in self.edges if v in self.wanted)
        wanted = self.wanted
        numbers = all(isinstance(v, int) and not isinstance(v, bool) for v in wanted)
        ranges = all(isinstance(v, str) and re.fullmatch(r"-?\d+--?\d+", v) for v in wanted)
        if len(wanted) < 3 or not (numbers or ranges):
            return ()
        return (min(wanted), max(wanted)) if numbers else (wanted[0], wanted[-1])


@dataclass(frozen=True)
class Space:
    """A target's parameter space; ``illegal(a, va, b, vb)`` says which values of two parameters cannot occur
    together (such pairs are not counted as missing)."""

    parameters: tuple[Parameter, ...]
    illegal: Callable[[str, Any, str, Any], bool] = lambda *_: False

    def legal_pairs(self) -> dict[tuple[str, str], set[tuple[Any, Any]]]:
        """For each pair of parameters, the pairs of wanted values that may occur together."""
        out = {}
        for a, b in itertools.combinations(self.parameters, 2):
            out[a.name, b.name] = {(x, y) for x in a.wanted for y in b.wanted if not self.illegal(a.name, x, b.name, y)}
        return out


def bins(low: int, high: int, count: int) -> tuple[str, ...]:
    """``count`` equal ranges covering [low, high], as labels ``"lo-hi"``."""
    step = -(-(high - low + 1) // count)
    return tuple(f"{lo}-{min(lo + step - 1, high)}" for lo in range(low, high + 1, step))


def bin_of(value: int, labels: Sequence[str]) -> str:
    """The label of ``bins`` that holds ``value``."""
    for label in labels:
        lo, hi = (int(x) for x in label.split("-"))
        if lo <= value <= hi:
            return label
    raise ValueError(f"{value} is outside {labels[0]}..{labels[-1]}")


# bins the GPU targets' spaces share
FIELD_BINS = bins(0, (1 << 14) - 1, 16)  # a 14-bit descriptor field (16-byte units), in 16 ranges
BOX_DIM_BINS = bins(1, 256, 8)  # a TMA box dim: 1-256
INNER_BINS = bins(1, 128, 8)  # the inner box row in 16-byte units: 16 bytes to 256 x 8-byte elements
