/* Shared by every Trireme OpenCL program (prepended by the host). OpenCL C 1.2.
 * Operand dtypes arrive as -DX_DT, -DY_DT, -DZ_DT: 0 f32, 1 f16, 2 bf16, 3 u8, 4 f8e4m3, 5 f8e5m2. Halves are storage only (NVIDIA
 * and PoCL lack cl_khr_fp16): loaded with vload_half, computed in f32, stored once with round-to-nearest-even.
 * bf16 is held as ushort (OpenCL C has no bfloat16 type): widened by a shift, rounded to nearest even on store
 * in integer registers. */

/* Results must not depend on whether the compiler fuses a*b+c; kernels that want fma() say so. */
#pragma OPENCL FP_CONTRACT OFF

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

#define DT_F32 0
#define DT_F16 1
#define DT_BF16 2
#define DT_U8 3
#define DT_F8E4M3 4
#define DT_F8E5M2 5

/* f32 bits (uint or uintN) -> bf16 bits, round to nearest even on the 16 dropped bits (a carry bumps the
 * exponent, up to inf); a NaN keeps its sign and top payload with the quiet bit set, so it cannot truncate to
 * an infinity. select() takes scalar and vector conditions alike. */
#define BF16_BITS_RNE(b) select(((b) + 0x7fffu + (((b) >> 16) & 1u)) >> 16, ((b) >> 16) | 0x40u, ((b) & 0x7fffffffu) > 0x7f800000u)
inline ushort trr_f2bf(float v) {
    uint b = as_uint(v);
    return (ushort)BF16_BITS_RNE(b);
}

/* The OCP 8-bit floats (docs/ops.md, Element types), held as uchar: OpenCL C 1.2 has no such type, so they are
 * converted bit by bit in integer registers, as core/half.c does on the host: widened exactly; rounded to nearest
 * even on store, finite values past the largest finite one saturating to it (e4m3 448, e5m2 57344), an infinity
 * saturating in e4m3 (which has none) and staying one in e5m2, NaN staying NaN with its sign. */
/* f16 bits -> f32 in integer registers (subnormals kept whatever the device's denormal mode) */
inline float trr_h16_to_f32(uint h) {
    const uint sign = (h & 0x8000u) << 16, e = (h >> 10) & 31u, m = h & 0x3ffu;
    if (e == 31u) return as_float(sign | 0x7f800000u | (m << 13));
    if (e == 0u) {
        if (m == 0u) return as_float(sign);
        const uint p = 31u - clz(m);
        return as_float(sign | ((p + 103u) << 23) | ((m << (23u - p)) & 0x7fffffu));
    }
    return as_float(sign | ((e + 112u) << 23) | (m << 13));
}
/* Four 16-bit patterns from their low bytes l and high bytes h (byte i of each for pattern i), in memory order:
 * .x holds patterns 0 and 1, .y 2 and 3, the lower-numbered in the low half. The programs with inline PTX (those
 * that define ADDR_MODE, below) say it as one byte permute a word, which the compiler does not find in the shifts. */
inline uint2 trr_bytes_to_h16x4(uint l, uint h) {
#ifdef ADDR_MODE
    uint x, y;
    asm("prmt.b32 %0, %1, %2, 0x5140;" : "=r"(x) : "r"(l), "r"(h));
    asm("prmt.b32 %0, %1, %2, 0x7362;" : "=r"(y) : "r"(l), "r"(h));
    return (uint2)(x, y);
#else
    return (uint2)((l & 0xffu) | (h & 0xffu) << 8 | (l & 0xff00u) << 8 | (h & 0xff00u) << 16,
                   (l >> 16 & 0xffu) | (h >> 8 & 0xff00u) | (l >> 8 & 0xff0000u) | (h & 0xff000000u));
#endif
}
/* Four 8-bit floats (w, the first in the low byte) as f16 bit patterns, by byte-wise integer operations on all
 * four at once, without a branch (matmul_mma.cl widens its tiles with these; trr_e4m3_to_f32 reads single values
 * through the same code). e5m2 is the top byte of an f16, value for value. e4m3 comes out as its value times 2^-8
 * (TRR_E4M3_H16_SCALE undoes it): s.eeee.mmm becomes s.0eeee.mmm0000000, its bits moved down one place, since
 * f16's exponent bias is 8 more than e4m3's; e4m3's subnormals (e = 0) land on f16's subnormals, exact with no
 * renormalising. A NaN (s.1111.111, which would read as 1.875) comes out as s.11111.1110000000. Every e4m3 value
 * is exact in f16 either way: e4m3 keeps 3 mantissa bits and spans 2^-9 .. 448. */
