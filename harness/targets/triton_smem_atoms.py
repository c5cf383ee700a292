"""Target ``triton.smem_atoms``: the cases of ``cute.smem_atoms`` (one case model, ``smem_atoms``: a Hopper
shared-memory atom kind, an element type and the shape it is tiled to) through Triton's NVMMA shared layout, the
layout Triton gives what wgmma and TMA read, as Triton's compiler lays it out (``triton.shared_layouts``' probe).

The expected answer is the one ``cute.smem_atoms`` is judged by (``oracles.smem_atoms``: seed 000's canonical layouts
inside each atom, atoms placed as ``tile_to_shape`` does in the case's order), so a campaign of both targets shows
the two systems side by side on the same cases. A K-major kind is ``NVMMASharedLayout(swizzle bytes, element bits)``
of the [MN, K] tile, an MN-major one the same ``transposed``; Triton stacks atoms along the strided dim first
(``nvmmaSharedToLinearLayout``: MN for K-major, K for MN-major), CuTe's ``tile_to_shape`` order (0, 1) and (1, 0).
Triton's layout answers a narrower question than CuTe's atoms do; the cases outside it are ``unsupported``, each with
the reason (``nvmma_for``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.smem_atoms import ELEMENTS, smem_atom_tile
from layoutfuzz.generators.source import Source
from layoutfuzz.generators.space import Space
from layoutfuzz.harness.compare import Comparison
from layoutfuzz.harness.target import Unsupported
from layoutfuzz.harness.targets.cute_smem_atoms import CASE_MODEL, CuteSmemAtoms
from layoutfuzz.harness.targets.triton_shared_layouts import DTYPES, compare_offsets, compiled_offsets, offset_bases
from layoutfuzz.harness.triton_compat.gluon_layouts import GluonTarget
from layoutfuzz.oracles import smem_atoms as atoms
from layoutfuzz.oracles import triton_layouts as tl
from layoutfuzz.oracles.linear_layout import LayoutError
from layoutfuzz.oracles.wgmma import Major, SwizzleMode


def nvmma_for(p: Mapping[str, Any]) -> tl.NVMMASharedLayout:
    """Triton's NVMMA shared layout for a case of the smem_atoms model; ``Unsupported`` with the reason where Triton's
    layout is not that tile."""
    major, mode = atoms.kind_of(p["kind"])
    bits, shape = ELEMENTS[p["element"]], list(p["shape"])
    if mode is SwizzleMode.NONE:
        raise Unsupported("Triton's unswizzled NVMMA layout is row-major, not CuTe's INTER atom of 8 x 16-byte core matrices")
    if bits not in DTYPES:
        raise Unsupported(f"Triton's NVMMA shared layouts hold 8-, 16- and 32-bit elements, not {bits}-bit ones")
    if len(shape) != 2:
        raise Unsupported("a stage mode: Triton's pipelined buffers put stages outermost, a tile of another shape")
    stacked = [1, 0] if major is Major.MN else [0, 1]  # the strided dim first: K for MN-major, MN for K-major
    if list(p["order"]) != stacked:
        raise Unsupported(f"Triton stacks an NVMMA layout's atoms along its strided dim first (tile_to_shape's order "
                          f"{tuple(stacked)} for {major.name}-major), not in order {tuple(p['order'])}")
    if any(n & (n - 1) for n in shape):
        raise Unsupported(f"Triton's layouts are over power-of-two shapes, not {shape}")
    if not atoms.divides(p["kind"], bits, shape):
        raise Unsupported(f"the {p['kind']} atom {atoms.atom_shape(p['kind'], bits)} does not divide {shape}")
    return tl.NVMMASharedLayout(16 * mode.width, bits, 2, transposed=major is Major.MN)


def expected_offsets(p: Mapping[str, Any]) -> list[int]:
    """The oracle's tile in Triton's terms: for each offset basis (element offset 2^i), the row-major flat index of the
    element there."""
    bits, (rows, cols) = ELEMENTS[p["element"]], p["shape"]
    answer = offset_bases(rows, cols, atoms.tile_bit_addresses(p["kind"], bits, p["shape"], p["order"]) // bits)
    if "offset" not in answer:
        raise LayoutError(f"the oracle's tile: {answer['exception']}")
    return answer["offset"]


class TritonSmemAtoms(GluonTarget):
    name = "triton.smem_atoms"
    layer = "Triton's NVMMA shared layout (as its compiler infers it)"
    description = ("the cases of cute.smem_atoms through Triton's NVMMA shared layouts (as its compiler lays them out), "
                   "vs the same canonical-layout oracle: CuTe and Triton side by side")
    case_model = CASE_MODEL

    def generate(self, source: Source) -> dict[str, Any]:
        return smem_atom_tile(source)

    def validate(self, case: Case) -> None:
        CuteSmemAtoms().validate(case)

    def family(self, case: Case) -> str:
        return CuteSmemAtoms().family(case)

    def parameter_space(self) -> Space:
        return CuteSmemAtoms().parameter_space()

    def expected(self, case: Case) -> Any:
        nvmma_for(case.params)
        return {"offset": expected_offsets(case.params)}

    def observed(self, case: Case) -> Any:
        p = case.params
        return compiled_offsets(nvmma_for(p), list(p["shape"]), ELEMENTS[p["element"]])

    def compare(self, case: Case, expected: Any, observed: Any) -> Comparison:
        return compare_offsets(expected, observed)
