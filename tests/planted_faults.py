"""A test-only plug-in target with one planted fault of each kind the default comparison tells apart.

``PlantedFault[KIND]`` (``--target 'tests.planted_faults:PlantedFault[values]'``) answers like its oracle except on
the cases where its fault fires (``scale > THRESHOLD`` and at least three values: large params), and there it breaks
one output of one kind, in a dim that depends on the case (which dim, element and bit vary from case to case):

- ``values``: one element of one dim's coordinates has a bit flipped (an array's values)
- ``shape``: one dim's coordinates lose their last element (an array's shape)
- ``missing``: one dim's entry is missing (a dict key)
- ``scalar``: one dim's ``max`` is one too large (a scalar)
- ``dtype``: one dim's coordinates come back as int32 (compared only by this kind, with ``compare_values(dtypes=True)``)

``BrokenTarget`` raises on every case (a placeholder left in an example), ``SometimesBroken`` on every third.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layoutfuzz.harness.compare import Comparison, compare_values
from layoutfuzz.harness.target import Target

KINDS = ("values", "shape", "missing", "scalar", "dtype")
THRESHOLD = 600  # the fault fires on cases with a larger scale


def coordinates(params: dict[str, Any]) -> dict[str, Any]:
    """Each dim's coordinates of the values and their largest, and how many values there are."""
    out: dict[str, Any] = {"count": len(params["values"])}
    for d in range(params["shape"]["dims"]):
        coords = np.array([v * (d + 1) + params["scale"] for v in params["values"]], dtype=np.int64)
        out[f"dim{d}"] = {"coords": coords, "max": int(coords.max())}
    return out


def fires(params: dict[str, Any]) -> bool:
    return params["scale"] > THRESHOLD and len(params["values"]) >= 3


class PlantedFault(Target):
    """The oracle's answer, broken in one way (``kind``) on large cases."""

    description = "test-only: one planted fault of one comparison kind"

    def __init__(self, kind: str = "values") -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown fault {kind!r}")
        self.kind = kind
        self.name = f"test.fault.{kind}"

    def generate(self, source):
        count = source.integer(1, 8)
        return {"scale": source.integer(0, 1000), "values": [source.integer(0, 255) for _ in range(count)],
                "shape": {"dims": source.integer(1, 3)}}

    def validate(self, case):
        p = case.params
        if not (isinstance(p.get("scale"), int) and p["scale"] >= 0 and p.get("values")
                and all(isinstance(v, int) and v >= 0 for v in p["values"]) and p.get("shape", {}).get("dims") in (1, 2, 3)):
            raise ValueError("scale >= 0, at least one value >= 0 and 1 to 3 dims")

    def family(self, case):
        return f"{case.params['shape']['dims']}d"

    def expected(self, case):
        return coordinates(case.params)

    def observed(self, case):
        p = case.params
        out = coordinates(p)
        if fires(p):
            self.plant(out, p)
        return out

    def plant(self, out: dict[str, Any], p: dict[str, Any]) -> None:
        """The fault, in the dim (and element and bit) the case's values pick."""
        dim = f"dim{sum(p['values']) % p['shape']['dims']}"
        if self.kind == "values":
            out[dim]["coords"][p["scale"] % len(p["values"])] ^= 1 << (p["values"][0] % 4)
        elif self.kind == "shape":
            out[dim]["coords"] = out[dim]["coords"][:-1]
        elif self.kind == "missing":
            del out[dim]
        elif self.kind == "scalar":
            out[dim]["max"] += 1
        else:
            out[dim]["coords"] = out[dim]["coords"].astype(np.int32)

    def compare(self, case, expected, observed) -> Comparison:
        """The default comparison; arrays' dtypes too for the dtype fault."""
        if self.kind != "dtype":
            return super().compare(case, expected, observed)
        return compare_values(expected, observed, dtypes=True)


class BrokenTarget(PlantedFault):
    """A target whose system under test raises on every case (an example's placeholder never filled in)."""

    name = "test.broken"

    def __init__(self) -> None:
        super().__init__("values")
        self.name = "test.broken"

    def observed(self, case):
        raise AttributeError("module 'mylib' has no attribute 'evaluate'")


class SometimesBroken(BrokenTarget):
    """Raises on every third case only: a target with a bug, not a broken one."""

    def __init__(self) -> None:
        super().__init__()
        self.name = "test.sometimes_broken"

    def observed(self, case):
        if case.index % 3 == 0:
            raise AttributeError("module 'mylib' has no attribute 'evaluate'")
        return coordinates(case.params)
