"""A TMA barrier of each CTA's own, as Triton's own tests of cluster TMA loads allocate it, on each release.

PTX (9.7.9.25.5.2) completes a non-multicast ``cp.async.bulk.tensor`` (no ``.cta_group``, sm_90) only on an mbarrier in
the destination's CTA, and a multicast one on the barrier at the same offset in each destination CTA: each CTA waits on
its own barrier. Gluon spells that barrier ``mbarrier.allocate_mbarrier()`` from 3.7.1 (one element per CTA, CGA
layout ``[[1], [2], ...]``); a one-element barrier over several CTAs is the lead CTA's, one for the whole cluster. 3.6.0
has no ``allocate_mbarrier`` and takes a one-element barrier whose CGA layout names each CTA as each CTA's own
(checked by compiling ``gluon_probes.tma_cluster_probe`` on a CPU: its PTX completes every copy on the CTA's own
barrier, ``tests/test_triton_tma_cluster.py``).

After initialising it, 3.7.x's tests publish the barrier to the cluster (``mbarrier.sync_cluster_init``) before a
multicast load; 3.8.0 removed that call and inserts the cluster barrier itself; 3.6.0 has no multicast.
"""

from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as ttgl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier


@gluon.constexpr_function
def _own_layout(num_ctas):
    """3.6.0's layout of a one-element barrier held once by each of ``num_ctas`` CTAs."""
    return mbarrier.MBarrierLayout(cga_layout=[[1 << k] for k in range(int(num_ctas).bit_length() - 1)])


@gluon.jit
def _barrier_of_each_cta_3_6():
    layout: ttgl.constexpr = _own_layout(ttgl.num_ctas())
    return ttgl.allocate_shared_memory(ttgl.int64, [1], layout)


@gluon.jit
def _nothing():
    pass


barrier_of_each_cta = getattr(mbarrier, "allocate_mbarrier", None) or _barrier_of_each_cta_3_6
publish_barrier_init = getattr(mbarrier, "sync_cluster_init", None) or _nothing
