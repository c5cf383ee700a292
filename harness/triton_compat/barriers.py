"""The mbarrier layout of a TMA load over a cluster (``num_ctas`` > 1), which releases read differently (checked by
compiling ``gluon_probes.tma_cluster_probe`` on a CPU): 3.6.0 takes one barrier per CTA or one broadcast to all;
3.7.1 only the broadcast one ("the memdesc type has 1 elements"); 3.8.0 and 3.9.0 only one per CTA ("TMA barrier
cga_layout must be [[1], [2]]")."""

from __future__ import annotations

from layoutfuzz.harness.triton_compat import parse_version


def tma_barrier_bases(cta_bits: int) -> list[list[int]]:
    """The ``cga_layout`` of a one-element barrier over ``2 ** cta_bits`` CTAs, for the Triton this process imports."""
    import triton

    if (3, 7, 0) <= parse_version(triton.__version__) < (3, 8, 0):
        return [[0]] * cta_bits
    return [[1 << k] for k in range(cta_bits)]
