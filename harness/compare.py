"""Comparing expected with observed values: mismatch counts and the first mismatches."""

from __future__ import annotations

import hashlib
import json
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


def clipped(text: str, limit: int) -> str:
    """``text``, or its head and tail around a note of what was left out: no stored field is unbounded."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters left out ...]\n{text[-half:]}"


def summarised(value: Any, limit: int, how: str = "`layoutfuzz reproduce ... --verbose` recomputes it") -> Any:
    """``value``, or where its JSON is longer than ``limit`` characters its size and digest."""
    text = json.dumps(value, sort_keys=True, default=repr)
    if len(text) <= limit:
        return value
    return {"omitted": f"{len(text)} characters of JSON; {how}", "sha256": hashlib.sha256(text.encode()).hexdigest()}


def to_jsonable(value: Any, limit: int = 256) -> Any:
    """A JSON-ready copy with NumPy arrays as lists (long ones cut to ``limit`` items); an object with a
    ``__json__`` method is what it returns (a value a target computes only when a report needs it)."""
    if hasattr(value, "__json__"):
        return to_jsonable(value.__json__(), limit)
    if isinstance(value, np.ndarray):
        flat = [to_jsonable(v) for v in value.reshape(-1).tolist()] if value.dtype.kind == "f" else value.reshape(-1).tolist()
        return flat if len(flat) <= limit else {"first": flat[:limit], "length": len(flat)}
    if isinstance(value, np.generic):
        return to_jsonable(value.item(), limit)
    if isinstance(value, float) and not np.isfinite(value):  # strict JSON has no NaN or Infinity
        return "NaN" if np.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v, limit) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        items = [to_jsonable(v, limit) for v in value[:limit]]
        return items if len(value) <= limit else {"first": items, "length": len(value)}
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return repr(value)
