"""What an H100 does with an mbarrier of another CTA of the cluster, replayed without Triton: the hardware fact under
Triton 3.7.1+'s multi-CTA TMA loads, which complete every CTA's copy on the lead CTA's barrier (its shared::cta address
with bit 24 cleared; CTA r's own shared addresses carry r from bit 24, ``shared_addresses``).

``barrier_completion`` runs ``gpu/kernels/cluster_barrier_completion.cu`` over a cluster of 2: each CTA copies 1 KiB
into its own shared memory (``cp.async.bulk`` or ``cp.async.bulk.tensor``) and completes the transaction on its own
barrier or on CTA 0's, then CTA 0 waits a bounded second for its barrier."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SHARED_ADDRESSES = r'''
extern "C" __global__ void shared_addresses(unsigned* out) {
  __shared__ alignas(16) unsigned long long word;
  unsigned rank; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  if (threadIdx.x == 0) out[rank] = (unsigned)__cvta_generic_to_shared(&word);
}
'''


@dataclass(frozen=True)
class Completion:
    """What one launch saw: whether CTA 0's barrier completed (within about a second), and the bytes each CTA's copy
    delivered right (of 1024)."""

    completed: bool
    bytes_right: tuple[int, int]


def barrier_completion(tensor: bool, on_lead_barrier: bool) -> Completion:
    """One launch of the kernel (module text): a tensor or plain bulk copy, completing on CTA 0's barrier or each CTA's
    own."""
    from cuda.bindings import driver
    from cuda.core import Device, LaunchConfig, launch

    from layoutfuzz.gpu.device import compile_kernel
    from layoutfuzz.gpu.tma_driver import encode_tensor_map
    from layoutfuzz.oracles.tensor_map import TiledEncoding

    device = Device()
    device.set_current()
    stream = device.create_stream()
    kernel = compile_kernel("cluster_barrier_completion.cu").get_kernel("remote_complete")
    data = (np.arange(2048) * 7 % 251).astype(np.uint8)
    src, tensor_map, out = (device.allocate(n, stream=stream) for n in (2048, 128, 16))
    words = encode_tensor_map(TiledEncoding(0, int(src.handle), (128, 16), (128,), (128, 8), (1, 1)))  # UINT8 rows of 128
    for buffer, host in ((src, data), (tensor_map, words), (out, np.full(4, 0xFFFFFFFF, np.uint32))):
        driver.cuMemcpyHtoD(int(buffer.handle), host.ctypes.data, host.nbytes)
    launch(stream, LaunchConfig(grid=2, block=128, cluster=2), kernel, src, tensor_map, out, np.int32(on_lead_barrier),
           np.int32(tensor))
    stream.sync()
    seen = np.empty(4, np.uint32)
    driver.cuMemcpyDtoH(seen.ctypes.data, int(out.handle), seen.nbytes)
    return Completion(bool(seen[0]), (int(seen[1]), int(seen[3])))


def shared_addresses(ctas: int) -> list[int]:
    """The shared::cta address of one shared variable in each CTA of a cluster of ``ctas``, rank 0 first."""
    from cuda.bindings import driver
    from cuda.core import Device, LaunchConfig, launch

    from layoutfuzz.gpu.device import compile_source

    device = Device()
    device.set_current()
    stream = device.create_stream()
    kernel = compile_source(SHARED_ADDRESSES, "shared_addresses.cu").get_kernel("shared_addresses")
    out = device.allocate(4 * ctas, stream=stream)
    launch(stream, LaunchConfig(grid=ctas, block=32, cluster=ctas), kernel, out)
    stream.sync()
    seen = np.empty(ctas, np.uint32)
    driver.cuMemcpyDtoH(seen.ctypes.data, int(out.handle), seen.nbytes)
    return [int(a) for a in seen]
