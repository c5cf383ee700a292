"""Comparing expected with observed values: mismatch counts and the first mismatches."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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


def _walk(expected: Any, observed: Any, path: str, out: list[str], count: list[int], kinds: set[str]) -> None:
    if isinstance(expected, np.ndarray) or isinstance(observed, np.ndarray):
        e, o = np.asarray(expected), np.asarray(observed)
        if e.shape != o.shape:
            count[0] += 1
            kinds.add(f"{path}:shape")
            out.append(f"{path}: shape {e.shape} != {o.shape}")
            return
        differ = e.reshape(-1) != o.reshape(-1)
        if e.dtype.kind == "f" and o.dtype.kind == "f":  # NaN where NaN is expected is agreement
            differ &= ~(np.isnan(e.reshape(-1)) & np.isnan(o.reshape(-1)))
        bad = np.flatnonzero(differ)
        if bad.size:
            count[0] += int(bad.size)
            kinds.add(f"{path}:values")
            for i in bad[: max(0, FIRST - len(out))]:
                out.append(f"{path}[{int(i)}]: expected {e.reshape(-1)[i].item()!r}, observed {o.reshape(-1)[i].item()!r}")
        return
    if isinstance(expected, Mapping) and isinstance(observed, Mapping):
        for key in list(expected) + [k for k in observed if k not in expected]:
            sub = f"{path}.{key}" if path else str(key)
            if key not in observed or key not in expected:
                count[0] += 1
                kinds.add(f"{sub}:missing")
                if len(out) < FIRST:
                    side = "observed" if key not in observed else "expected"
                    out.append(f"{sub}: missing from {side}")
            else:
                _walk(expected[key], observed[key], sub, out, count, kinds)
        return
    if (
        isinstance(expected, Sequence) and isinstance(observed, Sequence)
        and not isinstance(expected, str) and not isinstance(observed, str)
    ):
        if len(expected) != len(observed):
            count[0] += 1
            kinds.add(f"{path}:length")
            if len(out) < FIRST:
                out.append(f"{path}: length {len(expected)} != {len(observed)}")
            return
        for i, (e, o) in enumerate(zip(expected, observed)):
            _walk(e, o, f"{path}[{i}]", out, count, kinds)
        return
    if expected != observed and not (_is_nan(expected) and _is_nan(observed)):
        count[0] += 1
        kinds.add(f"{path}:value")
        if len(out) < FIRST:
            out.append(f"{path}: expected {expected!r}, observed {observed!r}")


def _is_nan(value: Any) -> bool:
    return isinstance(value, (float, np.floating)) and bool(np.isnan(value))


def _plainly_equal(expected: Any, observed: Any) -> bool:
    """Python's own ``==`` said yes (in C, thousands of times faster than the walk over a long list): then the walk
    finds nothing, since it calls values equal where ``==`` does and NaN where ``==`` cannot. Arrays inside say no."""
    try:
        return bool(expected == observed) and type(expected) is type(observed)
    except (ValueError, TypeError):  # an array's elementwise answer has no single truth
        return False


def compare_values(expected: Any, observed: Any) -> Comparison:
    """Exact, structural comparison of dicts, lists, scalars and NumPy arrays."""
    if _plainly_equal(expected, observed):
        return Comparison(ok=True)
    out: list[str] = []
    count = [0]
    kinds: set[str] = set()
    _walk(expected, observed, "", out, count, kinds)
    return Comparison(ok=count[0] == 0, mismatch_count=count[0], mismatches=tuple(out), signature=",".join(sorted(kinds)))


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
