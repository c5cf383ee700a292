// One wgmma per block (one warpgroup, 128 threads): the operand under test is read through the
// case's shared-memory matrix descriptor from a window whose elements hold digits of their own
// element index; the other operand is an identity, so the accumulators show which element the
// hardware fetched for every (row, column). m64nNk{8,16,32} for N = 16 or 64, for the block's element
// type: 0 f16, 1 bf16, 2 tf32, 3 e4m3, 4 e5m2, 5 s8, 6 u8. A block is one (case, digit): one launch
// covers every digit of every case of a batch, whatever their types.

typedef unsigned long long u64;

struct WgmmaCase {
  u64 desc;          // the descriptor under test with its start-address field zero
  int start_offset;  // bytes from the 1024-aligned window base to the operand's start address
  int operand;       // 0: A under test (B = identity), 1: B under test (A = identity)
  int mn_major;      // imm-trans of the operand under test (16-bit types only)
  int n;             // 16 or 64
  int type;          // the element type (below)
  int digit_shift;   // which digit of each element's index the window holds
  int digit_bits;
  int window_offset; // bytes from the aligned start of dynamic shared memory to the window (a multiple of 1024)
};

enum { F16, BF16, TF32, E4M3, E5M2, S8, U8 };

__device__ __forceinline__ unsigned smem_u32(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Bits of the small non-negative integer v (exact in the type: see DIGIT_BITS on the host).
__device__ __forceinline__ unsigned float_bits(int v, int mantissa, int bias, int exp_shift) {
  if (v == 0) return 0;
  const int e = 31 - __clz(v);
  return ((e + bias) << exp_shift) | ((v << (mantissa - e)) & ((1 << mantissa) - 1));  // e <= mantissa
}
__device__ __forceinline__ unsigned encode(int type, int v) {
  switch (type) {
    case F16: return float_bits(v, 10, 15, 10);
    case BF16: return float_bits(v, 7, 127, 7);
    case TF32: return float_bits(v, 23, 127, 23);
    case E4M3: return float_bits(v, 3, 7, 3);
    case E5M2: return float_bits(v, 2, 15, 2);
    default: return static_cast<unsigned>(v);  // s8, u8
  }
}
__device__ __forceinline__ int elem_bytes(int type) { return type <= BF16 ? 2 : type == TF32 ? 4 : 1; }
__device__ __forceinline__ void store(unsigned char* p, int type, unsigned bits) {
  const int b = elem_bytes(type);
  for (int i = 0; i < b; ++i) p[i] = static_cast<unsigned char>(bits >> (8 * i));
}

#define D8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define I8(i) "+r"(di[i]), "+r"(di[i + 1]), "+r"(di[i + 2]), "+r"(di[i + 3]), "+r"(di[i + 4]), "+r"(di[i + 5]), "+r"(di[i + 6]), "+r"(di[i + 7])
#define R8 "{%0,%1,%2,%3,%4,%5,%6,%7}"
#define R32 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}"

// 16-bit inputs take imm-trans; tf32 and fp8 do not; integers take neither scales nor trans.
#define MMA16_T(SHAPE, TYPES, TA, TB) asm volatile("{ .reg .pred p; setp.ne.b32 p, %10, 0;\n wgmma.mma_async.sync.aligned." SHAPE ".f32." TYPES " " R8 ", %8, %9, p, 1, 1, " #TA ", " #TB "; }" : D8(0) : "l"(da), "l"(db), "r"(0))
#define MMA64_T(SHAPE, TYPES, TA, TB) asm volatile("{ .reg .pred p; setp.ne.b32 p, %34, 0;\n wgmma.mma_async.sync.aligned." SHAPE ".f32." TYPES " " R32 ", %32, %33, p, 1, 1, " #TA ", " #TB "; }" : D8(0), D8(8), D8(16), D8(24) : "l"(da), "l"(db), "r"(0))
#define MMA16_N(SHAPE, TYPES) asm volatile("{ .reg .pred p; setp.ne.b32 p, %10, 0;\n wgmma.mma_async.sync.aligned." SHAPE ".f32." TYPES " " R8 ", %8, %9, p, 1, 1; }" : D8(0) : "l"(da), "l"(db), "r"(0))
#define MMA64_N(SHAPE, TYPES) asm volatile("{ .reg .pred p; setp.ne.b32 p, %34, 0;\n wgmma.mma_async.sync.aligned." SHAPE ".f32." TYPES " " R32 ", %32, %33, p, 1, 1; }" : D8(0), D8(8), D8(16), D8(24) : "l"(da), "l"(db), "r"(0))
#define MMA16_I(SHAPE, TYPES) asm volatile("{ .reg .pred p; setp.ne.b32 p, %10, 0;\n wgmma.mma_async.sync.aligned." SHAPE ".s32." TYPES " " R8 ", %8, %9, p; }" : I8(0) : "l"(da), "l"(db), "r"(0))
#define MMA64_I(SHAPE, TYPES) asm volatile("{ .reg .pred p; setp.ne.b32 p, %34, 0;\n wgmma.mma_async.sync.aligned." SHAPE ".s32." TYPES " " R32 ", %32, %33, p; }" : I8(0), I8(8), I8(16), I8(24) : "l"(da), "l"(db), "r"(0))

#define TRANS4(M, SHAPE, TYPES) \
  if (ta == 0 && tb == 0) M(SHAPE, TYPES, 0, 0); else if (ta == 1 && tb == 0) M(SHAPE, TYPES, 1, 0); \
  else if (ta == 0) M(SHAPE, TYPES, 0, 1); else M(SHAPE, TYPES, 1, 1)

extern "C" __global__ void __launch_bounds__(128, 1)
wgmma_probe(const WgmmaCase* __restrict__ cases, u64 identity_desc, float* __restrict__ out, int window) {
  extern __shared__ unsigned char raw[];
  const WgmmaCase c = cases[blockIdx.x];
  unsigned char* base = reinterpret_cast<unsigned char*>((reinterpret_cast<u64>(raw) + 1023ull) & ~1023ull) + c.window_offset;
  unsigned char* ident = base + window;
  const int type = c.type, digit_shift = c.digit_shift, digit_bits = c.digit_bits;
  const int eb = elem_bytes(type);

  for (int i = threadIdx.x; i < window / eb; i += blockDim.x) {
    store(base + i * eb, type, encode(type, (i >> digit_shift) & ((1 << digit_bits) - 1)));
  }
  // identity: 64 x (32 / eb) K-major, no swizzle, LBO 128, SBO 256 (8-row x 16-byte core matrices)
  const int kdim = 32 / eb, per_unit = 16 / eb;
  for (int i = threadIdx.x; i < 64 * kdim; i += blockDim.x) {
    const int mn = i / kdim, k = i % kdim;
    const int offset = (mn % 8) * 16 + (mn / 8) * 256 + (k / per_unit) * 128 + (k % per_unit) * eb;
    store(ident + offset, type, mn == k ? encode(type, 1) : 0u);
  }
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
  int di[32];
  for (int i = 0; i < 32; ++i) { d[i] = 0.f; di[i] = 0; }
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  if (c.n == 16) {
    switch (type) {
      case F16: TRANS4(MMA16_T, "m64n16k16", "f16.f16"); break;
      case BF16: TRANS4(MMA16_T, "m64n16k16", "bf16.bf16"); break;
      case TF32: MMA16_N("m64n16k8", "tf32.tf32"); break;
      case E4M3: MMA16_N("m64n16k32", "e4m3.e4m3"); break;
      case E5M2: MMA16_N("m64n16k32", "e5m2.e5m2"); break;
      case S8: MMA16_I("m64n16k32", "s8.s8"); break;
      default: MMA16_I("m64n16k32", "u8.u8"); break;
    }
  } else {
    switch (type) {
      case F16: TRANS4(MMA64_T, "m64n64k16", "f16.f16"); break;
      case BF16: TRANS4(MMA64_T, "m64n64k16", "bf16.bf16"); break;
      case TF32: MMA64_N("m64n64k8", "tf32.tf32"); break;
      case E4M3: MMA64_N("m64n64k32", "e4m3.e4m3"); break;
      case E5M2: MMA64_N("m64n64k32", "e5m2.e5m2"); break;
      case S8: MMA64_I("m64n64k32", "s8.s8"); break;
      default: MMA64_I("m64n64k32", "u8.u8"); break;
    }
  }
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");

  // accumulator fragment: warp w, lane l; d[4j + r] at row 16w + l/4 + 8*(r/2), col 8j + 2*(l%4) + r%2
  const bool integer = type >= S8;
  const int w = threadIdx.x / 32, l = threadIdx.x % 32;
  float* o = out + static_cast<u64>(blockIdx.x) * 64 * 64;
  for (int j = 0; j < c.n / 8; ++j) {
    for (int r = 0; r < 4; ++r) {
      const int row = 16 * w + l / 4 + 8 * (r / 2), col = 8 * j + 2 * (l % 4) + r % 2;
      o[row * 64 + col] = integer ? static_cast<float>(di[4 * j + r]) : d[4 * j + r];
    }
  }
}
