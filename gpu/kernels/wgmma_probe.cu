// One wgmma per block (one warpgroup, 128 threads): the operand under test is read through the
// case's shared-memory matrix descriptor from a window whose f16 elements hold digits of their own
// element index; the other operand is an identity, so the f32 accumulators show which element the
// hardware fetched for every (row, column). m64nNk16, f16 inputs, N = 16 or 64.

typedef unsigned long long u64;

struct WgmmaCase {
  u64 desc;          // the descriptor under test with its start-address field zero
  int start_offset;  // bytes from the 1024-aligned window base to the operand's start address
  int operand;       // 0: A under test (B = identity), 1: B under test (A = identity)
  int mn_major;      // imm-trans of the operand under test
  int n;             // 16 or 64
};

// The f16 bit pattern of an integer 0..2047 (exact: 11 significant bits).
__device__ __forceinline__ unsigned short f16_of_int(int v) {
  if (v == 0) return 0;
  const int e = 31 - __clz(v);
  return static_cast<unsigned short>(((e + 15) << 10) | ((v << (10 - e)) & 0x3FF));
}

__device__ __forceinline__ unsigned smem_u32(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

#define WG_FENCE() asm volatile("wgmma.fence.sync.aligned;" ::: "memory")
#define WG_COMMIT_WAIT()                                              \
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");      \
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory")

#define MMA16(TA, TB)                                                                                   \
  asm volatile(                                                                                         \
      "{ .reg .pred p; setp.ne.b32 p, %10, 0;\n"                                                        \
      "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7}, %8, %9, p, 1, 1, " \
      #TA ", " #TB "; }"                                                                                \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])  \
      : "l"(da), "l"(db), "r"(0))

#define D8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define MMA64(TA, TB)                                                                                     \
  asm volatile(                                                                                           \
      "{ .reg .pred p; setp.ne.b32 p, %34, 0;\n"                                                          \
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "                                               \
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,"   \
      "%26,%27,%28,%29,%30,%31}, %32, %33, p, 1, 1, " #TA ", " #TB "; }"                                  \
      : D8(0), D8(8), D8(16), D8(24)                                                                      \
      : "l"(da), "l"(db), "r"(0))

extern "C" __global__ void __launch_bounds__(128, 1)
wgmma_probe(const WgmmaCase* __restrict__ cases, const unsigned short* __restrict__ identity,  // 2048 f16
            u64 identity_desc, float* __restrict__ out, int window, int digit_shift) {
  extern __shared__ unsigned char raw[];
  unsigned char* base = reinterpret_cast<unsigned char*>((reinterpret_cast<u64>(raw) + 1023ull) & ~1023ull);
  unsigned short* test = reinterpret_cast<unsigned short*>(base);
  unsigned short* ident = reinterpret_cast<unsigned short*>(base + window);
  const WgmmaCase c = cases[blockIdx.x];

  for (int i = threadIdx.x; i < window / 2; i += blockDim.x) {
    test[i] = f16_of_int((i >> digit_shift) & 2047);
  }
  for (int i = threadIdx.x; i < 2048; i += blockDim.x) ident[i] = identity[i];
  __syncthreads();
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();

  const u64 test_desc = c.desc | ((static_cast<u64>(smem_u32(base) + c.start_offset) & 0x3FFFF) >> 4);
  const u64 id_desc = identity_desc | ((static_cast<u64>(smem_u32(ident)) & 0x3FFFF) >> 4);
  const u64 da = c.operand == 0 ? test_desc : id_desc;
  const u64 db = c.operand == 0 ? id_desc : test_desc;
  const int ta = c.operand == 0 ? c.mn_major : 0;
  const int tb = c.operand == 0 ? 0 : c.mn_major;

  float d[32];
  for (int i = 0; i < 32; ++i) d[i] = 0.f;
  WG_FENCE();
  if (c.n == 16) {
    if (ta == 0 && tb == 0) MMA16(0, 0); else if (ta == 1 && tb == 0) MMA16(1, 0);
    else if (ta == 0) MMA16(0, 1); else MMA16(1, 1);
  } else {
    if (ta == 0 && tb == 0) MMA64(0, 0); else if (ta == 1 && tb == 0) MMA64(1, 0);
    else if (ta == 0) MMA64(0, 1); else MMA64(1, 1);
  }
  WG_COMMIT_WAIT();

  // accumulator fragment: warp w, lane l; d[4j + r] at row 16w + l/4 + 8*(r/2), col 8j + 2*(l%4) + r%2
  const int w = threadIdx.x / 32, l = threadIdx.x % 32;
  float* o = out + static_cast<u64>(blockIdx.x) * 64 * 64;
  for (int j = 0; j < c.n / 8; ++j) {
    for (int r = 0; r < 4; ++r) {
      const int row = 16 * w + l / 4 + 8 * (r / 2), col = 8 * j + 2 * (l % 4) + r % 2;
      o[row * 64 + col] = d[4 * j + r];
    }
  }
}
