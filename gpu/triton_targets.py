"""GPU targets that run generated Triton/Gluon kernels (issue: GPU drivers II)."""

from __future__ import annotations

from collections.abc import Mapping
from importlib import metadata
from typing import Any

from generators.case import Case
from generators.layouts import distributed_layout, split_bits
from generators.source import Source, permutation
from gpu.targets import cuda_device_availability
from harness.target import Availability, Target
from oracles.algorithms import conversion_plan
from oracles.linear_layout import LinearLayout

INT_TYPES = {8: "int8", 16: "int16", 32: "int32", 64: "int64"}


def holders(layout: LinearLayout, shape: list[int]) -> list[int]:
    """For each element (row-major), the ``%tid.x`` of the thread that stores it: the copy whose
    broadcast lane and warp bits are zero (the right inverse with slack variables zero)."""
    inverse = layout.right_inverse()
    names = [n for n, _ in layout.out_dims]
    out = []
    total = 1
    for s in shape:
        total *= s
    for flat in range(total):
        coords, rest = {}, flat
        for name, size in reversed(list(zip(names, shape))):
            coords[name] = rest % size
            rest //= size
        hw = inverse.apply(coords)
        out.append(hw.get("lane", 0) + 32 * hw.get("warp", 0))
    return out


def gluon_layout(layout: LinearLayout, shape: list[int]):
    from triton.experimental.gluon import language as ttgl

    bases = {n: [list(b) for b in bs] for n, bs in layout.in_dims}
    return ttgl.DistributedLinearLayout(bases.get("register", []), bases.get("lane", []), bases.get("warp", []), [], list(shape))


def _permuted(source: Source, layout: LinearLayout, dims: tuple[str, ...]) -> LinearLayout:
    """``layout`` with the bases of ``dims`` shuffled among those dims (sizes kept)."""
    bases = {n: list(bs) for n, bs in layout.in_dims}
    pool = [b for d in dims for b in bases[d]]
    order = permutation(source, len(pool))
    shuffled = [pool[i] for i in order]
    for d in dims:
        count = len(bases[d])
        bases[d], shuffled = shuffled[:count], shuffled[count:]
    return LinearLayout(tuple((n, tuple(bases[n])) for n, _ in layout.in_dims), layout.out_dims)


class TritonConvertLayout(Target):
    name = "triton.convert_layout"
    description = "Gluon convert_layout between random distributed linear layouts on the GPU: data and holders"
    requires = ("cuda device sm_90", "triton", "torch")

    def availability(self) -> Availability:
        return cuda_device_availability(9, ("torch", "triton"))

    def versions(self) -> Mapping[str, str]:
        out = {}
        for name in ("triton", "torch"):
            try:
                out[name] = metadata.version(name)
            except metadata.PackageNotFoundError:
                pass
        return out

    def generate(self, source: Source) -> dict[str, Any]:
        rank = source.integer(1, 3)
        total = source.integer(max(rank, 5), 12)
        shape = [1 << (b + 1) for b in split_bits(source, total - rank, rank)]
        outs = [(f"dim{i}", s) for i, s in enumerate(shape)]
        warps = source.integer(0, 3)
        a = distributed_layout(source, outs=outs, fixed_bits={"lane": 5, "warp": warps}, max_broadcast_bits=2)
        how = source.choice(("independent", "registers", "within_warps"))
        if how == "independent":
            b = distributed_layout(source, outs=outs, fixed_bits={"lane": 5, "warp": warps}, max_broadcast_bits=2)
        else:  # B moves data only inside threads, or only inside warps: 5.4's cheaper conversions
            b = _permuted(source, a, ("register",) if how == "registers" else ("register", "lane"))
        return {"shape": shape, "num_warps": 1 << warps, "elem_bits": source.choice(tuple(INT_TYPES)),
                "a": a.to_dict(), "b": b.to_dict()}

    def validate(self, case: Case) -> None:
        p = case.params
        for key in ("a", "b"):
            layout = LinearLayout.from_dict(p[key])
            if [s for _, s in layout.out_dims] != list(p["shape"]) or not layout.is_surjective():
                raise ValueError(f"layout {key} does not cover the shape {p['shape']}")

    def family(self, case: Case) -> str:
        p = case.params
        try:
            kind = conversion_plan(LinearLayout.from_dict(p["a"]), LinearLayout.from_dict(p["b"])).kind
        except Exception:
            kind = "?"
        return f"{kind}:{p.get('elem_bits', '?')}b"

    def expected(self, case: Case) -> Any:
        p = case.params
        return {
            "data_mismatches": 0,
            "holders_a": holders(LinearLayout.from_dict(p["a"]), p["shape"]),
            "holders_b": holders(LinearLayout.from_dict(p["b"]), p["shape"]),
        }

    def observed(self, case: Case) -> Any:
        import torch

        from gpu.gluon_probes import CONVERT_PROBES

        p = case.params
        shape = list(p["shape"])
        dtype = getattr(torch, INT_TYPES[p["elem_bits"]])
        numel = 1
        for s in shape:
            numel *= s
        generator = torch.Generator().manual_seed(case.index)
        info = torch.iinfo(dtype)
        src = torch.randint(info.min, info.max, (numel,), dtype=dtype, generator=generator).cuda()
        dst = torch.zeros_like(src)
        tid_a = torch.full((numel,), -1, dtype=torch.int32, device="cuda")
        tid_b = torch.full((numel,), -1, dtype=torch.int32, device="cuda")
        sizes = {f"S{i}": s for i, s in enumerate(shape)}
        kernel = CONVERT_PROBES[len(shape)]
        kernel[(1,)](src, dst, tid_a, tid_b, A=gluon_layout(LinearLayout.from_dict(p["a"]), shape),
                     B=gluon_layout(LinearLayout.from_dict(p["b"]), shape), num_warps=p["num_warps"], **sizes)
        torch.cuda.synchronize()
        return {"data_mismatches": int((dst != src).sum()), "holders_a": tid_a.cpu().tolist(), "holders_b": tid_b.cpu().tolist()}
