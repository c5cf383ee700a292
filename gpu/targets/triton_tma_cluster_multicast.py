"""Target ``triton.tma_cluster_multicast``: Gluon's multicast TMA loads over clusters of 2 and 4 CTAs into subviews, on
the GPU (kernels of any Triton compiled ahead), against the tiled-load oracle."""

from __future__ import annotations

from layoutfuzz.gpu.targets.triton_tma_cluster import TritonTmaCluster
from layoutfuzz.gpu.targets.triton_tma_multicast import multicast_missing


class TritonTmaClusterMulticast(TritonTmaCluster):
    """``triton.tma_cluster``'s kernels with a multicast load, run on the GPU: what the PTX check cannot see, the
    barriers' accounting (a CTA whose barrier expects other bytes than arrive hangs, or reads its buffer early) and the
    bytes that land. Triton 3.7.1 on: their kernels are compiled on a CPU (``layoutfuzz kernels --triton``) and run
    from the folder ``$LAYOUTFUZZ_KERNELS`` names, as the GPU machine's own Triton is 3.6.0."""

    name = "triton.tma_cluster_multicast"
    layer = "Triton's multicast TMA lowering over a cluster (ctaMask, barriers, the bytes delivered)"
    description = ("Gluon multicast TMA loads over clusters of 2 and 4 CTAs into subviews, on the GPU (kernels of any "
                   "Triton compiled ahead), vs the tiled-load oracle")
    requires = ("cuda device sm_90", "triton 3.7.1 or later, or its kernels compiled ahead")
    probe_name = "tma_multicast_probe"
    case_model = "triton.tma_cluster"  # the same cases as triton.tma_cluster, side by side

    def compile_support(self) -> str | None:
        return multicast_missing()
