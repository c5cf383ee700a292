"""NVRTC compilation of the CUDA C++ under gpu/kernels through cuda.core (no GPU needed)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

KERNELS = Path(__file__).parent / "kernels"
ARCH = "sm_90a"  # wgmma needs the 'a' target; TMA runs on plain sm_90 too


@cache
def compile_kernel(filename: str, arch: str = ARCH):
    """The cubin (cuda.core ObjectCode) of ``gpu/kernels/FILENAME`` for ``arch``."""
    from cuda.core import Program, ProgramOptions

    source = (KERNELS / filename).read_text()
    program = Program(source, code_type="c++", options=ProgramOptions(arch=arch, std="c++17", name=filename))
    return program.compile("cubin")
