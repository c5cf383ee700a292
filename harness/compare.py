"""Comparing expected with observed values: mismatch counts and the first mismatches."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

FIRST = 8  # mismatches kept in a report


@dataclass(frozen=True)
class Comparison:
    """The verdict of one comparison.

    ``signature`` names the kind of mismatch (for bucketing) without the case's own values.
    """

    ok: bool
    mismatch_count: int = 0
    mismatches: tuple[str, ...] = ()
    signature: str = ""
    note: str = ""


# Kinds of mismatch, the most fundamental first: a divergence's default signature is the first of them it shows (where it
# showed, which key, dim or index, stays in the detail), so that one fault is one root cause whichever part it hit.
KINDS = ("type", "missing key", "extra key", "length", "shape", "dtype", "array values", "scalar value")
WHERE = 4  # paths named per kind in a comparison's note


@dataclass
class _Walk:
    """What a structural comparison found: mismatch lines (the first FIRST), a count, and each kind's paths."""

    dtypes: bool = False
    out: list[str] = field(default_factory=list)
    count: int = 0
    found: dict[str, list[str]] = field(default_factory=dict)

    def mismatch(self, kind: str, path: str, line: str | None, count: int = 1) -> None:
        self.count += count
        self.found.setdefault(kind, []).append(path)
        if line is not None and len(self.out) < FIRST:
            self.out.append(line)

    def walk(self, expected: Any, observed: Any, path: str) -> None:
        if isinstance(expected, np.ndarray) or isinstance(observed, np.ndarray):
            self.arrays(np.asarray(expected), np.asarray(observed), path)
        elif isinstance(expected, Mapping) or isinstance(observed, Mapping):
            self.mappings(expected, observed, path)
        elif _sequence(expected) or _sequence(observed):
            self.sequences(expected, observed, path)
        elif expected != observed and not (_is_nan(expected) and _is_nan(observed)):
            self.mismatch("scalar value", path, f"{path}: expected {expected!r}, observed {observed!r}")

    def arrays(self, e: np.ndarray, o: np.ndarray, path: str) -> None:
        if e.shape != o.shape:
            self.mismatch("shape", path, f"{path}: shape {e.shape} != {o.shape}")
            return
        if self.dtypes and e.dtype != o.dtype:
            self.mismatch("dtype", path, f"{path}: dtype {e.dtype} != {o.dtype}")
        differ = e.reshape(-1) != o.reshape(-1)
        if e.dtype.kind == "f" and o.dtype.kind == "f":  # NaN where NaN is expected is agreement
            differ &= ~(np.isnan(e.reshape(-1)) & np.isnan(o.reshape(-1)))
        bad = np.flatnonzero(differ)
        if bad.size:
            self.mismatch("array values", path, None, int(bad.size))
            for i in bad[: max(0, FIRST - len(self.out))]:
                self.out.append(f"{path}[{int(i)}]: expected {e.reshape(-1)[i].item()!r}, observed {o.reshape(-1)[i].item()!r}")

    def mappings(self, expected: Any, observed: Any, path: str) -> None:
        if not (isinstance(expected, Mapping) and isinstance(observed, Mapping)):
            self.mismatch("type", path, f"{path}: expected a {type(expected).__name__}, observed a {type(observed).__name__}")
            return
        for key in list(expected) + [k for k in observed if k not in expected]:
            sub = f"{path}.{key}" if path else str(key)
            if key not in observed:
                self.mismatch("missing key", sub, f"{sub}: missing from observed")
            elif key not in expected:
                self.mismatch("extra key", sub, f"{sub}: missing from expected")
            else:
                self.walk(expected[key], observed[key], sub)

    def sequences(self, expected: Any, observed: Any, path: str) -> None:
        if not (_sequence(expected) and _sequence(observed)):
            self.mismatch("type", path, f"{path}: expected a {type(expected).__name__}, observed a {type(observed).__name__}")
        elif len(expected) != len(observed):
            self.mismatch("length", path, f"{path}: length {len(expected)} != {len(observed)}")
        else:
            for i, (e, o) in enumerate(zip(expected, observed)):
                self.walk(e, o, f"{path}[{i}]")

    def signature(self, by_field: bool) -> str:
        """The first of KINDS found; ``by_field``: each top-level field with its first kind (``placement: length``)."""
        if not by_field:
            return next((kind for kind in KINDS if kind in self.found), "")
        fields: dict[str, str] = {}
        for kind in reversed(KINDS):  # the most fundamental kind of a field wins
            for path in self.found.get(kind, ()):
                fields[re.split(r"[.\[]", path, maxsplit=1)[0]] = kind
        return "; ".join(f"{name}: {kind}" if name else kind for name, kind in sorted(fields.items()))

    def note(self) -> str:
        """Where each kind showed: the keys and indices a signature leaves out."""
        parts = []
        for kind in (k for k in KINDS if k in self.found):
            paths = list(dict.fromkeys(p or "the whole value" for p in self.found[kind]))
            more = f" and {len(paths) - WHERE} more" if len(paths) > WHERE else ""
            parts.append(f"{kind} at {', '.join(paths[:WHERE])}{more}")
        return "; ".join(parts)


def _sequence(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str)


def _is_nan(value: Any) -> bool:
    return isinstance(value, (float, np.floating)) and bool(np.isnan(value))


def _plainly_equal(expected: Any, observed: Any) -> bool:
    """Python's own ``==`` said yes (in C, thousands of times faster than the walk over a long list): then the walk
    finds nothing, since it calls values equal where ``==`` does and NaN where ``==`` cannot. Arrays inside say no."""
    try:
        return bool(expected == observed) and type(expected) is type(observed)
    except (ValueError, TypeError):  # an array's elementwise answer has no single truth
        return False


def compare_values(expected: Any, observed: Any, *, dtypes: bool = False, by_field: bool = False) -> Comparison:
    """Exact, structural comparison of dicts, lists, scalars and NumPy arrays (``dtypes``: arrays' dtypes too).

    The signature is the kind of mismatch (one of KINDS), never where it showed; the note says where. A target whose
    top-level fields are distinct outputs (``placement``, ``data``) passes ``by_field`` to keep them apart."""
    if not dtypes and _plainly_equal(expected, observed):
        return Comparison(ok=True)
    walk = _Walk(dtypes)
    walk.walk(expected, observed, "")
    if walk.count == 0:
        return Comparison(ok=True)
    return Comparison(False, walk.count, tuple(walk.out), walk.signature(by_field), walk.note())
