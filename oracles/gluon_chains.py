"""What a chain of Gluon operations computes, by NumPy: each step's definition in Triton's language reference
(``triton.language``: ``sum``, ``max``, ``cumsum``, ``permute``, ``reshape`` (row-major), ``join`` (a new minor dim
of 2), ``split`` (of a minor dim of 2), ``expand_dims``, ``convert_layout`` (the values unchanged)), applied in order.
A layout decides only which thread holds an element, never its value, so the answer does not depend on any layout.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def step(name: str, axis: int, x: np.ndarray) -> np.ndarray:
    """One step of ``generators.gluon_chains.STEPS`` on ``x``, as the chain kernel writes it."""
    if name == "sum":
        return x.sum(axis)
    if name == "max":
        return x.max(axis)
    if name == "keep":
        return x.sum(axis, keepdims=True)
    if name == "center":
        return x - x.max(axis, keepdims=True)
    if name == "cumsum":
        return np.cumsum(x, axis)
    if name == "trans":
        return np.transpose(x, tuple(range(x.ndim))[::-1])
    if name == "rot":
        return np.transpose(x, (1, 2, 0))
    if name == "flat":
        return x.reshape(-1)
    if name == "unflat":
        return x.reshape(*x.shape[:-1], 2, x.shape[-1] // 2)
    if name == "join":
        return np.stack([x, x + 1], axis=-1)
    if name == "split":
        return x[..., 0] * 2 + x[..., 1]
    if name in ("convert", "none"):
        return x
    raise ValueError(f"no step {name!r}")


def evaluate(steps: Sequence[Sequence[object]], x: np.ndarray) -> np.ndarray:
    """The chain's result on ``x`` (float32 kept: small integers stay exact)."""
    for name, axis in steps:
        x = step(str(name), int(axis), x).astype(np.float32)  # type: ignore[call-overload]
    return x
