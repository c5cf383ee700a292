"""Samplers of XOR swizzles of a row-major tile, the one concept Triton's swizzled shared layout
(``SwizzledSharedLayout(vec, perPhase, maxPhase, order)``) and CuTe's ``Swizzle<B,M,S>`` over a row-major layout both
express: row r's column c moves to ``c XOR vec * ((r / perPhase) % maxPhase)``. Only cases both systems can state are
drawn: powers of two, with ``vec * maxPhase`` columns at most, so that the XOR stays in the row."""

from __future__ import annotations

from typing import Any

from layoutfuzz.generators.source import Source, at_edge, bounded

MAX_ELEMENTS = 1 << 14
MAX_DIM_LOG2 = 8  # rows and columns up to 256
MAX_PER_PHASE_LOG2 = 4  # rows a phase: 1-16, the swizzled shared layouts' range
ELEMENT_BITS = (8, 16, 32)  # Triton's shared buffers of the probe (triton.shared_layouts' DTYPES)


def xor_swizzle(source: Source) -> dict[str, Any]:
    """{"rows", "cols", "vec", "per_phase", "max_phase", "elem_bits"}: a [rows, cols] tile, columns contiguous; at the
    edges, each exponent its least or greatest."""
    edge = at_edge(source)
    cols = 1 << bounded(source, 0, MAX_DIM_LOG2, edge)
    rows = 1 << bounded(source, 1, min(MAX_DIM_LOG2, (MAX_ELEMENTS // cols).bit_length() - 1), edge)
    max_phase = 1 << bounded(source, 0, cols.bit_length() - 1, edge)  # 1: no swizzle
    vec = 1 << bounded(source, 0, (cols // max_phase).bit_length() - 1, edge)
    per_phase = 1 << bounded(source, 0, MAX_PER_PHASE_LOG2, edge)
    return {"rows": rows, "cols": cols, "vec": vec, "per_phase": per_phase, "max_phase": max_phase,
            "elem_bits": source.choice(ELEMENT_BITS)}


def cute_swizzle(p: dict[str, Any]) -> tuple[int, int, int]:
    """The case as CuTe's ``Swizzle<B,M,S>`` on the element offset ``r * cols + c``: B = log2 maxPhase mask bits, the
    M = log2 vec lowest bits kept, and the phase read S bits above them, at the offset bit of row perPhase."""
    log2 = {n: n.bit_length() - 1 for n in (p["cols"], p["vec"], p["per_phase"], p["max_phase"])}
    m = log2[p["vec"]]
    return log2[p["max_phase"]], m, log2[p["cols"]] + log2[p["per_phase"]] - m
