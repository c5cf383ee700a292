"""Target ``cute.smem_atoms``: the Hopper shared-memory layout atoms of CUTLASS's Python DSL
(``cute.nvgpu.warpgroup.make_smem_layout_atom``), tiled by ``cute.tile_to_shape``, against where the hardware
expects each element (``oracles.smem_atoms``: the canonical layouts of seed 000 inside an atom, CuTe's tile_to_shape
between atoms).

The DSL's atom is ``swizzle o 0 o layout``; its kernels put the layout on a pointer swizzled by the swizzle
(``SmemAllocator.get_tensor(layout.outer, swizzle=layout.inner)``, as CuTe C++'s ``smem_ptr_flag`` does), where the
swizzle acts on byte addresses. A case is judged that way: the address of element i is
``swizzle(bytes of (offset + outer(i)))``. The composed layout read as a function in elements, as the atom's
docstring words it, is another map for elements wider than a byte (``cute.recast_layout(8, 16, atom)`` moves the
swizzle to ``S<3,5,3>``): each case measures whether that reading agrees too (metric ``element_units_agree``), so a
table shows where the two conventions part, without calling either reading a bug.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from math import prod
from typing import Any

import numpy as np

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.smem_atoms import ELEMENTS, MAX_ELEMENTS, MAX_REPEATS, MAX_STAGES, smem_atom_tile
from layoutfuzz.generators.source import Source
from layoutfuzz.generators.space import Parameter, Space
from layoutfuzz.harness.compare import Comparison
from layoutfuzz.harness.target import Availability, Target, only_answer, package_versions
from layoutfuzz.harness.targets.cute_algebra import _lists, _tuple
from layoutfuzz.harness.targets.cute_layouts import PACKAGE, _static, dsl_availability
from layoutfuzz.oracles import smem_atoms as atoms
from layoutfuzz.oracles.cute import Layout, Swizzle
from layoutfuzz.oracles.cute_properties import offsets_array
from layoutfuzz.oracles.linear_layout import LayoutError

# the DSL's type for each element name of the case model
DSL_TYPES = {
    "s4": "Int4", "e2m1": "Float4E2M1FN", "e4m3": "Float8E4M3FN", "e5m2": "Float8E5M2", "s8": "Int8", "u8": "Uint8",
    "f16": "Float16", "bf16": "BFloat16", "s16": "Int16", "tf32": "TFloat32", "f32": "Float32", "s32": "Int32",
    "f64": "Float64",
}
SHOWN = 4  # mismatching elements listed in a report
CASE_MODEL = "smem_atoms"  # the case stream cute.smem_atoms and triton.smem_atoms share: one case, two systems


class CuteSmemAtoms(Target):
    name = "cute.smem_atoms"
    layer = "CuTe DSL (cute.nvgpu.warpgroup atoms, cute.tile_to_shape)"
    description = ("CUTLASS's Python DSL Hopper shared-memory layout atoms tiled to random shapes, vs the canonical "
                   "layouts of seed 000 and CuTe's tile_to_shape")
    requires = (f"{PACKAGE} (pip install 'layoutfuzz[cutedsl]')",)
    max_batch = 1024
    case_model = CASE_MODEL

    def availability(self) -> Availability:
        return dsl_availability("cutlass.cute.nvgpu.warpgroup")

    def versions(self) -> Mapping[str, str]:
        return package_versions(PACKAGE)

    def generate(self, source: Source) -> dict[str, Any]:
        return smem_atom_tile(source)

    def validate(self, case: Case) -> None:
        p = case.params
        atoms.kind_of(p["kind"])
        if p["element"] not in ELEMENTS:
            raise ValueError(f"element must be one of {', '.join(ELEMENTS)}")
        shape, order = p["shape"], p["order"]
        if len(shape) not in (2, 3) or not all(isinstance(n, int) and n >= 1 for n in shape):
            raise ValueError("shape is [MN, K] or [MN, K, stages] of positive ints")
        a_mn, a_k = atoms.atom_shape(p["kind"], ELEMENTS[p["element"]])
        if -(-shape[0] // a_mn) > MAX_REPEATS or -(-shape[1] // a_k) > MAX_REPEATS or shape[2:3] > [MAX_STAGES] \
                or prod(shape) > MAX_ELEMENTS:
            raise ValueError(f"at most {MAX_REPEATS} atoms along a mode, {MAX_STAGES} stages and {MAX_ELEMENTS} elements "
                             "(this target's cost cap)")
        atoms.ordered_strides(shape, order)

    def family(self, case: Case) -> str:
        p = case.params
        return p["kind"] if atoms.divides(p["kind"], ELEMENTS[p["element"]], p["shape"]) else "not divided"

    def parameter_space(self) -> Space:
        api = "CuTe DSL warpgroup.SmemLayoutAtomKind; cute/atom/mma_traits_sm90_gmma.hpp"
        return Space((
            Parameter("kind", tuple(atoms.KINDS), api, lambda p: p["kind"]),
            Parameter("element", tuple(ELEMENTS), "any width CuTe upcasts its bit atoms to (4-64 bits)", lambda p: p["element"]),
            Parameter("rank", (2, 3), "tile_to_shape: (MN, K) or (MN, K, stages)", lambda p: len(p["shape"])),
            Parameter("element bits", (4, 8, 16, 32, 64), "the atoms' bit widths", lambda p: ELEMENTS[p["element"]]),
            Parameter("atoms along MN", tuple(range(1, MAX_REPEATS + 1)), "tile_to_shape: any whole count (drawn: 1-16)",
                      lambda p: _repeats(p, 0)),
            Parameter("stages", tuple(range(1, MAX_STAGES + 1)), "tile_to_shape: any stage count (drawn: 1-16)", lambda p: (p["shape"][2:] or [None])[0]),
            Parameter("order", ("MN first", "K first", "stage first"), "tile_to_shape's order: any permutation",
                      lambda p: ("MN first", "K first", "stage first")[p["order"].index(0)]),
            Parameter("atom divides the shape", ("yes", "no"), "CuTe: tile_to_shape asserts it divides",
                      lambda p: "yes" if atoms.divides(p["kind"], ELEMENTS[p["element"]], p["shape"]) else "no"),
        ), lambda a, x, b, y: {a: x, b: y}.get("order") == "stage first" and {a: x, b: y}.get("rank") == 2)

    def expected(self, case: Case) -> Any:
        """Every element's bit address, or None where CuTe refuses the shape."""
        p = case.params
        bits = ELEMENTS[p["element"]]
        if not atoms.divides(p["kind"], bits, p["shape"]):
            return None
        return atoms.tile_bit_addresses(p["kind"], bits, p["shape"], p["order"])

    def observed(self, case: Case) -> Any:
        return only_answer(self.observed_batch([case]))

    def observed_batch(self, cases: Sequence[Case]) -> Sequence[Any]:
        """Every case's tiled atom in one @cute.jit trace: {"swizzle": [B, M, S], "offset", "shape", "stride"};
        {"refused": message} where the DSL raised on a shape its atom does not divide; the exception otherwise."""
        calls = [(c.params["kind"], DSL_TYPES[c.params["element"]], tuple(c.params["shape"]), tuple(c.params["order"]))
                 for c in cases]
        out = []
        for case, result in zip(cases, tile_many(calls)):
            p = case.params
            if isinstance(result, BaseException) and not atoms.divides(p["kind"], ELEMENTS[p["element"]], p["shape"]):
                result = {"refused": f"{type(result).__name__}: {str(result)[:300]}"}
            out.append(result)
        return out

    def compare(self, case: Case, expected: Any, observed: Any) -> Comparison:
        p = case.params
        if expected is None:
            if "refused" in observed:
                return Comparison(True)
            return Comparison(False, 1, (f"returned shape {observed['shape']} for {p['shape']}",),
                              "tile_to_shape accepted a shape its atom does not divide",
                              f"the {p['kind']} atom of {p['element']} {atoms.atom_shape(p['kind'], ELEMENTS[p['element']])} "
                              f"does not divide {p['shape']}; CuTe asserts it does, the DSL returned {_text(observed)}")
        if "refused" in observed:
            return Comparison(False, 1, (observed["refused"],), "tile_to_shape refused a shape its atom divides",
                              f"the DSL refused {p['shape']}: {observed['refused']}")
        layout = Layout(_tuple(observed["shape"]), _tuple(observed["stride"]))
        extents = [Layout(m.shape, m.stride).size() for m in (layout.mode(i) for i in range(len(layout)))]
        if extents != list(p["shape"]):
            return Comparison(False, 1, (f"mode sizes {extents}",), "the tiled layout's shape is not the one asked for",
                              f"asked for {p['shape']}, the DSL returned {_text(observed)}")
        got = pointer_bit_addresses(observed, ELEMENTS[p["element"]])
        wrong = np.flatnonzero(got != expected)
        if not len(wrong):
            return Comparison(True)
        examples = tuple(f"element {_coord(int(i), p['shape'])}: bit {int(got[i])}, expected {int(expected[i])}"
                         for i in wrong[:SHOWN])
        return Comparison(False, len(wrong), examples, f"{p['kind']}: elements at other addresses than the hardware's",
                          f"{_text(observed)} as a swizzled pointer puts {len(wrong)} of {len(got)} elements elsewhere")

    def reproducer_script(self, case: Case) -> str:
        """A script that needs only the CuTe DSL (``layoutfuzz export``)."""
        return reproducer(case)

    def metrics(self, case: Case, observed: Any) -> Mapping[str, float]:
        """Whether the composed layout read as a function in elements (its docstring's words) gives the same addresses."""
        p = case.params
        bits = ELEMENTS[p["element"]]
        if not isinstance(observed, dict) or "refused" in observed or not atoms.divides(p["kind"], bits, p["shape"]):
            return {}
        try:
            expected = atoms.tile_bit_addresses(p["kind"], bits, p["shape"], p["order"])
            function = element_bit_addresses(observed, bits)
        except (LayoutError, ValueError):
            return {}
        return {"element_units_agree": float(function.shape == expected.shape and bool((function == expected).all()))}


