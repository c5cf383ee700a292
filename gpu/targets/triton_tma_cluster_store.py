"""``triton.tma_cluster_store``: Gluon TMA stores over a cluster of 2 or 4 CTAs (``num_ctas``) from a subview of a
multi-buffered allocation, the mirror of ``triton.tma_cluster``'s loads and drawn from its cases (one case model).

Each CTA writes its part of the block (the descriptor's CGA layout: rows, columns, or copies of the same part) into
buffer ``slot`` of ``buffers`` and TMA-stores it at ``coord``. The oracle is the tiled store of PTX 5.5.3 with the
hardware's observed store rule (``oracles.tma_copy``): an element of the block is written where it lies inside the
tensor, and along the innermost dimension the 16-byte granule that holds the bound is written whole; every other
byte of the tensor, its row padding included, keeps its value. CTAs that hold the same part store the same bytes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from layoutfuzz.generators.case import Case
from layoutfuzz.gpu.targets.gluon_kernel import KernelSpec
from layoutfuzz.gpu.targets.triton_tma_cluster import TritonTmaCluster, cta_part, probe_arguments, probe_signature
from layoutfuzz.harness.compare import Comparison
from layoutfuzz.oracles.tma_copy import store_reach

SENTINEL = 0x5A  # the tensor's bytes before the store: those it must leave alone keep them


def stored_block(case: Case) -> np.ndarray:
    """What the kernel stores: the block's elements, drawn from the case's seed and index (another stream than the
    tensor's own values)."""
    p = case.params
    info = np.iinfo(f"int{p['elem_bits']}")
    return np.random.default_rng([case.seed, case.index, 1]).integers(info.min, info.max, tuple(p["block"]),
                                                                      dtype=f"int{p['elem_bits']}", endpoint=True)


def tensor_before(case: Case) -> np.ndarray:
    """The global tensor (its rows padded to the row stride) before the store: every byte ``SENTINEL``."""
    p = case.params
    rows, columns = p["global_shape"][0], p["global_shape"][1] + p["row_pad"]
    return np.full((rows, columns * p["elem_bits"] // 8), SENTINEL, np.uint8).view(f"int{p['elem_bits']}")


class TritonTmaClusterStore(TritonTmaCluster):
    name = "triton.tma_cluster_store"
    layer = "Triton's TMA store lowering over a cluster (CTA-split NVMMA layouts, shared-memory subviews)"
    description = ("Gluon TMA stores over a cluster of 2 or 4 CTAs from a subview of a multi-buffer, on the GPU, vs the "
                   "tiled-store oracle (granule writes past the innermost bound, everything else untouched)")
    probe_name = "tma_cluster_store_probe"
    case_model = "triton.tma_cluster"  # the same cases as triton.tma_cluster, side by side

    def kernel_spec(self, case: Case) -> KernelSpec:
        from layoutfuzz.gpu import gluon_probes

        p = case.params
        layout, constexprs = probe_arguments(p)
        constexprs = {k: v for k, v in constexprs.items() if k != "BYTES"}  # a store waits on no barrier
        signature = probe_signature(p, layout)
        signature = {"out_desc": signature["in_desc"], "src": signature["out"]}
        return KernelSpec(getattr(gluon_probes, self.probe_name), signature, constexprs, p["num_warps"], 1 << len(p["splits"]))

    def expected(self, case: Case) -> Any:
        """The tensor after the store (the module's rules), and the tensor maps (a CTA's part, as for loads)."""
        p = case.params
        tensor = tensor_before(case)
        (r0, c0), (rows, columns) = p["coord"], p["block"]
        reach = store_reach(p["global_shape"][1], p["elem_bits"] // 8)  # ≤ the row stride: strides are 16-byte multiples
        r1, c1 = min(p["global_shape"][0], r0 + rows), min(reach, c0 + columns)
        tensor[r0:r1, c0:c1] = stored_block(case)[:r1 - r0, :c1 - c0]
        return {"tensor_maps": self.tensor_maps(p), "store": tensor.tobytes().hex()}

    def run(self, case: Case) -> dict[str, Any]:
        maps, tensor = self.run_probe(case, tensor=tensor_before(case), block=stored_block(case), written="tensor")
        return {"tensor_maps": maps, "store": tensor.tobytes().hex()}

    def compare_results(self, case: Case, expected: Any, observed: Any) -> Comparison:
        """The tensor map first, then the tensor element by element: block elements not written or wrong (by the CTA
        tile they belong to), or bytes written that the store must leave alone (inside the row padding or elsewhere)."""
        if observed["tensor_maps"] != expected["tensor_maps"]:
            return Comparison(False, 1, (f"tensor maps: expected {expected['tensor_maps']} got {observed['tensor_maps']}",),
                              "tensor-map", "Triton encoded another swizzle or box than a CTA's part of the NVMMA layout")
        p = case.params
        kind = f"int{p['elem_bits']}"
        columns = p["global_shape"][1] + p["row_pad"]
        want = np.frombuffer(bytes.fromhex(expected["store"]), kind).reshape(-1, columns)
        got = np.frombuffer(bytes.fromhex(observed["store"]), kind).reshape(-1, columns)
        bad = np.argwhere(want != got)
        if bad.size == 0:
            return Comparison(True)
        (r0, c0), (rows, columns_b) = p["coord"], p["block"]
        in_block = (bad[:, 0] >= r0) & (bad[:, 0] < r0 + rows) & (bad[:, 1] >= c0) & (bad[:, 1] < c0 + columns_b)
        sentinel = int.from_bytes(bytes([SENTINEL]) * (p["elem_bits"] // 8), "little", signed=True)
        kinds = []
        if in_block.any():
            untouched = got[tuple(bad[in_block].T)] == sentinel
            kinds.append("block: not written" if untouched.all() else "block: wrong data")
        if (~in_block).any():
            kinds.append("written outside the block")
        part_rows, part_columns = cta_part(p)
        tiles = sorted({((int(r) - r0) // part_rows, (int(c) - c0) // part_columns) for r, c in bad[in_block]})
        lines = tuple(f"[{int(r)}, {int(c)}]: expected {int(want[r, c])}, got {int(got[r, c])}" for r, c in bad[:8])
        return Comparison(False, len(bad), lines, "store: " + ", ".join(kinds),
                          f"{len(bad)} elements wrong; CTA tiles {tiles[:8]} (of rows x columns {part_rows} x {part_columns})")
