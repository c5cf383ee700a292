// One wgmma per block (one warpgroup, 128 threads): the operand under test is read through the
// case's shared-memory matrix descriptor from a window whose elements hold digits of their own
// element index; the other operand is an identity, so the accumulators show which element the
// hardware fetched for every (row, column). m64nNk{8,16,32} for every N PTX allows the block's element
// type: 0 f16, 1 bf16, 2 tf32, 3 e4m3, 4 e5m2, 5 s8, 6 u8. A block is one (case, digit): one launch
// covers every digit of every case of a batch, whatever their types and N. The instructions of each N
// are generated (gpu/wgmma_shapes.py) and stand where the line `// @MMA@` is.

typedef unsigned long long u64;

struct WgmmaCase {
  u64 desc;          // the descriptor under test with its start-address field zero
  int start_offset;  // bytes from the 1024-aligned window base to the operand's start address
  int operand;       // 0: A under test (B = identity), 1: B under test (A = identity)
  int mn_major;      // imm-trans of the operand under test (16-bit types only)
  int n;             // N of the instruction (8 to 256)
  int type;          // the element type (below)
  int digit_shift;   // which digit of each element's index the window holds
  int digit_bits;
  int window_offset; // bytes from the aligned start of dynamic shared memory to the window (a multiple of 1024)
  int window;        // bytes of the window (a multiple of 1024); the identity follows it
  int out_offset;    // where in out the block writes its operand (floats)
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

// The accumulator fragment (warp w, lane l; acc[4j + r] at row 16w + l/4 + 8(r/2), col 8j + 2(l%4) + r%2) written as
// the operand it shows: o[k * extent + mn], k < kdim, mn < extent (D = A x I shows A in its first K columns, D = I x B
// B in its first K rows; the MN extent is 64 for A, N for B).
template <int N, typename T>
__device__ __forceinline__ void emit(const T (&acc)[N / 2], int operand, int kdim, float* o, int extent) {
  const int w = threadIdx.x / 32, l = threadIdx.x % 32;
#pragma unroll
  for (int j = 0; j < N / 8; ++j) {
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int row = 16 * w + l / 4 + 8 * (r / 2), col = 8 * j + 2 * (l % 4) + r % 2;
      const int k = operand == 0 ? col : row, mn = operand == 0 ? row : col;
      if (k < kdim && mn < extent) o[k * extent + mn] = static_cast<float>(acc[4 * j + r]);
    }
  }
}

// @MMA@

extern "C" __global__ void __launch_bounds__(128, 1)
wgmma_probe(const WgmmaCase* __restrict__ cases, u64 identity_desc, float* __restrict__ out) {
  extern __shared__ unsigned char raw[];
  const WgmmaCase c = cases[blockIdx.x];
  unsigned char* base = reinterpret_cast<unsigned char*>((reinterpret_cast<u64>(raw) + 1023ull) & ~1023ull) + c.window_offset;
  const int window = c.window;
  unsigned char* ident = base + window;
  const int type = c.type, digit_shift = c.digit_shift, digit_bits = c.digit_bits;
  const int eb = elem_bytes(type);

  // the window 16 bytes a store (a wide window is 222 KiB): element i holds digit (i >> shift) of its own index
  const int per_chunk = 16 / eb;
  for (int chunk = threadIdx.x; chunk < window / 16; chunk += blockDim.x) {
    unsigned words[4] = {0u, 0u, 0u, 0u};
    for (int e = 0; e < per_chunk; ++e) {
      const unsigned bits = encode(type, ((chunk * per_chunk + e) >> digit_shift) & ((1 << digit_bits) - 1));
      const int byte = e * eb;  // little-endian: the element's low byte first
      words[byte / 4] |= eb == 4 ? bits : (bits & ((1u << (8 * eb)) - 1)) << (8 * (byte % 4));
    }
    *reinterpret_cast<uint4*>(base + chunk * 16) = make_uint4(words[0], words[1], words[2], words[3]);
  }
  // identity: 64 x (32 / eb) K-major, no swizzle, LBO 128, SBO 256 (8-row x 16-byte core matrices)
  const int kdim = 32 / eb, per_unit = 16 / eb;  // K of one instruction: 32 bytes
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

  mma(c.n, type, ta, tb, da, db, c.operand, kdim, out + c.out_offset, c.operand == 0 ? 64 : c.n);
}
