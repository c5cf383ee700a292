// One TMA tiled copy per block: the case's tensor map (in global memory) copies its box from
// coordinate (coord, ..., coord) (0 in campaigns) into shared memory at the case's destination offset from a 1024-byte aligned
// window, completing on an mbarrier; the block then dumps the whole window, raw, to global.
// Bytes the copy does not write keep the fill value, so the dump shows exactly what TMA wrote.

struct TmaCase {
  int rank;        // 1..5
  int dst_offset;  // bytes from the 1024-aligned window base (a multiple of 128)
  int tx_bytes;    // bytes the copy delivers (the mbarrier's transaction count)
  int coord;       // the box's start in every dimension (negative: partly out of bounds)
};

__device__ __forceinline__ unsigned smem_u32(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// The 1024-byte aligned start of the dynamic shared memory: every kernel's window (and dstMem's base)
__device__ __forceinline__ unsigned char* window_base(unsigned char* raw) {
  return reinterpret_cast<unsigned char*>((reinterpret_cast<unsigned long long>(raw) + 1023ull) & ~1023ull);
}

// window bytes (a 16-byte multiple) of the fill value, or of `pattern` where one is given, written by the whole block
__device__ __forceinline__ void fill_window(unsigned char* base, int window, unsigned char fill, const unsigned char* pattern = nullptr) {
  const unsigned f4 = 0x01010101u * fill;
  const uint4 fill16 = make_uint4(f4, f4, f4, f4);
  for (int i = threadIdx.x; i < window / 16; i += blockDim.x)
    reinterpret_cast<uint4*>(base)[i] = pattern ? reinterpret_cast<const uint4*>(pattern)[i] : fill16;
}

// the window, raw, to row `row` of `out`, by the whole block
__device__ __forceinline__ void dump_window(unsigned char* out, unsigned long long row, const unsigned char* base, int window) {
  uint4* dump = reinterpret_cast<uint4*>(out + row * window);
  for (int i = threadIdx.x; i < window / 16; i += blockDim.x) dump[i] = reinterpret_cast<const uint4*>(base)[i];
}

// waits for phase 0 of the mbarrier at shared address bar
__device__ __forceinline__ void mbarrier_wait(unsigned bar) {
  unsigned done = 0;
  while (!done) {
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done) : "r"(bar) : "memory");
  }
}

// waits for phase 0 of the mbarrier at shared address bar for at most `cycles` clock cycles, by the whole block: whether
// it completed (a transaction count the copy never delivers would otherwise hang the launch)
__device__ __forceinline__ bool mbarrier_wait_for(unsigned bar, long long cycles) {
  const long long start = clock64();
  unsigned done = 0;
  while (!done && clock64() - start < cycles) {
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done) : "r"(bar) : "memory");
  }
  return __syncthreads_and(done);
}

// The three forms of cp.async.bulk.tensor the kernels below issue, one switch on the rank each; c holds the box's
// start, innermost first (the unused trailing entries are ignored).
__device__ __forceinline__ void tma_load_box(unsigned dst, const unsigned long long* tmap, unsigned bar, int rank, const int* c) {
  switch (rank) {
    case 1:
      asm volatile("cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3}], [%2];"
                   ::"r"(dst), "l"(tmap), "r"(bar), "r"(c[0]) : "memory");
      break;
    case 2:
      asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
                   ::"r"(dst), "l"(tmap), "r"(bar), "r"(c[0]), "r"(c[1]) : "memory");
      break;
    case 3:
      asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];"
                   ::"r"(dst), "l"(tmap), "r"(bar), "r"(c[0]), "r"(c[1]), "r"(c[2]) : "memory");
      break;
    case 4:
      asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], [%2];"
                   ::"r"(dst), "l"(tmap), "r"(bar), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]) : "memory");
      break;
    default:
      asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6, %7}], [%2];"
                   ::"r"(dst), "l"(tmap), "r"(bar), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4]) : "memory");
      break;
  }
}