#define TRR_E4M3_H16_SCALE 256.0f
inline uint2 trr_e5m2x4_to_h16(uint w) { return trr_bytes_to_h16x4(0u, w); }
inline uint2 trr_e4m3x4_to_h16(uint w) {
    const uint mag = w & 0x7f7f7f7fu;
    /* bit 7 of a byte whose magnitude is all ones (NaN) set: shifted down it fills the f16 exponent */
    const uint m = mag | ((mag + 0x01010101u) & 0x80808080u);
    return trr_bytes_to_h16x4(w << 7 & 0x80808080u, (w & 0x80808080u) | (m >> 1 & 0x7f7f7f7fu));
}
/* The NaN as the canonical quiet one with b's sign, as core/half.c gives it (so that a cast is bit-exact across
 * backends); every other value exact. */
inline float trr_e4m3_to_f32(uint b) {
    if ((b & 0x7fu) == 0x7fu) return as_float((b & 0x80u) << 24 | 0x7fc00000u);
    return trr_h16_to_f32(trr_e4m3x4_to_h16(b).x) * TRR_E4M3_H16_SCALE;
}
inline float trr_e5m2_to_f32(uint b) { return trr_h16_to_f32(b << 8); } /* the top byte of an f16 */
/* The magnitude code of a finite |f| (bits ax) with mbits mantissa bits and exponent bias `bias`, rounded to nearest
 * even; past the largest finite code it goes on counting (the caller saturates). */
inline uint trr_round_mag(uint ax, int mbits, int bias) {
    const int e = (int)(ax >> 23) - 127 + bias;
    if ((ax >> 23) == 0u || e < -(mbits + 1)) return 0u;
    const uint sig = (ax & 0x7fffffu) | 0x800000u;
    const int shift = 23 - mbits + (e < 1 ? 1 - e : 0);
    uint code = sig >> shift;
    const uint rem = sig & ((1u << shift) - 1u), mid = 1u << (shift - 1);
    if (e >= 1) code = ((uint)e << mbits) + (code & ((1u << mbits) - 1u));
    if (rem > mid || (rem == mid && (code & 1u))) code++;
    return code;
}
inline uchar trr_f2e4m3(float f) {
    const uint x = as_uint(f), sign = (x >> 24) & 0x80u, ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return (uchar)(sign | 0x7fu);
    if (ax == 0x7f800000u) return (uchar)(sign | 0x7eu);
    return (uchar)(sign | min(trr_round_mag(ax, 3, 7), 0x7eu));
}
inline uchar trr_f2e5m2(float f) {
    const uint x = as_uint(f), sign = (x >> 24) & 0x80u, ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return (uchar)(sign | 0x7eu | ((x >> 21) & 1u));
    if (ax == 0x7f800000u) return (uchar)(sign | 0x7cu);
    return (uchar)(sign | min(trr_round_mag(ax, 2, 15), 0x7bu));
}

/* Aligned vectors of n halves as floats, moved as one ushortN access: NVIDIA's compiler splits vloada_halfN and
 * vstorea_halfN into 2-byte accesses (a quarter of the width a row kernel's 16-byte loads have), so the bits
 * travel as ushortN and convert in private memory, which the compilers keep in registers. */
#define TRR_HALF_VECTOR(n)                                                                                      \
    inline CAT(float, n) CAT(trr_vloada_half, n)(__global const half *p) {                                    \
        CAT(ushort, n) u = *(__global const CAT(ushort, n) *)p;                                               \
        return CAT(vload_half, n)(0, (const __private half *)&u);                                             \
    }                                                                                                          \
    inline void CAT(CAT(trr_vstorea_half, n), _rte)(CAT(float, n) v, __global half *p) {                      \
        CAT(ushort, n) u;                                                                                      \
        CAT(CAT(vstore_half, n), _rte)(v, 0, (__private half *)&u);                                           \
        *(__global CAT(ushort, n) *)p = u;                                                                     \
    }