def _swizzle(observed: Mapping[str, Any]) -> Swizzle:
    return Swizzle(*observed["swizzle"])


def pointer_bit_addresses(observed: Mapping[str, Any], elem_bits: int) -> np.ndarray:
    """Bit addresses when the layout sits on a pointer swizzled by the swizzle: the swizzle acts on byte addresses."""
    bits = (observed["offset"] + offsets_array(Layout(_tuple(observed["shape"]), _tuple(observed["stride"])))) * elem_bits
    return _swizzle_array(bits >> 3, _swizzle(observed)) << 3 | (bits & 7)


def element_bit_addresses(observed: Mapping[str, Any], elem_bits: int) -> np.ndarray:
    """Bit addresses when the composed layout is a function in elements: the swizzle acts on element offsets."""
    elements = observed["offset"] + offsets_array(Layout(_tuple(observed["shape"]), _tuple(observed["stride"])))
    return _swizzle_array(elements, _swizzle(observed)) * elem_bits


def _swizzle_array(offset: np.ndarray, swizzle: Swizzle) -> np.ndarray:
    """``Swizzle<B,M,S>`` over an array (``oracles.cute.Swizzle``'s rule)."""
    mask = (1 << swizzle.bits) - 1
    return offset ^ (((offset >> (swizzle.base + swizzle.shift)) & mask) << swizzle.base)