__device__ __forceinline__ void tma_load_multicast(unsigned dst, const unsigned long long* tmap, unsigned bar, int rank, const int* c,
                                                   unsigned short mask) {
  switch (rank) {
    case 1:
      asm volatile("cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%3}], [%2], %4;"
                   ::"r"(dst), "l"(tmap), "r"(bar), "r"(c[0]), "h"(mask) : "memory");
      break;
    case 2:
      asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%3, %4}], [%2], %5;"
                   ::"r"(dst), "l"(tmap), "r"(bar), "r"(c[0]), "r"(c[1]), "h"(mask) : "memory");
      break;
    case 3:
      asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%3, %4, %5}], [%2], %6;"
                   ::"r"(dst), "l"(tmap), "r"(bar), "r"(c[0]), "r"(c[1]), "r"(c[2]), "h"(mask) : "memory");
      break;
    case 4:
      asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%3, %4, %5, %6}], [%2], %7;"
                   ::"r"(dst), "l"(tmap), "r"(bar), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "h"(mask) : "memory");
      break;
    default:
      asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%3, %4, %5, %6, %7}], [%2], %8;"
                   ::"r"(dst), "l"(tmap), "r"(bar), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4]), "h"(mask) : "memory");
      break;
  }
}

// a store, waited for: its writes are complete when this returns
__device__ __forceinline__ void tma_store_box(const unsigned long long* tmap, unsigned src, int rank, const int* c) {
  switch (rank) {
    case 1:
      asm volatile("cp.async.bulk.tensor.1d.global.shared::cta.bulk_group [%0, {%2}], [%1];" ::"l"(tmap), "r"(src), "r"(c[0]) : "memory");
      break;
    case 2:
      asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];"
                   ::"l"(tmap), "r"(src), "r"(c[0]), "r"(c[1]) : "memory");
      break;
    case 3:
      asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];"
                   ::"l"(tmap), "r"(src), "r"(c[0]), "r"(c[1]), "r"(c[2]) : "memory");
      break;
    case 4:
      asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5}], [%1];"
                   ::"l"(tmap), "r"(src), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]) : "memory");
      break;
    default:
      asm volatile("cp.async.bulk.tensor.5d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5, %6}], [%1];"
                   ::"l"(tmap), "r"(src), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4]) : "memory");
      break;
  }
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

extern "C" __global__ void tma_copy(const unsigned long long* __restrict__ tensor_maps,  // 16 words per case
                                    const TmaCase* __restrict__ cases, unsigned char* __restrict__ out,
                                    int window, unsigned char fill) {
  extern __shared__ unsigned char raw[];
  __shared__ __align__(8) unsigned long long barrier;
  unsigned char* base = window_base(raw);
  const TmaCase c = cases[blockIdx.x];
  const unsigned long long* tmap = tensor_maps + 16ull * blockIdx.x;

  fill_window(base, window, fill);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_u32(&barrier)));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // the fill before the copy engine's writes
  __syncthreads();

  if (threadIdx.x == 0) {
    asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" ::"l"(tmap) : "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(&barrier)), "r"(c.tx_bytes)
                 : "memory");
    const unsigned dst = smem_u32(base + c.dst_offset);
    const unsigned bar = smem_u32(&barrier);
    const int z = c.coord;
    const int coords[5] = {z, z, z, z, z};
    tma_load_box(dst, tmap, bar, c.rank, coords);
  }
  mbarrier_wait(smem_u32(&barrier));
  __syncthreads();
  dump_window(out, blockIdx.x, base, window);
}

// One raw TMA tiled *store* (no Triton): shared memory holds a known pattern (byte i = 13 i + 1), which
// cp.async.bulk.tensor writes to the tensor map's global tensor at (c0, ..., c4); what lands in global
// memory, and where, is the hardware's answer (the granule past an unaligned bound, negative starts).
extern "C" __global__ void tma_store(const unsigned long long* __restrict__ tensor_map, int rank, int c0, int c1, int c2,
                                     int c3, int c4, int bytes) {
  extern __shared__ unsigned char raw[];
  unsigned char* base = window_base(raw);
  for (int i = threadIdx.x; i < bytes; i += blockDim.x) base[i] = static_cast<unsigned char>(13 * i + 1);
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // the pattern before the copy engine reads it
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" ::"l"(tensor_map) : "memory");
    const unsigned src = smem_u32(base);
    const int coords[5] = {c0, c1, c2, c3, c4};
    tma_store_box(tensor_map, src, rank, coords);
  }
  __syncthreads();
}

// Tiled copies over a global tensor from any start coordinates, both directions, one case per block. A load fills
// the window with the fill value, copies the box to dstMem and dumps the window; a store fills the window with
// `pattern` (the bytes the box is read from), stores the box from dstMem at the coordinates, waits for the writes,
// and dumps the window too (a store must leave it as it was). What lands in global memory, and where, is the
// hardware's answer: the guard zones around each tensor show a write past it. `complete` says, per case, whether a
// load's mbarrier completed the transaction count within `wait_cycles` (a count the copy does not deliver: 0).
struct TmaTensorCase {
  int store;       // 0: load (global to shared), 1: store (shared to global)
  int rank;        // 1..5
  int dst_offset;  // bytes from the 1024-aligned window base (a multiple of 128)
  int tx_bytes;    // bytes a load delivers (the mbarrier's transaction count: the whole box, fills included)
  int coord[5];    // the box's start, innermost first
};

