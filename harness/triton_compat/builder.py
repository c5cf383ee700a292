"""A Gluon op builder placed inside a module, as Triton's own compiler places it.

Triton 3.9's layout queries (``get_shared_bank_conflicts``) look up the module around the builder's
insertion point and crash (SIGSEGV in ``Block::getParentOp``) without one; 3.6.0 to 3.8.0 do not need
it but accept it, so every release gets the same builder."""

from __future__ import annotations

from functools import cache
from typing import Any

TARGET = "cuda:90"
_MODULES: list[Any] = []


@cache
def context() -> Any:
    """One MLIR context per worker process, with Triton's dialects loaded."""
    from triton._C.libtriton import ir

    ctx = ir.context()
    ir.load_dialects(ctx)
    return ctx


def warm_up() -> None:
    """The context, the builder and the Triton version, made ahead (``Target.warm_up``): about 6 ms of a worker's
    first case; none of them starts a thread."""
    from layoutfuzz.harness.triton_compat import version

    context()
    builder()
    version()


@cache
def builder(num_warps: int = 4, num_ctas: int = 1) -> Any:
    """A GluonOpBuilder whose insertion point is the entry block of a function in a module carrying
    the attributes Gluon's runtime sets (target, warps, CTAs, threads per warp)."""
    from triton._C.libtriton import gluon_ir

    b = gluon_ir.GluonOpBuilder(context())
    module = b.create_module()
    module.set_attr("ttg.target", b.get_string_attr(TARGET))
    for name, value in (("ttg.num-warps", num_warps), ("ttg.num-ctas", num_ctas), ("ttg.threads-per-warp", 32)):
        module.set_attr(name, b.get_int32_attr(value))
    function = b.get_or_insert_function(module, "layoutfuzz_probe", b.get_function_ty([], []), "public", False)
    module.push_back(function)
    b.set_insertion_point_to_start(function.add_entry_block())
    _MODULES.append(module)  # the module must live as long as the builder inserts into it
    return b
