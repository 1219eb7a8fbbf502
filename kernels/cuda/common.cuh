/*
 * Prelude the CUDA backend prepends to every kernel file before NVRTC sees it (backend_cuda/module.c), so the
 * kernels share these helpers without an #include; what only some kernels share is in a file of its own that they
 * include (hopper.cuh), expanded from the embedded files (core/embedded.h): NVRTC is handed one text, no toolkit
 * headers.
 * Halves travel as unsigned short and convert through PTX, which is exact (f16 -> f32) and rounds to nearest
 * even (f32 -> f16), docs/ops.md's "round once on store".
 * bf16 travels as trr_bf16, a 2-byte struct (not unsigned short, so overloads tell it from f16): widened by a
 * shift (exact), rounded to nearest even in integer registers on store (every architecture, where cvt.rn.bf16
 * needs sm_80), a NaN kept a quiet NaN. Dtype codes in -D options follow trr_dtype: 0 f32, 1 f16, 2 bf16,
 * 4 f8e4m3, 5 f8e5m2.
 * The 8-bit floats travel as 1-byte structs (trr_f8e4m3, trr_f8e5m2) for the same reason: widened exactly, rounded
 * to nearest even in integer registers on store with docs/ops.md's saturation (core/half.c is the host's copy).
 */
typedef unsigned short trr_half;