extern "C" __global__ void tma_tensor_copy(const unsigned long long* __restrict__ tensor_maps,  // 16 words per case
                                           const TmaTensorCase* __restrict__ cases, const unsigned char* __restrict__ pattern,
                                           unsigned char* __restrict__ out, int* __restrict__ complete, int window,
                                           unsigned char fill, long long wait_cycles) {
  extern __shared__ unsigned char raw[];
  __shared__ __align__(8) unsigned long long barrier;
  unsigned char* base = window_base(raw);
  const TmaTensorCase c = cases[blockIdx.x];
  const unsigned long long* tmap = tensor_maps + 16ull * blockIdx.x;

  fill_window(base, window, fill, c.store ? pattern : nullptr);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_u32(&barrier)));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // the window's bytes before the copy engine's access
  __syncthreads();

  const unsigned smem = smem_u32(base + c.dst_offset);
  const unsigned bar = smem_u32(&barrier);
  if (threadIdx.x == 0) {
    asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" ::"l"(tmap) : "memory");
    if (c.store) {
      tma_store_box(tmap, smem, c.rank, c.coord);
    } else {
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(c.tx_bytes) : "memory");
      tma_load_box(smem, tmap, bar, c.rank, c.coord);
    }
  }
  const bool done = c.store ? true : mbarrier_wait_for(bar, wait_cycles);
  if (threadIdx.x == 0) complete[blockIdx.x] = done;
  __syncthreads();
  dump_window(out, blockIdx.x, base, window);
}

// A multicast load across a thread-block cluster, one cluster per case: every CTA fills its window, the CTAs in the
// case's ctaMask expect the box's bytes on their own mbarrier, the cluster synchronises (every barrier initialised),
// then the CTA of rank `issuer` issues one cp.async.bulk.tensor with .multicast::cluster; each CTA in the mask waits for
// its copy, and every CTA dumps its window (row clusterid * cluster size + rank of `out`).
struct TmaMulticastCase {
  int rank;        // 1..5 (the tensor's)
  int dst_offset;  // bytes from the 1024-aligned window base (a multiple of 128)
  int tx_bytes;    // bytes each destination CTA receives
  int mask;        // ctaMask: bit r, the CTA of %cluster_ctarank r receives the box
  int issuer;      // %cluster_ctarank of the CTA that issues the copy
  int coord[5];
};

__device__ __forceinline__ unsigned cluster_ctarank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

__device__ __forceinline__ unsigned cluster_id_x() {
  unsigned r;
  asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(r));
  return r;
}

__device__ __forceinline__ unsigned cluster_nctarank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(r));
  return r;
}

__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

extern "C" __global__ void tma_multicast_load(const unsigned long long* __restrict__ tensor_maps,  // 16 words per case
                                              const TmaMulticastCase* __restrict__ cases, unsigned char* __restrict__ out,
                                              int window, unsigned char fill) {
  extern __shared__ unsigned char raw[];
  __shared__ __align__(8) unsigned long long barrier;
  unsigned char* base = window_base(raw);
  const unsigned me = cluster_ctarank(), id = cluster_id_x();
  const TmaMulticastCase c = cases[id];
  const unsigned long long* tmap = tensor_maps + 16ull * id;
  const bool receives = (c.mask >> me) & 1;

  fill_window(base, window, fill);
  const unsigned bar = smem_u32(&barrier);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    if (receives) asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(c.tx_bytes) : "memory");
  }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  cluster_sync();  // every CTA's window and barrier are ready before any copy lands

  if (threadIdx.x == 0 && me == static_cast<unsigned>(c.issuer)) {
    const unsigned smem = smem_u32(base + c.dst_offset);
    const unsigned short mask = static_cast<unsigned short>(c.mask);
    asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" ::"l"(tmap) : "memory");
    tma_load_multicast(smem, tmap, bar, c.rank, c.coord, mask);
  }
  if (receives) mbarrier_wait(bar);
  __syncthreads();
  dump_window(out, static_cast<unsigned long long>(id) * cluster_nctarank() + me, base, window);
  cluster_sync();  // no CTA leaves while a copy may still write into another
}
