"""Second lowerings of one operation, where a release offers them.

Triton 3.9.0's ``ttg.convert_layout`` takes a ``force_warp_shuffle`` property: a conversion that stays
inside each warp is lowered to warp shuffles instead of Triton's own choice (often a round trip through
shared memory). Gluon does not expose it, so the kernel's TTGIR is compiled again with the property set.
3.8.0's libtriton has no such property (its binary holds no ``force_warp_shuffle``), nor has 3.6.0 or 3.7.1.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

from layoutfuzz.harness.triton_compat import at_least

WARP_SHUFFLE = "warp_shuffle"


def supports(variant: str) -> bool:
    """Whether the Triton under test offers the lowering ``variant`` ('' is its own choice)."""
    return variant == "" or (variant == WARP_SHUFFLE and at_least("3.9.0"))


def with_forced_warp_shuffle(ttgir: str) -> str:
    """The module with every ``ttg.convert_layout`` marked ``force_warp_shuffle``."""
    marked, count = re.subn(r"(ttg\.convert_layout %[\w#]+)( :)", r"\1 {force_warp_shuffle}\2", ttgir)
    if not count:
        raise ValueError("the kernel has no convert_layout to lower otherwise")
    return marked


def recompile(compiled: Any, variant: str) -> Any:
    """A kernel Triton compiled (its own lowering), compiled again from its TTGIR with ``variant``."""
    import triton
    from triton.backends.compiler import GPUTarget

    if variant != WARP_SHUFFLE:
        raise ValueError(f"no lowering {variant!r}")
    with tempfile.TemporaryDirectory(prefix="layoutfuzz-ttgir-") as tmp:
        path = Path(tmp) / f"{compiled.metadata.name}.ttgir"
        path.write_text(with_forced_warp_shuffle(compiled.asm["ttgir"]))
        return triton.compile(str(path), target=GPUTarget("cuda", 90, 32),
                              options={"num_warps": compiled.metadata.num_warps})
