"""What Triton's ``to_linear_layout`` answers, in the oracle's terms, on every release.

- 3.6.0 to 3.8.0 return a distributed layout (register, lane, warp, block bases) for every layout;
  3.6.0 aborts on shared layouts. 3.9.0 returns a ``SharedLinearLayout`` (offset, block bases) for a
  shared layout.
- 3.9.0 leaves the zero register bases (register broadcasts) out of a BlockedLayout whose tile is
  larger than the tensor; 3.6.0 to 3.8.0 keep them, and 3.9.0 keeps them for every other distributed
  layout (checked here: BlockedLayout([2, 1], [1, 32], [2, 2], [1, 0]) on [1, 4] gives register bases
  [[0, 0]] on 3.6.0, 3.7.1 and 3.8.0 and none on 3.9.0; of 400 cases of seed 7 under 3.9.0, 11 of 56
  blocked layouts differ from the oracle in exactly this way, and no slice, dot-operand or NVMMA one).
"""

from __future__ import annotations

from typing import Any

from layoutfuzz.harness.triton_compat import at_least

DISTRIBUTED = {"register": "reg_bases", "lane": "lane_bases", "warp": "warp_bases", "block": "block_bases"}
SHARED = {"offset": "offset_bases", "block": "block_bases"}


def bases(result: Any) -> dict[str, list[list[int]]]:
    """In dim -> bases of what ``to_linear_layout`` returned (distributed or shared)."""
    names = SHARED if hasattr(result, "offset_bases") else DISTRIBUTED
    return {dim: [list(b) for b in getattr(result, attr)] for dim, attr in names.items()}


def drops_register_broadcasts(kind: str) -> bool:
    """Whether this Triton leaves zero register bases out of a ``kind`` layout (blocked, from 3.9.0)."""
    return kind == "blocked" and at_least("3.9.0")


def in_triton_convention(kind: str, expected: dict[str, list[list[int]]]) -> dict[str, list[list[int]]]:
    """The oracle's bases in this Triton's convention: without zero register bases where it drops them."""
    if not drops_register_broadcasts(kind) or "register" not in expected:
        return expected
    return {**expected, "register": [b for b in expected["register"] if any(b)]}


def front_end_ir(kernel: Any, signature: dict[str, str], constexprs: dict[str, Any], num_warps: int = 4) -> str:
    """The IR Gluon's front end builds for a kernel (types inferred, no pass run): what ``triton.compile``
    does before its first pass, on every release from 3.6.0."""
    from triton._C.libtriton import ir
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend
    from triton.experimental.gluon._runtime import GluonASTSource

    target = GPUTarget("cuda", 90, 32)
    backend = make_backend(target)
    options = backend.parse_options({"num_warps": num_warps})
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    source = GluonASTSource(kernel, {**signature, **{k: "constexpr" for k in constexprs}}, dict(constexprs))
    module = source.make_ir(target, options, backend.get_codegen_implementation(options), backend.get_module_map(), context)
    return module.str()


def honours_unswizzled_transposed() -> bool:
    """Whether this Triton lays an unswizzled (swizzle 0) transposed 2-D NVMMA buffer out with dim 0
    fastest (3.8.0 on). 3.6.0 and 3.7.1 ignore ``transposed`` there: row-major, as their
    nvmmaSharedToLinearLayout's swizzle-0 branch builds it. Evidence: an H100 read back the raw
    placement of the same 13 such cases of triton.shared_memory from kernels compiled by each release:
    row-major under 3.6.0 and 3.7.1, dim 0 fastest under 3.8.0 and 3.9.0
    (docs/findings.md); 3.9.0's to_linear_layout says the same."""
    return at_least("3.8.0")


def shared_layout(layout: Any, shape: list[int]) -> Any:
    """The oracle's linear layout of a shared legacy layout, in this Triton's definition: an unswizzled
    transposed 2-D NVMMA buffer is dim 0 fastest from 3.8.0 on (rank 3 and more keep the older
    definition, which the H100 has not settled)."""
    from layoutfuzz.oracles import triton_layouts as tl

    if (isinstance(layout, tl.NVMMASharedLayout) and layout.swizzle_byte_width == 0 and layout.transposed
            and layout.rank == 2 and honours_unswizzled_transposed()):
        cta = tl.identity_standard_nd(tl.OFFSET, [min(s, 256) for s in shape], [0, 1])
        return tl.fit_to_shape(cta.transpose_outs(tl.dim_names(2)), shape)
    return layout.linear_layout(shape)