TRR_HALF_VECTOR(2)
TRR_HALF_VECTOR(4)
TRR_HALF_VECTOR(8)

/* Scalar load/store of one element as float, by operand dtype. */
#define LOAD_DT_0(p, i) ((p)[i])
#define LOAD_DT_1(p, i) vload_half((i), (p))
#define LOAD_DT_2(p, i) as_float((uint)(p)[i] << 16)
#define LOAD_DT_3(p, i) convert_float((p)[i])
#define STORE_DT_0(v, p, i) ((p)[i] = (v))
#define STORE_DT_1(v, p, i) vstore_half_rte((v), (i), (p))
#define STORE_DT_2(v, p, i) ((p)[i] = trr_f2bf(v))
#define STORE_DT_3(v, p, i) ((p)[i] = convert_uchar_sat_rte(v))
#define LOAD_DT_4(p, i) trr_e4m3_to_f32((p)[i])
#define LOAD_DT_5(p, i) trr_e5m2_to_f32((p)[i])
#define STORE_DT_4(v, p, i) ((p)[i] = trr_f2e4m3(v))
#define STORE_DT_5(v, p, i) ((p)[i] = trr_f2e5m2(v))
#define TYPE_DT_0 float
#define TYPE_DT_1 half
#define TYPE_DT_2 ushort
#define TYPE_DT_3 uchar
#define TYPE_DT_4 uchar
#define TYPE_DT_5 uchar

/* The same where the dtype is a run-time argument dt (f32, f16 or bf16) of a kernel that takes byte pointers, so
 * that one program serves every dtype (attention.cl, attention_decode.cl: PoCL compiles each program once). */
inline float trr_load_dt(__global const uchar *p, long i, int dt) {
    if (dt == DT_F32) return ((__global const float *)p)[i];
    if (dt == DT_F16) return vload_half(i, (__global const half *)p);
    return as_float((uint)((__global const ushort *)p)[i] << 16);
}

inline void trr_store_dt(__global uchar *p, long i, int dt, float v) {
    if (dt == DT_F32) ((__global float *)p)[i] = v;
    else if (dt == DT_F16) vstore_half_rte(v, i, (__global half *)p);
    else ((__global ushort *)p)[i] = trr_f2bf(v);
}

/* attention's output of row (b, h, i), column d, from the row's weighted sum of v there, its weights' sum l and
 * their maximum m2 (base 2): mode 0 o = sum / l rounded to the dtype (0 for a row that saw no key) and, once a
 * row, lse = (m2 + log2 l)·ln 2 (-inf without keys); mode 1 the split's o and log2-sum into the f32 scratch that
 * attention_combine merges, split `split` of nsplit, rows counted over the grid's batch. */
#define TRR_LN2 0.69314718055994530942f
inline void trr_attention_emit(__global uchar *o, __global float *lse, __global float *part, __global float *part_lse,
                               long oo, long ob, long oh, long os, long lo, long lb, long lh, long ls, int dt,
                               int has_lse, int mode, int Hq, int Sq, int D, int nsplit, int split, int b, int h,
                               int i, int d, float sum, float l, float m2) {
    const float res = l > 0.0f ? sum / l : 0.0f;
    const float lse2 = l > 0.0f ? m2 + log2(l) : -INFINITY;
    if (mode == 0) {
        trr_store_dt(o, oo + b * ob + h * oh + (long)i * os + d, dt, res);
        if (has_lse && d == 0) lse[lo + b * lb + h * lh + (long)i * ls] = l > 0.0f ? lse2 * TRR_LN2 : -INFINITY;
    } else {
        const long row = ((long)b * Hq + h) * Sq + i, rows = (long)get_num_groups(2) / nsplit * Hq * Sq;
        part[((long)split * rows + row) * D + d] = res;
        if (d == 0) part_lse[(long)split * rows + row] = lse2;
    }
}

