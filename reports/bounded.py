"""Values kept to a bound: clipped text, digests of long values, and JSON-ready copies of NumPy values."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import numpy as np


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