__device__ __forceinline__ float trr_h2f(unsigned short h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

__device__ __forceinline__ unsigned short trr_f2h(float f) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

struct trr_bf16 {
    unsigned short bits;
};

__device__ __forceinline__ float trr_bf2f(unsigned short b) { return __uint_as_float((unsigned)b << 16); }

__device__ __forceinline__ unsigned short trr_f2bf(float f) {
    unsigned x = __float_as_uint(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((x >> 16) | 0x40u);
    return (unsigned short)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/* The storage type of a dtype code in a -D option (trr_dtype: 0 f32, 1 f16, 2 bf16): trr_dt<DT>::type. */
template <int D> struct trr_dt {
    typedef unsigned short type;
};
template <> struct trr_dt<0> {
    typedef float type;
};
template <> struct trr_dt<2> {
    typedef trr_bf16 type;
};

struct trr_f8e4m3 {
    unsigned char bits;
};
struct trr_f8e5m2 {
    unsigned char bits;
};
template <> struct trr_dt<4> {
    typedef trr_f8e4m3 type;
};
template <> struct trr_dt<5> {
    typedef trr_f8e5m2 type;
};

/* e4m3 -> f32, exact: S.1111.111 is NaN, every other code finite (no infinities) */
__device__ __forceinline__ float trr_e4m3_to_f32(unsigned b) {
    const unsigned sign = (b & 0x80u) << 24, e = (b >> 3) & 15u, m = b & 7u;
    if ((b & 0x7fu) == 0x7fu) return __uint_as_float(sign | 0x7fc00000u);
    if (e == 0) return __uint_as_float(sign | __float_as_uint((float)m * 0.001953125f)); /* m * 2^-9, exact */
    return __uint_as_float(sign | ((e + 120u) << 23) | (m << 20));
}

/* e5m2 -> f32, exact: the top byte of an f16 */
__device__ __forceinline__ float trr_e5m2_to_f32(unsigned b) { return trr_h2f((unsigned short)(b << 8)); }

/* The magnitude code of a finite |f| (bits ax, below infinity) in a format of mbits mantissa bits and exponent bias
 * `bias`, rounded to nearest even; past the largest finite code it goes on counting (the caller saturates). */
__device__ __forceinline__ unsigned trr_round_mag(unsigned ax, int mbits, int bias) {
    const int e = (int)(ax >> 23) - 127 + bias;
    if ((ax >> 23) == 0u || e < -(mbits + 1)) return 0u;
    const unsigned sig = (ax & 0x7fffffu) | 0x800000u;
    const int shift = 23 - mbits + (e < 1 ? 1 - e : 0);
    unsigned code = sig >> shift;
    const unsigned rem = sig & ((1u << shift) - 1u), mid = 1u << (shift - 1);
    if (e >= 1) code = ((unsigned)e << mbits) + (code & ((1u << mbits) - 1u));
    if (rem > mid || (rem == mid && (code & 1u))) code++;
    return code;
}

/* f32 -> e4m3: round to nearest even, past 448 (infinity included) 448, NaN the NaN of its sign */
__device__ __forceinline__ unsigned char trr_f2e4m3(float f) {
    const unsigned x = __float_as_uint(f), sign = (x >> 24) & 0x80u, ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return (unsigned char)(sign | 0x7fu);
    if (ax == 0x7f800000u) return (unsigned char)(sign | 0x7eu);
    return (unsigned char)(sign | min(trr_round_mag(ax, 3, 7), 0x7eu));
}

/* f32 -> e5m2: round to nearest even, finite values past 57344 saturate to it, infinities stay, NaN stays quiet */
__device__ __forceinline__ unsigned char trr_f2e5m2(float f) {
    const unsigned x = __float_as_uint(f), sign = (x >> 24) & 0x80u, ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return (unsigned char)(sign | 0x7eu | ((x >> 21) & 1u));
    if (ax == 0x7f800000u) return (unsigned char)(sign | 0x7cu);
    return (unsigned char)(sign | min(trr_round_mag(ax, 2, 15), 0x7bu));
}

__device__ __forceinline__ float trr_to_f32(float v) { return v; }
__device__ __forceinline__ float trr_to_f32(trr_bf16 v) { return trr_bf2f(v.bits); }
__device__ __forceinline__ float trr_to_f32(unsigned short v) { return trr_h2f(v); }
__device__ __forceinline__ float trr_to_f32(trr_f8e4m3 v) { return trr_e4m3_to_f32(v.bits); }
__device__ __forceinline__ float trr_to_f32(trr_f8e5m2 v) { return trr_e5m2_to_f32(v.bits); }

template <typename T> __device__ __forceinline__ T trr_from_f32(float v);
template <> __device__ __forceinline__ float trr_from_f32<float>(float v) { return v; }
template <> __device__ __forceinline__ unsigned short trr_from_f32<unsigned short>(float v) { return trr_f2h(v); }
template <> __device__ __forceinline__ trr_bf16 trr_from_f32<trr_bf16>(float v) {
    trr_bf16 r;
    r.bits = trr_f2bf(v);
    return r;
}
template <> __device__ __forceinline__ trr_f8e4m3 trr_from_f32<trr_f8e4m3>(float v) {
    trr_f8e4m3 r;
    r.bits = trr_f2e4m3(v);
    return r;
}
template <> __device__ __forceinline__ trr_f8e5m2 trr_from_f32<trr_f8e5m2>(float v) {
    trr_f8e5m2 r;
    r.bits = trr_f2e5m2(v);
    return r;
}

/* Two consecutive outputs as one 8-byte (f32) or 4-byte (f16) store; p must be aligned to the pair. */
__device__ __forceinline__ void trr_store2(float *p, float v0, float v1) {
    float2 w;
    w.x = v0;
    w.y = v1;
    *(float2 *)p = w;
}
__device__ __forceinline__ void trr_store2(unsigned short *p, float v0, float v1) {
    *(unsigned *)p = (unsigned)trr_f2h(v0) | ((unsigned)trr_f2h(v1) << 16);
}
__device__ __forceinline__ void trr_store2(trr_bf16 *p, float v0, float v1) {
#if __CUDA_ARCH__ >= 800
    /* one instruction for the pair (round to nearest even; a NaN becomes the canonical quiet NaN) */
    unsigned w;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(v1), "f"(v0));
    *(unsigned *)p = w;
#else
    *(unsigned *)p = (unsigned)trr_f2bf(v0) | ((unsigned)trr_f2bf(v1) << 16);
#endif
}

/* C[row][col] and C[row][col+1], the pair a tensor-core accumulator fragment holds, masked at the edges;
 * pair_ok says the pair is aligned for one store. */
template <typename T>
__device__ __forceinline__ void trr_store_pair(T *C, long long ldc, int row, int col, int M, int N, float v0, float v1,
                                               bool pair_ok) {
    if (row >= M) return;
    T *p = C + (long long)row * ldc + col;
    if (pair_ok && col + 1 < N) {
        trr_store2(p, v0, v1);
    } else {
        if (col < N) p[0] = trr_from_f32<T>(v0);
        if (col + 1 < N) p[1] = trr_from_f32<T>(v1);
    }
}

/* a / b by div.full.f32: 2 ulp over the whole range (subnormal results kept, b = inf gives a signed 0 or NaN as
 * IEEE division does), where the correctly rounded a / b is a Newton sequence with a slow-path branch per element
 * (NVRTC without fast math). docs/ops.md's bound for gelu and silu is 1e-5 relative, ~80 ulp. */
__device__ __forceinline__ float trr_div_full(float a, float b) {
    float q;
    asm("div.full.f32 %0, %1, %2;" : "=f"(q) : "f"(a), "f"(b));
    return q;
}

/* gelu, tanh form, evaluated as x / (1 + exp(-2u)): equal to 0.5x(1 + tanh u), without the cancellation of
 * 1 + tanh(u) for negative x (the CPU backend uses the same form). */
__device__ __forceinline__ float trr_gelu(float x) {
    float u = 0.7978845608f * (x + 0.044715f * x * x * x);
    return trr_div_full(x, 1.0f + expf(-2.0f * u));
}

/* Epilogue codes match trr_epilogue: 0 none, 1 relu, 2 leaky_relu, 3 gelu. A run-time argument: the branch is
 * uniform and runs once per output, so one compiled kernel serves every epilogue. */
__device__ __forceinline__ float trr_epilogue(float v, int epi, float alpha) {
    if (epi == 1) return v <= 0.0f ? 0.0f : v; /* a NaN stays NaN */
    if (epi == 2) return v >= 0.0f ? v : alpha * v;
    if (epi == 3) return trr_gelu(v);
    return v;
}

__device__ __forceinline__ float trr_warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float trr_warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* Block-wide reductions for blockDim.x a multiple of 32 (at most 1024); scratch holds 32 floats. Every thread
 * gets the result. The leading barrier lets callers reuse scratch back to back. */
__device__ __forceinline__ float trr_block_sum(float v, float *scratch) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    v = trr_warp_sum(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = lane < nwarps ? scratch[lane] : 0.0f;
    return trr_warp_sum(v);
}

__device__ __forceinline__ float trr_block_max(float v, float *scratch) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    v = trr_warp_max(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = lane < nwarps ? scratch[lane] : -__int_as_float(0x7f800000);
    return trr_warp_max(v);
}

/* 16-byte vector of elements of T, for the aligned fast paths of the memory-bound kernels. */
template <typename T> struct __align__(16) trr_vec16 {
    T e[16 / sizeof(T)];
};

/* Grouped block order (docs/ops.md, Grouped ordering; core/grouped.h): GROUP_M row-blocks share B's columns while they sit in L2. */
__device__ __forceinline__ void trr_grouped_block(int pid, int npm, int npn, int group_m, int *pm, int *pn) {
    int width = group_m * npn;
    int group = pid / width;
    int first_m = group * group_m;
    int gsize = npm - first_m < group_m ? npm - first_m : group_m;
    *pm = first_m + (pid % width) % gsize;
    *pn = (pid % width) / gsize;
}

/* ---- asynchronous copies into shared memory and tensor-core fragment loads (sm_80 and up) ---- */
/* The 32-bit shared-window address of a pointer into shared memory, as the instructions below take it. */
__device__ __forceinline__ unsigned trr_smem_addr(const void *p) {
    unsigned a;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
    return a;
}

/* 16 bytes from global memory to shared address dst, bypassing L1; bytes (0 to 16) are read and the rest of the
 * 16 written as zeros, so a copy straddling an edge or past it stays in bounds. */
__device__ __forceinline__ void trr_cp_async(unsigned dst, const void *src, int bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void trr_cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
/* Waits until at most n of this thread's committed groups are still in flight. */
template <int n> __device__ __forceinline__ void trr_cp_wait() {
    asm volatile("cp.async.wait_group %0;" ::"n"(n) : "memory");
}

/* Four 8 x 8 matrices of 16-bit elements from shared memory, one register each (ldmatrix; _trans transposes). */
__device__ __forceinline__ void trr_ldsm_x4(unsigned addr, unsigned *r) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
__device__ __forceinline__ void trr_ldsm_x4_trans(unsigned addr, unsigned *r) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