#ifdef X_DT
typedef CAT(TYPE_DT_, X_DT) x_t;
#define LOAD_X(p, i) CAT(LOAD_DT_, X_DT)(p, i)
#endif
#ifdef Y_DT
typedef CAT(TYPE_DT_, Y_DT) y_t;
#define LOAD_Y(p, i) CAT(LOAD_DT_, Y_DT)(p, i)
#endif
#ifdef Z_DT
typedef CAT(TYPE_DT_, Z_DT) z_t;
#define STORE_Z(v, p, i) CAT(STORE_DT_, Z_DT)(v, p, i)
#endif

/* The output tile (pm, pn) of program pid in grouped order (docs/ops.md, Grouped ordering; core/grouped.h is the host copy): group_m
 * tile rows are walked down before moving right, so neighbouring programs share panels of A and B in cache. */
inline void trr_grouped_block(int pid, int npm, int npn, int group_m, int *pm, int *pn) {
    int width = group_m * npn;
    int first_m = (pid / width) * group_m;
    int gsize = min(npm - first_m, group_m);
    *pm = first_m + (pid % width) % gsize;
    *pn = (pid % width) / gsize;
}

/* docs/ops.md's tanh form of gelu, 0.5·x·(1 + tanh(u)), rewritten as x·sigmoid(2u): the same function, but without the
 * cancellation in 1 + tanh(u) for negative x that costs the tanh form its relative accuracy below x ≈ -3. */
#define GELU_C0 0.7978845608f
#define GELU_C1 0.044715f
#define GELU(x) ((x) / (1.0f + exp(-2.0f * (GELU_C0 * ((x) + GELU_C1 * (x) * (x) * (x))))))

/* The tensor-core matmuls' epilogue kinds (epi: 1 relu, 2 leaky_relu with slope alpha, 3 gelu), each applied
 * to every accumulator by PASS(F) as one straight pass (matmul_mma.cl says why). */
#define EPI_RELU(v) ((v) <= 0.0f ? 0.0f : (v)) /* a NaN stays NaN */
#define EPI_LEAKY(v) ((v) >= 0.0f ? (v) : alpha * (v))
#define EPI_APPLY(PASS)                                                                                        \
    do {                                                                                                       \
        if (epi == 1)                                                                                          \
            PASS(EPI_RELU);                                                                                    \
        else if (epi == 2)                                                                                     \
            PASS(EPI_LEAKY);                                                                                   \
        else if (epi == 3)                                                                                     \
            PASS(GELU);                                                                                        \
    } while (0)

/* ---- NVIDIA tensor cores through inline PTX: the instruction forms matmul_mma.cl and attention_mma.cl share.
 * Only their programs define ADDR_MODE (how a __local pointer becomes a shared-window address: 0 a cast, 1
 * cvta.to.shared; backend_opencl/mma_probe.c finds which computes right), and only NVIDIA's compiler takes
 * them. */
#ifdef ADDR_MODE
#if defined(X_DT) && X_DT == DT_BF16
#define MMA_OP "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
#else
#define MMA_OP "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
#endif

#if ADDR_MODE == 1
static inline uint smem_addr(__local const void *p) {
    ulong s;
    asm volatile("cvta.to.shared.u64 %0, %1;" : "=l"(s) : "l"((ulong)p));
    return (uint)s;
}
#else
static inline uint smem_addr(__local const void *p) { return (uint)(ulong)p; }
#endif

/* four 8x8 b16 matrices; lane l gives the row address of matrix l / 8, row l % 8 */
#define LDSM_X4(r, addr)                                                                                       \
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"                             \
                 : "=r"((r)[0]), "=r"((r)[1]), "=r"((r)[2]), "=r"((r)[3])                                      \
                 : "r"(addr))
#define LDSM_X4_T(r, addr)                                                                                     \
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"                       \
                 : "=r"((r)[0]), "=r"((r)[1]), "=r"((r)[2]), "=r"((r)[3])                                      \
                 : "r"(addr))
