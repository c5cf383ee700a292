// Does a bulk copy into a CTA's own shared memory complete an mbarrier of another CTA of its cluster (the lead CTA's,
// addressed by clearing bit 24 as Triton 3.7.1+ does)? gpu/cluster_barriers.py launches it; docs/findings.md.
extern "C" __global__ void remote_complete(const unsigned char* src, const void* tmap, unsigned* out, int remote, int tensor) {
  __shared__ alignas(128) unsigned char buf[1024];
  __shared__ alignas(8) unsigned long long bar;
  unsigned rank; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  unsigned b = (unsigned)__cvta_generic_to_shared(&bar), d = (unsigned)__cvta_generic_to_shared(buf);
  for (int i = threadIdx.x; i < 1024; i += blockDim.x) buf[i] = 0xEE;
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(b), "r"(remote ? 2 : 1));
    asm volatile("fence.mbarrier_init.release.cluster;");
  }
  asm volatile("fence.proxy.async.shared::cta;");
  asm volatile("barrier.cluster.arrive.aligned; barrier.cluster.wait.aligned;");
  unsigned target = remote ? (b & 0xFEFFFFFFu) : b;
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cluster.b64 _, [%0], %1;" :: "r"(target), "r"(1024) : "memory");
    if (tensor) {
      int x = 0, y = 8 * rank;
      asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                   :: "r"(d), "l"(tmap), "r"(x), "r"(y), "r"(target) : "memory");
    } else {
      asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                   :: "r"(d), "l"(src + rank * 1024), "r"(1024), "r"(target) : "memory");
    }
  }
  unsigned done = 0;
  if (!remote || rank == 0) {
    long long t0 = clock64();
    while (!done && clock64() - t0 < 2000000000LL) {
      asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }" : "=r"(done) : "r"(b) : "memory");
    }
  }
  asm volatile("barrier.cluster.arrive.aligned; barrier.cluster.wait.aligned;");
  if (threadIdx.x == 0) {
    unsigned same = 0; for (int i = 0; i < 1024; ++i) same += buf[i] == src[rank * 1024 + i];
    out[rank * 2] = done; out[rank * 2 + 1] = same;
  }
}
