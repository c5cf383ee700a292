"""Target ``triton.layout_chains_run``: ``triton.layout_chains``' kernels (two or three layout-sensitive Gluon
operations in a row, each on the layout Gluon inferred for the one before) run on the GPU, their values against NumPy
(``oracles.gluon_chains``).

The same cases as the CPU target, but only chains with no documented limit in them (``chain_limit``: no scan of a
layout other than the first, blocked one, no split but of a join) and no conversion over a cluster (which Triton
lowers only where every element stays in its CTA). The tile holds small integers in float32, so every sum, maximum and
scan is exact: the expected buffer is NumPy's answer bit for bit, and a wrong value is the lowering's.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from math import prod
from typing import Any

import numpy as np

from layoutfuzz.generators import gluon_chains
from layoutfuzz.generators.case import Case
from layoutfuzz.generators.source import Source
from layoutfuzz.generators.space import Space
from layoutfuzz.gpu.device_arrays import device_input, device_output
from layoutfuzz.gpu.targets.gluon_kernel import KernelSpec
from layoutfuzz.gpu.targets.triton_layout_ops_run import TritonLayoutOpsRun
from layoutfuzz.harness.targets import triton_layout_chains as chains
from layoutfuzz.harness.targets.triton_layout_ops import valid
from layoutfuzz.harness.triton_compat.gluon_layouts import num_ctas
from layoutfuzz.oracles import gluon_chains as oracle

FALLBACK = {"op": "chain", "steps": [["trans", 0], ["flat", 0]], "shape": [8, 16], "num_warps": 4, "edge": False,
            "layout": {"kind": "blocked", "size_per_thread": [1, 1], "threads_per_warp": [4, 8],
                       "warps_per_cta": [2, 2], "order": [1, 0], "cga_layout": []}}


def why_not(p: Mapping[str, Any]) -> str | None:
    """Why ``p`` is not a case of this target (the validator's answer), or None."""
    why = chains.why_not(p)
    if why:
        return why
    if chains.chain_limit(p):
        return f"the chain meets a documented limit: {chains.chain_limit(p)}"
    if "convert_layout" in p and num_ctas(p["layout"]) > 1:
        return "no conversion over a cluster (Triton lowers one only where every element stays in its CTA)"
    return None


def lowering(p: Mapping[str, Any]) -> str:
    """The lowering a wrong value is signed with (one bug, one bucket, whatever steps surround it): "reduction" where
    the chain reduces (sum, max, keep, center), else "scan" where it scans, else "data movement" (permutes, reshapes,
    join, split, conversions)."""
    steps = {step for step, _ in p["steps"]}
    if steps & {"sum", "max", "keep", "center"}:
        return "reduction"
    return "scan" if "cumsum" in steps else "data movement"


def tile(index: int, shape: list[int]) -> np.ndarray:
    """The case's input: integers from -4 to 4 in float32 (sums of up to 2^12 of them are exact)."""
    return np.random.default_rng(index).integers(-4, 5, prod(shape)).astype(np.float32).reshape(shape)


def output_size(p: Mapping[str, Any]) -> int:
    """The output buffer's elements: the largest tensor the chain makes (a join doubles the tile)."""
    return max(prod(shape) for shape in gluon_chains.shapes(p["steps"], p["shape"]))


def expected_output(p: Mapping[str, Any], x: np.ndarray) -> np.ndarray:
    """The output buffer: the chain's result row-major first, zeros after it."""
    y = oracle.evaluate(p["steps"], x).ravel()
    out = np.zeros(output_size(p), np.float32)
    out[: y.size] = y
    return out


class TritonLayoutChainsRun(TritonLayoutOpsRun):
    """``triton.layout_ops_run`` for chains: its launch, its judgement of a refusal and of wrong values (signed by the
    lowering a chain passes through); the cases, kernels and expected buffers are the chains'."""

    name = "triton.layout_chains_run"
    layer = "Triton's lowering (chains of layout-sensitive operations)"
    description = ("chains of 1-3 layout-sensitive Gluon operations, each on the layout inferred for the one before, "
                   "run on the GPU against NumPy")
    def generate(self, source: Source) -> dict[str, Any]:
        """``triton.layout_chains``' cases, redrawn until one is runnable (no documented limit in it)."""
        for _ in range(32):
            case = gluon_chains.chain_case(source, valid)
            case["num_ctas"] = num_ctas(case["layout"])
            if why_not(case) is None:
                return case
        return {**FALLBACK, "num_ctas": 1}

    def validate(self, case: Case) -> None:
        why = why_not(case.params)
        if why:
            raise ValueError(why)
        if case.params.get("num_ctas") != num_ctas(case.params["layout"]):
            raise ValueError("num_ctas must be the layout's CTAs")

    def family(self, case: Case) -> str:
        p = case.params
        return f"{chains.describe_steps(p)}:{p['layout']['kind']}:{p['num_ctas']} CTAs"

    def parameter_space(self) -> Space:
        return chains.TritonLayoutChains().parameter_space()

    def shrink(self, case: Case) -> Iterator[dict[str, Any]]:
        """A step fewer, where the chain stays runnable."""
        for q in chains.TritonLayoutChains().shrink(case):
            if why_not(q) is None:
                yield q

    def kernel_spec(self, case: Case) -> KernelSpec:
        from layoutfuzz.harness.triton_compat import gluon_op_kernels
        from layoutfuzz.harness.triton_compat.gluon_layouts import from_spec

        p = case.params
        name, constexprs, dtype = chains.kernel_call(p)
        layouts = {"A": from_spec(dict(p["layout"])),
                   "B": from_spec(dict(p["convert_layout"])) if "convert_layout" in p else None}
        constexprs = {k: layouts[k] if k in layouts else v for k, v in constexprs.items()}
        return KernelSpec(getattr(gluon_op_kernels, name), {"src": dtype, "dst": dtype}, constexprs,
                          p["num_warps"], p["num_ctas"])

    def expected(self, case: Case) -> Any:
        p = case.params
        return {"output": expected_output(p, tile(case.index, p["shape"])).tolist()}

    def run(self, case: Case) -> Any:
        from layoutfuzz.gpu.targets.gluon_kernel import cubin_launcher

        p = case.params
        kernel = self.kernel_for(case)
        stream = cubin_launcher().stream
        x = tile(case.index, p["shape"])
        src = device_input(x.ravel(), "src", stream)
        dst = device_output(np.zeros(output_size(p), np.float32), "dst", stream)
        self.execute(case, src, dst, kernel=kernel)
        return {"output": dst.read(stream).tolist()}

    def wrong_values(self, p: Mapping[str, Any]) -> str:
        return f"{lowering(p)}: wrong values"

    def reproducer_script(self, case: Case) -> str | None:
        return None  # no standalone GPU script of a chain yet: its ledger entries are met through other targets