/* d (4 f32) += a (16x16, 4 regs) · b (16x8, 2 regs) */
#define MMA(d, a, b0, b1)                                                                                      \
    asm volatile(MMA_OP " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"                             \
                 : "+f"((d)[0]), "+f"((d)[1]), "+f"((d)[2]), "+f"((d)[3])                                      \
                 : "r"((a)[0]), "r"((a)[1]), "r"((a)[2]), "r"((a)[3]), "r"(b0), "r"(b1))

/* cp.async groups (CP_ASYNC: the probe found cp.async works; without it the copies are done when issued), and
 * CP_ASYNC16, one 16-byte chunk from global src to shared-window address dst: its first n bytes read, the rest
 * zero-filled (n 0 to 16) */
#if CP_ASYNC
#define CP_ASYNC16(dst, src, n)                                                                                \
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(n) : "memory")
#define CP_COMMIT() asm volatile("cp.async.commit_group;" ::: "memory")
#define CP_WAIT(n) asm volatile("cp.async.wait_group %0;" ::"n"(n) : "memory")
#else
#define CP_COMMIT()
#define CP_WAIT(n)
#endif

/* Two values rounded to nearest even by one conversion instruction, v0 in the low half: into attention's 16-bit
 * inputs' type (its programs define HEAD_DIM), else matmul's 16-bit output type. A NaN comes out as the canonical
 * quiet NaN. */
#ifdef HEAD_DIM
#define PAIR_DT X_DT
#elif defined(Z_DT)
#define PAIR_DT Z_DT
#endif
#if defined(PAIR_DT) && PAIR_DT != DT_F32
#if PAIR_DT == DT_BF16
#define CVT_PAIR "cvt.rn.bf16x2.f32 %0, %1, %2;"
#else
#define CVT_PAIR "cvt.rn.f16x2.f32 %0, %1, %2;"
#endif
static inline uint pack_pair(float v0, float v1) {
    uint w;
    asm volatile(CVT_PAIR : "=r"(w) : "f"(v1), "f"(v0));
    return w;
}
#endif
#endif

/* ---- attention's tensor-core kernels (attention_mma.cl, attention_decode_mma.cl; their programs alone define
 * HEAD_DIM with ADDR_MODE): P's pairs split in two parts and the quad shuffles of the online softmax. */
#if defined(ADDR_MODE) && defined(HEAD_DIM)
/* the two weights of a packed pair back in f32 (exact: bf16 is f32's top half; f16 through cvt) */
static inline float2 unpack_pair(uint w) {
#if X_DT == DT_BF16
    return (float2)(as_float(w << 16), as_float(w & 0xffff0000u));
#else
    float a, b;
    asm("{ .reg .b16 l, h; mov.b32 {l, h}, %2; cvt.f32.f16 %0, l; cvt.f32.f16 %1, h; }"
        : "=f"(a), "=f"(b) : "r"(w));
    return (float2)(a, b);
#endif
}

/* P's A fragment as two 16-bit parts: hi the weights rounded once, lo what that rounding left (rounded in turn),
 * so P·V = hi·V + lo·V keeps ~22 (f16) or ~16 (bf16) bits of each weight. One rounding puts 2^-12 (f16) or 2^-9
 * (bf16) of each weight into o, which elements of o that cancel to near zero cannot absorb within docs/ops.md's
 * element bound for half outputs (the CUDA kernels split the weights the same way). */
static inline uint pack_lo(float v0, float v1, uint hi) {
    const float2 h = unpack_pair(hi);
    return pack_pair(v0 - h.x, v1 - h.y);
}

/* v from the lane whose index differs from this one's by the bits of m (all 32 lanes take part) */
static inline float shfl_xor(float v, int m) {
    uint r;
    asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 31, 0xffffffff;" : "=r"(r) : "r"(as_uint(v)), "r"(m));
    return as_float(r);
}

static inline float quad_max(float v) {
    v = fmax(v, shfl_xor(v, 1));
    return fmax(v, shfl_xor(v, 2));
}

static inline float quad_sum(float v) {
    v += shfl_xor(v, 1);
    return v + shfl_xor(v, 2);
}
#endif
