"""TTGIR that differs between releases, for the modules layoutfuzz writes itself (``gpu.direct_ttgir``).

- Module attributes: 3.9.0's Gluon frontend adds ``"ttng.two-ctas" = false``; 3.6.0's, 3.7.1's and 3.8.0's have no such
  attribute (``tests/test_direct_ttgir.py`` passes under all four). Where the written module differs from the
  frontend's on another release, ``gpu.direct_ttgir`` compiles through Gluon.
"""

from __future__ import annotations


def module_attributes(num_ctas: int, num_warps: int) -> str:
    """The attribute dictionary of a Gluon kernel's module for sm_90, as this Triton's frontend writes it."""
    import triton

    from layoutfuzz.harness.triton_compat import parse_version

    two_ctas = ', "ttng.two-ctas" = false' if parse_version(triton.__version__) >= (3, 9, 0) else ""
    return (f'{{"ttg.num-ctas" = {num_ctas} : i32, "ttg.num-warps" = {num_warps} : i32, ttg.target = "cuda:90", '
            f'"ttg.threads-per-warp" = 32 : i32{two_ctas}}}')