def tile_many(calls: Sequence[tuple[str, str, tuple, tuple]]) -> list[Any]:
    """For each (kind, DSL type name, shape, order): the DSL's tile_to_shape of its atom as plain data, or the
    exception the DSL raised; all in one @cute.jit trace."""
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.nvgpu import warpgroup

    results: list[Any] = []

    @cute.jit
    def trace() -> None:  # a fresh function each batch: the DSL caches a traced function by its arguments
        for kind, dtype, shape, order in calls:
            try:
                atom = warpgroup.make_smem_layout_atom(getattr(warpgroup.SmemLayoutAtomKind, kind), getattr(cutlass, dtype))
                tiled = cute.tile_to_shape(atom, shape, order)
                sw = tiled.inner
                results.append({"swizzle": [int(sw.num_bits), int(sw.num_base), int(sw.num_shift)],
                                "offset": _static(tiled.offset), "shape": _lists(_static(tiled.outer.shape)),
                                "stride": _lists(_static(tiled.outer.stride))})
            except Exception as exc:  # the DSL's raise on this input: that case's answer
                results.append(exc)

    trace()
    return results


def _coord(index: int, shape: Sequence[int]) -> list[int]:
    out = []
    for n in shape:
        out.append(index % n)
        index //= n
    return out


def _text(observed: Mapping[str, Any]) -> str:
    return f"S<{','.join(map(str, observed['swizzle']))}> o {observed['offset']} o {observed['shape']}:{observed['stride']}"


