"""Samplers of tiled shared-memory layout atoms: an atom kind (major-ness and swizzle), an element type, the shape
the atom is tiled to (MN, K, and for a pipeline's buffers a stage count) and the order atoms are laid out in.

One case in ten asks for a shape the atom does not divide (CuTe refuses it); the rest are whole repeats of the atom,
kept under 2**16 elements."""

from __future__ import annotations

from typing import Any

from layoutfuzz.generators.source import Source, at_edge, bounded, permutation
from layoutfuzz.oracles.smem_atoms import KINDS, atom_shape

# element types by name, with their width in bits: every width the atoms are defined for (CuTe upcasts a bit atom to
# any type); the names are the system-independent ones, each system maps them to its own types
ELEMENTS: dict[str, int] = {
    "s4": 4, "e2m1": 4, "e4m3": 8, "e5m2": 8, "s8": 8, "u8": 8, "f16": 16, "bf16": 16, "s16": 16,
    "tf32": 32, "f32": 32, "s32": 32, "f64": 64,
}
MAX_ELEMENTS = 1 << 16
NOT_DIVIDING_ONE_IN = 10
MAX_STAGES = 16  # a pipeline's buffers
MAX_REPEATS = 16  # atoms along a mode: any whole count (primes included), 1 and 16 at the edges


def _repeats(source: Source, edge: bool) -> int:
    """Atoms along a mode: 1 or 16 at the edges; else any count half the time, a power of two (the shapes a
    power-of-two system such as Triton takes) the other half."""
    if edge or source.integer(0, 1):
        return bounded(source, 1, MAX_REPEATS, edge)
    return 1 << source.integer(0, MAX_REPEATS.bit_length() - 1)


def smem_atom_tile(source: Source) -> dict[str, Any]:
    """{"kind", "element", "shape": [MN, K(, stages)], "order": a permutation of the modes}; at the edges, the
    narrowest and widest elements, one atom or sixteen along a mode, one stage or sixteen."""
    edge = at_edge(source)
    kind = source.choice(tuple(KINDS))
    element = source.choice(tuple(e for e, bits in ELEMENTS.items() if bits in (4, 64)) if edge else tuple(ELEMENTS))
    a_mn, a_k = atom_shape(kind, ELEMENTS[element])
    rank = source.choice((2, 2, 3))
    reps = [_repeats(source, edge), _repeats(source, edge)]
    stages = [bounded(source, 1, MAX_STAGES, edge)] if rank == 3 else []
    while a_mn * reps[0] * a_k * reps[1] * (stages[0] if stages else 1) > MAX_ELEMENTS:
        reps[reps.index(max(reps))] //= 2
    while a_mn * reps[0] * a_k * reps[1] * (stages[0] if stages else 1) > MAX_ELEMENTS:
        stages[0] //= 2
    shape = [a_mn * reps[0], a_k * reps[1], *stages]
    if source.integer(1, NOT_DIVIDING_ONE_IN) == 1:
        mode = source.integer(0, 1)
        shape[mode] -= source.integer(1, (a_mn, a_k)[mode] - 1)
    return {"kind": kind, "element": element, "shape": shape, "order": permutation(source, rank)}
