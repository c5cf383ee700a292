"""Target ``triton.nvmma_default``: Gluon's ``NVMMASharedLayout.get_default_for``, the front end's choice of swizzle
for a block, over every block it takes (rank 1-3, dims of 1 to 256, 8- to 64-bit elements, transposed or not, a CGA
split of 1 to 8 CTAs, fp4 padding).

Its docstring is the definition: "picks the largest swizzle pattern compatible with the shape". Compatible is the
shared layout's own precondition (``oracles.gluon_layouts``: a swizzled NVMMA layout needs each CTA's block to hold
its 8-row swizzle atom, which ``to_linear_layout`` aborts without), so the expected swizzle is the largest of 128, 64
and 32 bytes whose layout meets it, else none. A choice the precondition refuses is a layout the compiler then aborts
on; a smaller one than the largest compatible costs TMA and MMA messages.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from layoutfuzz.generators import gluon_layouts as gen
from layoutfuzz.generators.case import Case
from layoutfuzz.generators.source import Source, at_edge, bounded
from layoutfuzz.generators.space import Parameter, Space
from layoutfuzz.harness.compare import Comparison
from layoutfuzz.harness.triton_compat.gluon_layouts import GluonTarget
from layoutfuzz.oracles import gluon_layouts as oracle

DTYPES = {8: "int8", 16: "float16", 32: "float32", 64: "float64"}
SWIZZLES = (128, 64, 32)  # bytes, the largest first
MAX_DIM_LOG2 = 8


def block(source: Source) -> dict[str, Any]:
    """{"shape", "bits", "transposed", "fp4_padded", "cga_layout"}: dims of 1 to 256 (at the edges 1 or 256)."""
    edge = at_edge(source)
    rank = source.choice((1, 2, 2, 3))
    shape = [1 << bounded(source, 0, MAX_DIM_LOG2, edge) for _ in range(rank)]
    bits = source.choice(tuple(DTYPES))
    cga = gen.cga(source, rank, False)
    shape = [max(s, c) for s, c in zip(shape, gen.cga_shape(cga) or [1] * rank)]  # a block its CTAs divide
    return {"shape": shape, "bits": bits, "transposed": rank > 1 and source.integer(0, 1) == 1,
            "fp4_padded": bits == 8 and source.integer(0, 7) == 0, "cga_layout": cga}


def spec(p: dict[str, Any], swizzle: int) -> dict[str, Any]:
    """The NVMMASharedLayout of the block with ``swizzle`` bytes, as a layout dict of ``oracles.gluon_layouts``."""
    return {"kind": "nvmma_shared", "swizzle_byte_width": swizzle, "element_bitwidth": p["bits"],
            "rank": len(p["shape"]), "transposed": p["transposed"], "fp4_padded": p["fp4_padded"],
            "cga_layout": p["cga_layout"]}


def largest_compatible(p: dict[str, Any]) -> int | None:
    """The largest swizzle whose layout meets the precondition over the block, else 0; None for an fp4-padded block,
    whose layout takes only the 128-byte swizzle (NVMMASharedLayout asserts it; the oracle does not model the
    padding's atom, so ``compare`` holds it to that rule alone)."""
    if p["fp4_padded"]:
        return None
    return next((s for s in SWIZZLES if oracle.precondition(spec(p, s), p["shape"]) is None), 0)


FRONT_END = """
import triton
from triton.experimental.gluon import language as ttgl

SHAPE, CGA, FP4 = {shape}, {cga}, {fp4}
# a CGA layout's bases are its CTA bits' offsets in the block: a base nonzero along a dim splits that dim in two
SPLITS = [1 << sum(1 for base in CGA if base[d]) for d in range(len(SHAPE))]
DIVIDES = all(size % split == 0 for size, split in zip(SHAPE, SPLITS))
try:
    CHOSEN = {call}
except TypeError as exc:  # an argument this release does not have
    print("unavailable:", exc)
    sys.exit(2)
except Exception as exc:  # a refusal: right only where the CTAs do not divide the block
    print("triton", triton.__version__)
    print("expected:", f"a layout (CTAs per dim {{SPLITS}} divide the block {{SHAPE}})" if DIVIDES else "a refusal")
    print("observed: refused:", type(exc).__name__, (str(exc).splitlines() or [""])[0][:200])
    sys.exit(1 if DIVIDES else 0)
if FP4 and CHOSEN.swizzle_byte_width != 128 or not CHOSEN.swizzle_byte_width:  # nothing for the compiler to refuse
    print("triton", triton.__version__)
    print("expected:", "a 128-byte swizzle (fp4 padding takes no other)" if FP4 else "a layout")
    print("observed:", f"a {{CHOSEN.swizzle_byte_width}}-byte swizzle")
    sys.exit(1 if FP4 and CHOSEN.swizzle_byte_width != 128 else 0)
"""  # the script's first check: get_default_for's own answer, before the chosen layout goes to the compiler


class TritonNvmmaDefault(GluonTarget):
    name = "triton.nvmma_default"
    layer = "Triton's Gluon front end (NVMMASharedLayout.get_default_for)"
    description = "Gluon's default NVMMA shared layout of a block: the largest swizzle its shape takes"

    def generate(self, source: Source) -> dict[str, Any]:
        return block(source)

    def validate(self, case: Case) -> None:
        p = case.params
        shape = p.get("shape")
        if not isinstance(shape, list) or not 1 <= len(shape) <= 3 or any(
                not isinstance(s, int) or s < 1 or s & (s - 1) or s > 1 << MAX_DIM_LOG2 for s in shape):
            raise ValueError(f"shape: 1 to 3 dims, powers of two up to {1 << MAX_DIM_LOG2}")
        if p.get("bits") not in DTYPES or p.get("transposed") not in (True, False) or p.get("fp4_padded") not in (True, False):
            raise ValueError(f"bits one of {list(DTYPES)}, transposed and fp4_padded booleans")
        if p["fp4_padded"] and p["bits"] != 8 or p["transposed"] and len(shape) < 2:
            raise ValueError("fp4 padding of 8-bit elements only; a transposed block of rank 2 or more")
        cga = p.get("cga_layout")
        if not isinstance(cga, list) or len(cga) > 3 or any(not isinstance(b, list) or len(b) != len(shape) for b in cga):
            raise ValueError("cga_layout: up to 3 bases of the block's rank")
        if any(s % c for s, c in zip(shape, gen.cga_shape(cga))) or oracle.precondition(spec(p, 0), shape):
            raise ValueError("the CGA layout does not split the block (Gluon: a block divisible by its CTAs)")

    def family(self, case: Case) -> str:
        p = case.params
        return f"rank {len(p['shape'])}{' transposed' if p['transposed'] else ''}, {p['bits']}-bit"

    def shrink(self, case: Case) -> Iterator[dict[str, Any]]:
        """A halved dim, then one CGA basis fewer."""
        p = case.params
        for d, size in enumerate(p["shape"]):
            if size > 1:
                yield {**p, "shape": [s // 2 if i == d else s for i, s in enumerate(p["shape"])]}
        if p["cga_layout"]:
            yield {**p, "cga_layout": p["cga_layout"][:-1]}

    def parameter_space(self) -> Space:
        api = "Gluon: NVMMASharedLayout.get_default_for(block_shape, dtype, transposed, fp4_padded, cga_layout)"
        return Space((
            Parameter("rank", (1, 2, 3), api, lambda p: len(p["shape"])),
            Parameter("element bits", tuple(DTYPES), api, lambda p: p["bits"]),
            Parameter("largest dim (log2)", tuple(range(MAX_DIM_LOG2 + 1)), "this target: dims of 1 to 256",
                      lambda p: max(p["shape"]).bit_length() - 1),
            Parameter("transposed", (False, True), api, lambda p: p["transposed"]),
            Parameter("CTAs", (1, 2, 4, 8), api, lambda p: 1 << len(p["cga_layout"])),
            Parameter("expected swizzle", (0, 32, 64, 128, "fp4: 128 only"), "its docstring: the largest compatible",
                      lambda p: "fp4: 128 only" if p["fp4_padded"] else largest_compatible(p)),
        ), lambda a, x, b, y: {a: x, b: y}.get("rank") == 1 and {a: x, b: y}.get("transposed") is True)

    def expected(self, case: Case) -> int | None:
        return largest_compatible(case.params)

    def observed(self, case: Case) -> Any:
        from triton.experimental.gluon import language as ttgl

        p = case.params
        dtype = getattr(ttgl, DTYPES[p["bits"]])
        try:
            layout = ttgl.NVMMASharedLayout.get_default_for(list(p["shape"]), dtype, transposed=p["transposed"],
                                                            fp4_padded=p["fp4_padded"], cga_layout=p["cga_layout"] or None)
        except Exception as exc:  # judged: the block is valid
            return {"refused": f"{type(exc).__name__}: {exc}"}
        return {"swizzle": layout.swizzle_byte_width}

    def reproducer_script(self, case: Case) -> str | None:
        """Gluon's ``get_default_for`` on the block, judged in the script itself: a refusal of a block its CTAs divide
        exits 1, as does an fp4-padded layout of another swizzle than 128 bytes; a swizzled choice then goes through
        ``to_linear_layout`` as ``triton.gluon_layouts`` writes it (a kernel compiled for sm_90 on a CPU, in a child
        process), which exits 1 where the compiler aborts on it: the second route to a choice the precondition
        refuses."""
        from layoutfuzz.harness.targets.triton_gluon_layouts import gluon_source, standalone_script

        p = case.params
        observed = self.observed(case)
        layout = spec(p, observed.get("swizzle", largest_compatible(p) or 0))  # the literal the call then replaces
        script = standalone_script(Case("triton.gluon_layouts", case.seed, case.index,
                                        {"layout": layout, "shape": list(p["shape"]), "num_warps": 4}))
        call = (f"ttgl.NVMMASharedLayout.get_default_for({p['shape']}, ttgl.{DTYPES[p['bits']]}, "
                f"transposed={p['transposed']}, fp4_padded={p['fp4_padded']}, cga_layout={p['cga_layout'] or None})")
        written, imports = f"LAYOUT = {gluon_source(layout)}", "import tempfile\n"
        if written not in script or imports not in script:
            return None
        front_end = FRONT_END.format(shape=list(p["shape"]), cga=p["cga_layout"] or [], fp4=p["fp4_padded"], call=call)
        return ("# The layout is the one Gluon's get_default_for returns for the block.\n"
                + script.replace(written, f"LAYOUT = {call}").replace(imports, imports + front_end, 1))

    def compare(self, case: Case, expected: int | None, observed: Any) -> Comparison:
        if case.params["fp4_padded"]:  # NVMMASharedLayout: fp4 padding takes the 128-byte swizzle only
            ok = "refused" in observed or observed["swizzle"] == 128
            return Comparison(True) if ok else Comparison(
                False, 1, (f"chose {observed['swizzle']} bytes for an fp4-padded block",),
                "get_default_for: an fp4-padded layout of another swizzle than 128 bytes", "fp4 padding needs 128")
        if "refused" in observed and expected is None:
            return Comparison(True, note="refused: no layout of the block meets the precondition")
        if "refused" in observed:
            return Comparison(False, 1, (observed["refused"],), "get_default_for: spurious refusal",
                              f"refused a block it takes: {observed['refused']}")
        chose = observed["swizzle"]
        if chose == expected:
            return Comparison(True)
        why = oracle.precondition(spec(case.params, chose), case.params["shape"])
        what = "a swizzle its layout's precondition refuses" if why else "a smaller swizzle than the largest compatible"
        return Comparison(False, 1, (f"chose {chose} bytes, the largest compatible is {expected}" + (f" ({why})" if why else ""),),
                          f"get_default_for: {what}", f"chose {chose}, expected {expected}")