def reproducer(case: Case) -> str:
    """A script that needs only the CuTe DSL: ``cute.tile_to_shape`` of the case's atom in a ``@cute.jit`` function in a
    child process, judged by CuTe's definitions written inline: the atom of cute/atom/mma_traits_sm90_gmma.hpp (8 rows
    of the swizzle's width, K- or MN-major, Swizzle<B,4,3> on byte addresses), atoms placed as tile_to_shape places
    them, and CuTe C++'s refusal of a shape the atom does not divide."""
    from layoutfuzz.harness.targets.cute_layouts import dsl_probe
    from layoutfuzz.harness.targets.cute_scripts import SCRIPT_HELPERS
    from layoutfuzz.harness.targets.script_parts import PARENT_IMPORTS, RUN_CHILD

    p = case.params
    shape, order, bits = tuple(p["shape"]), tuple(p["order"]), ELEMENTS[p["element"]]
    constants = (f"KIND = warpgroup.SmemLayoutAtomKind.{p['kind']}\nDTYPE = cutlass.{DSL_TYPES[p['element']]}\n"
                 f"SHAPE = {shape!r}\nORDER = {order!r}\n")
    read = ('{"swizzle": [int(r.inner.num_bits), int(r.inner.num_base), int(r.inner.num_shift)], '
            '"offset": static(r.offset), "shape": static(r.outer.shape), "stride": static(r.outer.stride)}')
    child = dsl_probe(constants, "cute.tile_to_shape(warpgroup.make_smem_layout_atom(KIND, DTYPE), SHAPE, ORDER)", read,
                      "import cutlass\nfrom cutlass.cute.nvgpu import warpgroup\n")
    return f'''"""The CuTe DSL's tile_to_shape of a Hopper shared-memory atom ({case.case_id}, found by layoutfuzz): the
{p["kind"]} atom of {p["element"]} ({bits}-bit elements) tiled to {shape} in order {order}, read as the DSL's kernels use it
(the layout on a pointer swizzled by its swizzle, which acts on byte addresses). CuTe C++ refuses a shape the atom does
not divide ('tile_to_shape: block shape does not divide the target shape'); otherwise every element must sit at the
address CuTe's atom and tile_to_shape define. Needs only the CuTe DSL; runs on a CPU. Exit 1 while the problem shows, 0
once it is gone, 2 where this release lacks the atom or type."""
{PARENT_IMPORTS}from math import prod

KIND = {p["kind"]!r}
BITS = {bits}
SHAPE = {shape!r}
ORDER = {order!r}
# CuTe's atom (cute/atom/mma_traits_sm90_gmma.hpp), in bits: 8 rows of the swizzle's width W, K-major (8, W):(W, 1)
# or MN-major (W, 8):(1, W), on a pointer swizzled by Swizzle<B,4,3>: byte address bits [7, 7+B) XORed into [4, 4+B)
W, B = {{"INTER": (128, 0), "SW32": (256, 1), "SW64": (512, 2), "SW128": (1024, 3)}}[KIND.split("_")[1]]
K_MAJOR = KIND.startswith("K_")
ATOM = (8, W // BITS) if K_MAJOR else (W // BITS, 8)  # in elements

CHILD = r"""{child}"""
{SCRIPT_HELPERS}{RUN_CHILD}

def expected_address(i):
    """The bit address of element i (colexicographic over SHAPE): its atom's number in the ordered layout of the
    atoms (SHAPE / ATOM) times the atom's 8 W bits, plus its offset inside the atom; the bytes swizzled."""
    coord, rest = [], i
    for n in SHAPE:
        coord.append(rest % n)
        rest //= n
    extents = [SHAPE[0] // ATOM[0], SHAPE[1] // ATOM[1], *SHAPE[2:]]
    tile = [coord[0] // ATOM[0], coord[1] // ATOM[1], *coord[2:]]
    number, step = 0, 1
    for mode in sorted(range(len(extents)), key=lambda m: ORDER[m]):  # make_ordered_layout: the lowest order fastest
        number += tile[mode] * step
        step *= extents[mode]
    mn, k = coord[0] % ATOM[0], coord[1] % ATOM[1]
    bits = number * 8 * W + (mn * (W // BITS) + k if K_MAJOR else mn + k * (W // BITS)) * BITS
    byte = bits >> 3
    return (byte ^ (((byte >> 7) & ((1 << B) - 1)) << 4)) << 3 | (bits & 7)


def observed_address(R, i):
    """The bit address of element i of the DSL's answer: the layout's offset, on the swizzled pointer."""
    bits = (R["offset"] + at((tup(R["shape"]), tup(R["stride"])), i)) * BITS
    return swizzle(bits >> 3, *R["swizzle"]) << 3 | (bits & 7)


print("nvidia-cutlass-dsl", __import__("importlib.metadata").metadata.version("nvidia-cutlass-dsl"))
divides = SHAPE[0] % ATOM[0] == 0 and SHAPE[1] % ATOM[1] == 0
want = (f"every element at CuTe's address (element 1 at bit {{expected_address(1)}})" if divides else
        f"a refusal: the atom {{ATOM}} does not divide {{SHAPE}}")
R = run_child(CHILD, want)
print("expected:", want)
if "raised" in R:
    print("observed: raised", R["raised"][:300])
    sys.exit(1 if divides else 0)
text = f"S<{{','.join(map(str, R['swizzle']))}}> o {{R['offset']}} o {{R['shape']}}:{{R['stride']}}"
if not divides:
    print("observed:", text, "of size", size(R["shape"]), "for", prod(SHAPE), "elements")
    sys.exit(1)
wrong = [i for i in range(prod(SHAPE)) if size(R["shape"]) != prod(SHAPE) or observed_address(R, i) != expected_address(i)]
print("observed:", text, f"({{len(wrong)}} elements elsewhere)" if wrong else "")
sys.exit(1 if wrong else 0)
'''


def _repeats(p: dict[str, Any], mode: int) -> int | None:
    """How many atoms fit along ``mode`` (None where the atom does not divide it)."""
    size = atoms.atom_shape(p["kind"], ELEMENTS[p["element"]])[mode]
    return p["shape"][mode] // size if p["shape"][mode] % size == 0 else None
