#version 450
// f16 matmul on cooperative matrices (VK_KHR_cooperative_matrix in the TM x TN x TK subgroup shape the host
// picked from the device's list, or VK_NV_cooperative_matrix at 16x16x16; f32 accumulation), and with -DX_BF16
// the bf16 one (KHR only, bf16 component type of VK_KHR_shader_bfloat16; GL_EXT_bfloat16 needs a glslang newer
// than 13, Slang's): one workgroup per BM x BN tile in grouped order; WM x WN subgroups of SG invocations each
// own a (BM/WM) x (BN/WN) patch of TM x TN accumulators. A and B slices of depth BK are staged in shared memory as 16-byte
// words (8 halves), in the operand's own memory layout (a transposed operand is loaded column-major by the matrix
// loads, so every layout copies whole words), double-buffered, one barrier per slice; slices come from global
// memory through registers, read one or two steps ahead (PREFETCH). With -DX_F8 the inputs are 8-bit floats (A
// and B each e4m3 or e5m2 as A_E5M2 and B_E5M2 say), read as 8-byte words, kept raw in registers and widened to
// f16 words (exactly) only as they are staged, so the f16 matrices multiply them.
// Edges are zero-filled. The epilogue runs on the accumulators; whole TM x TN tiles are stored straight to
// global memory when the output is aligned (pc.pad bit 2), the others through a per-subgroup shared scratch.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#if defined(COOP_KHR)
#extension GL_KHR_cooperative_matrix : require
#else
#extension GL_NV_cooperative_matrix : require
#endif
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require
#if defined(X_BF16)
#if !defined(COOP_KHR)
#error "the bf16 build is on VK_KHR_cooperative_matrix only"
#endif
#extension GL_EXT_bfloat16 : require
#define ET bfloat16_t // the matrices' element type; the buffers hold bf16 as uint16_t (common.glsl)
#elif defined(X_F8)
#define X_U8 // common.glsl: the bytes through 8-bit storage
#define ET float16_t
#else
#define X_F16
#define ET float16_t
#endif
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint BM = 128;
layout(constant_id = 2) const uint BN = 128;
layout(constant_id = 3) const uint BK = 32;
layout(constant_id = 4) const uint WM = 2; // subgroups along M
layout(constant_id = 5) const uint GROUP_M = 8;
layout(constant_id = 6) const uint TRANS_A = 0;
layout(constant_id = 7) const uint TRANS_B = 0;
layout(constant_id = 8) const uint EPI = 0;
// 1: read slice k+1 while multiplying slice k; 2: multiply k, stage k+1, then read k+2; 3: 2 unrolled by two;
// 4, 5, 6: two groups of 1, 2, 4 producer subgroups past the ones that multiply take turns reading and staging
// the slices (the host adds their invocations to the workgroup): two slices in flight in the producers'
// registers, two in shared memory; 7: 2 with the fragments pipelined across k steps (PIPE_STEP).
layout(constant_id = 9) const uint PREFETCH = 1;
// Long K: every FOLD slices the accumulators are added into a second set with ordinary f32 adds and restarted.
// One cooperative-matrix accumulation over a very long K drifts (f16 -> f32 at K = 131075: an order of magnitude
// past the 1e-5 bound, growing with K); short accumulations summed in f32 do not. 0: never.
layout(constant_id = 10) const uint FOLD = 0;
// The cooperative-matrix shape (8, 16 or 32 each; 16 on the NV extension) and the subgroup size the host
// found (the device's subgroupSize: SPIR-V before 1.6 runs with it unless the pipeline allows varying sizes).
layout(constant_id = 11) const uint TM = 16;
layout(constant_id = 12) const uint TN = 16;
layout(constant_id = 13) const uint TK = 16;
layout(constant_id = 14) const uint SG = 32;

const uint WG = gl_WorkGroupSize.x;
const bool PRODUCERS = PREFETCH >= 4u && PREFETCH <= 6u;
const uint NP = PRODUCERS ? 2u : 0u; // producer groups
const uint PQ = PRODUCERS ? 1u << (PREFETCH - 4u) : 1u; // subgroups per producer group
const uint NSG = WG / SG - NP * PQ; // subgroups that multiply
const uint WN = NSG / WM;
const uint WTM = BM / WM / TM; // accumulator tiles per subgroup along M
const uint WTN = BN / WN / TN;
const uint SCRATCH = TM * TN / 4u; // words of one subgroup's epilogue scratch (an f32 accumulator tile)
// Staged tiles in 16-byte words; each row is padded by one word to spread the banks of the matrix loads.
// A: [BM][BK] (row-major) or, transposed, [BK][BM]; B: [BK][BN] or, transposed, [BN][BK].
const uint A_LD = (TRANS_A == 0u ? BK : BM) / 8u + 1u;
const uint A_ROWS = TRANS_A == 0u ? BM : BK;
const uint B_LD = (TRANS_B == 0u ? BN : BK) / 8u + 1u;
const uint B_ROWS = TRANS_B == 0u ? BK : BN;
const uint A_SZ = A_ROWS * A_LD;
const uint B_SZ = B_ROWS * B_LD;
const uint A_WORDS = BM * BK / 8u; // words per slice
const uint B_WORDS = BN * BK / 8u;
// Threads that share the reads of one slice: the workgroup, or with producers one producer group (WS), a thread
// reading words t_w, t_w + WS, ... (A_PER of A, B_PER of B).
const uint WS = NP != 0u ? PQ * SG : WG;
const uint A_PER = (A_WORDS + WS - 1u) / WS;
const uint B_PER = (B_WORDS + WS - 1u) / WS;
// 16-byte words left unused ahead of the tiles. NVIDIA's drivers put bytes of their own at the start of a
// workgroup's shared memory (OpenCL: 16), so the first array does not start on a 128-byte line; the host picks
// the words that move the tiles onto one (vk_ops.c). Both operands live in this one array so that the offset
// places them all: A's two buffers (also the epilogue scratch, SCRATCH words per subgroup), then B's two.
layout(constant_id = 15) const uint SOFF = 0;
#if defined(X_F8)
layout(constant_id = 16) const uint A_E5M2 = 0; // 0 e4m3, 1 e5m2
layout(constant_id = 17) const uint B_E5M2 = 0;
#endif
const uint A_AT = SOFF;
const uint B_AT = SOFF + 2u * A_SZ;
shared uvec4 S[SOFF + 2u * A_SZ + 2u * B_SZ];

// The same bindings seen as 16-byte words (pc.pad bit 0: A's words are whole, bit 1: B's).
layout(std430, set = 0, binding = 0) readonly buffer BufX4 { uvec4 x4[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufY4 { uvec4 y4[]; };
#if defined(X_F8)
// 8-bit floats as 8-byte words: eight elements, one staged word once widened. RAW is a word as read.
layout(std430, set = 0, binding = 0) readonly buffer BufX2 { uvec2 x2[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufY2 { uvec2 y2[]; };
#define RAW uvec2
#define XW x2
#define YW y2
#else
#define RAW uvec4
#define XW x4
#define YW y4
#endif
#if defined(Z_BF16)
// bf16 output as 16-byte words for the direct matrix store (pc.pad bit 2: offset and stride are whole words);
// a bfloat16 matrix cannot be stored into common.glsl's uint16_t z.
layout(std430, set = 0, binding = 2) writeonly buffer BufZ4 { uvec4 z4[]; };
#endif

// The same kernel on either extension (COOP_KHR: VK_KHR_cooperative_matrix, which needs glslang 13 or later;
// else VK_NV_cooperative_matrix). KHR types say which operand they are; col is a literal true or false.
#if defined(COOP_KHR)
#define ACC coopmat<float, gl_ScopeSubgroup, TM, TN, gl_MatrixUseAccumulator>
#define HACC coopmat<ET, gl_ScopeSubgroup, TM, TN, gl_MatrixUseAccumulator>
#define AMAT coopmat<ET, gl_ScopeSubgroup, TM, TK, gl_MatrixUseA>
#define BMAT coopmat<ET, gl_ScopeSubgroup, TK, TN, gl_MatrixUseB>
#define LAYOUT(col) ((col) ? gl_CooperativeMatrixLayoutColumnMajor : gl_CooperativeMatrixLayoutRowMajor)
#define MAT_LOAD(m, buf, off, ld, col) coopMatLoad(m, buf, off, ld, LAYOUT(col))
#define MAT_STORE(m, buf, off, ld, col) coopMatStore(m, buf, off, ld, LAYOUT(col))
#define MAT_MAD(a, b, c) coopMatMulAdd(a, b, c)
#else
#define ACC fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>
#define HACC fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define AMAT HACC
#define BMAT HACC
#define MAT_LOAD(m, buf, off, ld, col) coopMatLoadNV(m, buf, off, ld, col)
#define MAT_STORE(m, buf, off, ld, col) coopMatStoreNV(m, buf, off, ld, col)
#define MAT_MAD(a, b, c) coopMatMulAddNV(a, b, c)
#endif

#if defined(X_F8)
// Two bytes (the low byte of each 16-bit half of t) as two f16 in the same halves. An e5m2 byte is the top byte of
// an f16. An e4m3 byte's seven low bits moved up by 7 are the f16 of its value times 2^-8 (the exponent's bias is
// 15 instead of 7; subnormals alike): exact, down to the smallest, 2^-9 * 2^-8 = 2^-17, an f16 subnormal. The
// sums so carry 2^-8 per e4m3 operand, which F8_UNIT takes back, exactly, before the scale. The NaN byte
// S.1111.111 gets an f16 NaN (0x7e00 added to its 0x3f80).
uint f8x2_to_f16x2(uint t, uint e5m2) {
    if (e5m2 != 0u) return t << 8;
    uint mag = t & 0x007f007fu;
    uint nan = ((mag + 0x00010001u) & 0x00800080u) * 0xfcu;
    return (mag << 7) | ((t & 0x00800080u) << 8) | nan;
}
// An 8-byte word (element 0 the lowest byte) as the 16-byte word of its eight f16.
uvec4 widen(uvec2 w, uint e5m2) {
    return uvec4(f8x2_to_f16x2((w.x & 0xffu) | ((w.x & 0xff00u) << 8), e5m2),
                 f8x2_to_f16x2(((w.x >> 16) & 0xffu) | ((w.x >> 8) & 0xff0000u), e5m2),
                 f8x2_to_f16x2((w.y & 0xffu) | ((w.y & 0xff00u) << 8), e5m2),
                 f8x2_to_f16x2(((w.y >> 16) & 0xffu) | ((w.y >> 8) & 0xff0000u), e5m2));
}
#define WIDEN_A(w) widen(w, A_E5M2)
#define WIDEN_B(w) widen(w, B_E5M2)
#define F8_UNIT ((A_E5M2 != 0u ? 1.0 : 256.0) * (B_E5M2 != 0u ? 1.0 : 256.0))
const bool SCALED = true; // every output goes through act: F8_UNIT and the scales
#else
#define WIDEN_A(w) (w)
#define WIDEN_B(w) (w)
const bool SCALED = false;
#endif

float act(float v) {
#if defined(X_F8)
    v = v * F8_UNIT * uintBitsToFloat(pc.aux); // scale_a * scale_b (the host's f32 product)
#endif
    if (EPI == 1u) return v <= 0.0 ? 0.0 : v; // a NaN stays NaN (max(NaN, 0) is undefined)
    if (EPI == 2u) return v >= 0.0 ? v : pc.alpha * v;
    if (EPI == 3u) return trr_gelu(v);
    return v;
}

uint M, N, K, m0, n0, t_id, t_w;

// The 8 halves of a word from buf[base + q] while (row < rows && col + q < cols), zeros past the matrix.
#if defined(X_BF16)
#define ELEMS8(buf, base)                                                                                      \
    uint h[8];                                                                                                 \
    [[unroll]] for (uint q = 0; q < 8u; q++) {                                                                 \
        h[q] = 0u;                                                                                             \
        if (row < rows && col + q < cols) h[q] = uint(buf[(base) + q]);                                        \
    }                                                                                                          \
    return uvec4(h[0] | (h[1] << 16), h[2] | (h[3] << 16), h[4] | (h[5] << 16), h[6] | (h[7] << 16));
#elif defined(X_F8)
#define ELEMS8(buf, base)                                                                                      \
    uint h[8];                                                                                                 \
    [[unroll]] for (uint q = 0; q < 8u; q++) {                                                                 \
        h[q] = 0u;                                                                                             \
        if (row < rows && col + q < cols) h[q] = uint(buf[(base) + q]);                                        \
    }                                                                                                          \
    return uvec2(h[0] | (h[1] << 8) | (h[2] << 16) | (h[3] << 24), h[4] | (h[5] << 8) | (h[6] << 16) | (h[7] << 24));
#else
#define ELEMS8(buf, base)                                                                                      \
    float16_t h[8];                                                                                            \
    [[unroll]] for (uint q = 0; q < 8u; q++) {                                                                 \
        h[q] = float16_t(0.0);                                                                                 \
        if (row < rows && col + q < cols) h[q] = buf[(base) + q];                                              \
    }                                                                                                          \
    return uvec4(packFloat2x16(f16vec2(h[0], h[1])), packFloat2x16(f16vec2(h[2], h[3])),                       \
                 packFloat2x16(f16vec2(h[4], h[5])), packFloat2x16(f16vec2(h[6], h[7])));
#endif

// Which 16-byte word of a staged tile word w is, for rows of rw words. A 16-byte store is carried out eight
// threads at a time, and for rows padded to an odd width of 3 or 5 words (BK 16 or 32 of an operand stored along
// k) eight words of consecutive rows in row order put two in one bank group. Within each block of eight rows, the
// eight threads of a store phase take whole rows rw apart instead (rows p, p + rw, ...: 3 or 5 words times rw is
// 4 mod 8, so those rows' words fill the eight bank groups once), and still read whole rows of global memory, as
// many sectors as in row order (threads down a column of rows would make the global loads fetch each sector
// twice). Wider rows keep row order (a store phase covers eight words of one row). WORD_SPAN words make whole rows
// either way.
#define WORD_SPAN(rw) ((rw) == 2u || (rw) == 4u ? 8u * (rw) : (rw))
uint word_row(uint w, uint rw) {
    if (WORD_SPAN(rw) == rw) return w / rw;
    uint o = w % WORD_SPAN(rw);
    return (w / WORD_SPAN(rw)) * 8u + o / 8u + rw * ((o % 8u) / rw);
}
uint word_col(uint w, uint rw) { return w % rw; } // in both orders: rw divides 8

// Word w of A's slice at k0, element by element (zero outside the matrix): the path for operands whose rows are
// not whole words (fetch_a takes the others).
RAW load_a(uint w, uint k0) {
    const uint rw = (TRANS_A == 0u ? BK : BM) / 8u; // words per staged row
    uint r = word_row(w, rw), c8 = word_col(w, rw) * 8u;
    uint gm = m0 + (TRANS_A == 0u ? r : c8);
    uint gk = k0 + (TRANS_A == 0u ? c8 : r);
    uint row = TRANS_A == 0u ? gm : gk, col = TRANS_A == 0u ? gk : gm; // memory row / column
    uint rows = TRANS_A == 0u ? M : K, cols = TRANS_A == 0u ? K : M;
    ELEMS8(x, TRR_XO + row * pc.xs0 + col)
}

RAW load_b(uint w, uint k0) {
    const uint rw = (TRANS_B == 0u ? BN : BK) / 8u;
    uint r = word_row(w, rw), c8 = word_col(w, rw) * 8u;
    uint gk = k0 + (TRANS_B == 0u ? r : c8);
    uint gn = n0 + (TRANS_B == 0u ? c8 : r);
    uint row = TRANS_B == 0u ? gk : gn, col = TRANS_B == 0u ? gn : gk;
    uint rows = TRANS_B == 0u ? K : N, cols = TRANS_B == 0u ? N : K;
    ELEMS8(y, TRR_YO + row * pc.ys0 + col)
}

// This thread's words of each slice, fixed over the k loop when the operand's words are whole (pc.pad bit 0
// for A, bit 1 for B): the word index at k0 = 0, whether the row or column that does not move with k is inside
// the matrix, and the word's own offset along k (checked against K per slice).
uint a_base[A_PER], a_kof[A_PER];
bool a_in[A_PER];
uint b_base[B_PER], b_kof[B_PER];
bool b_in[B_PER];

void setup_words() {
    const uint rwa = (TRANS_A == 0u ? BK : BM) / 8u;
    const uint rwb = (TRANS_B == 0u ? BN : BK) / 8u;
    uint xs8 = pc.xs0 / 8u, ys8 = pc.ys0 / 8u;
    [[unroll]] for (uint i = 0; i < A_PER; i++) {
        uint w = t_w + i * WS;
        uint r = word_row(w, rwa), c8 = word_col(w, rwa) * 8u;
        if (TRANS_A == 0u) {
            a_in[i] = w < A_WORDS && m0 + r < M;
            a_kof[i] = c8;
            a_base[i] = TRR_XO / 8u + (m0 + r) * xs8 + c8 / 8u;
        } else {
            a_in[i] = w < A_WORDS && m0 + c8 < M;
            a_kof[i] = r;
            a_base[i] = TRR_XO / 8u + r * xs8 + (m0 + c8) / 8u;
        }
    }
    [[unroll]] for (uint i = 0; i < B_PER; i++) {
        uint w = t_w + i * WS;
        uint r = word_row(w, rwb), c8 = word_col(w, rwb) * 8u;
        if (TRANS_B == 0u) {
            b_in[i] = w < B_WORDS && n0 + c8 < N;
            b_kof[i] = r;
            b_base[i] = TRR_YO / 8u + r * ys8 + (n0 + c8) / 8u;
        } else {
            b_in[i] = w < B_WORDS && n0 + r < N;
            b_kof[i] = c8;
            b_base[i] = TRR_YO / 8u + (n0 + r) * ys8 + c8 / 8u;
        }
    }
}

// Word i of this thread's share of the A (B) slice at k0.
RAW fetch_a(uint i, uint k0) {
    if ((pc.pad & 1u) == 0u) return load_a(t_w + i * WS, k0);
    if (!a_in[i] || k0 + a_kof[i] >= K) return RAW(0u);
    return XW[a_base[i] + (TRANS_A == 0u ? k0 / 8u : k0 * (pc.xs0 / 8u))];
}

RAW fetch_b(uint i, uint k0) {
    if ((pc.pad & 2u) == 0u) return load_b(t_w + i * WS, k0);
    if (!b_in[i] || k0 + b_kof[i] >= K) return RAW(0u);
    return YW[b_base[i] + (TRANS_B == 0u ? k0 * (pc.ys0 / 8u) : k0 / 8u)];
}

void main() {
    M = pc.rows;
    N = pc.cols;
    K = pc.k;
    uint npm = (M + BM - 1u) / BM;
    uint npn = (N + BN - 1u) / BN;
    uint pid = trr_group_id();
    if (pid >= npm * npn) return; // uniform across the workgroup

    uint width = GROUP_M * npn;
    uint first_m = (pid / width) * GROUP_M;
    uint gsize = min(npm - first_m, GROUP_M);
    uint pm = first_m + (pid % width) % gsize;
    uint pn = (pid % width) / gsize;
    m0 = pm * BM;
    n0 = pn * BN;

    uint t = gl_LocalInvocationID.x;
    t_id = t;
    t_w = t % WS;
    uint sg = t / SG, lane = t % SG;
    uint wm = sg % WM, wn = sg / WM;
    setup_words();

    ACC acc[WTM * WTN];
    [[unroll]] for (uint i = 0; i < WTM * WTN; i++) acc[i] = ACC(0.0);
    ACC total[WTM * WTN];
    if (FOLD != 0u)
        [[unroll]] for (uint i = 0; i < WTM * WTN; i++) total[i] = ACC(0.0);
#define FOLD_AFTER(done)                                                                                       \
    if (FOLD != 0u && (done) % FOLD == 0u) {                                                                   \
        [[unroll]] for (uint i = 0; i < WTM * WTN; i++) {                                                      \
            total[i] = total[i] + acc[i];                                                                      \
            acc[i] = ACC(0.0);                                                                                 \
        }                                                                                                      \
    }
    AMAT ma[WTM];
    BMAT mb[WTN];
    RAW ra0[A_PER];
    RAW rb0[B_PER];
    const uint rwa = (TRANS_A == 0u ? BK : BM) / 8u;
    const uint rwb = (TRANS_B == 0u ? BN : BK) / 8u;

// Unguarded: a word past the slice reads as zero or as an element inside the matrix, and STAGE skips it.
#define FETCH(RA, RB, k0)                                                                                      \
    [[unroll]] for (uint i = 0; i < A_PER; i++) RA[i] = fetch_a(i, k0);                                        \
    [[unroll]] for (uint i = 0; i < B_PER; i++) RB[i] = fetch_b(i, k0);
// Where WS words make whole rows (WORD_SPAN), word i lies i * WS / rw rows below word 0: the address is one base
// and a constant (NVIDIA's compiler does not find that itself and recomputes each word's row and column).
#define STAGE_AT(w, i, rw, ld)                                                                                 \
    (WS % WORD_SPAN(rw) == 0u ? (word_row(t_w, rw) + (i) * (WS / (rw))) * (ld) + word_col(t_w, rw)             \
                              : word_row(w, rw) * (ld) + word_col(w, rw))
#define STAGE(RA, RB, buf)                                                                                     \
    [[unroll]] for (uint i = 0; i < A_PER; i++) {                                                              \
        uint w = t_w + i * WS;                                                                                 \
        if (A_PER * WS == A_WORDS || w < A_WORDS) S[A_AT + (buf) * A_SZ + STAGE_AT(w, i, rwa, A_LD)] = WIDEN_A(RA[i]);  \
    }                                                                                                          \
    [[unroll]] for (uint i = 0; i < B_PER; i++) {                                                              \
        uint w = t_w + i * WS;                                                                                 \
        if (B_PER * WS == B_WORDS || w < B_WORDS) S[B_AT + (buf) * B_SZ + STAGE_AT(w, i, rwb, B_LD)] = WIDEN_B(RB[i]);  \
    }
// The subgroup's fragments of k step ks (TK deep) of the slice in buffer buf, into MA and MB; their multiply-adds.
#define LOAD_FRAGS(buf, ks, MA, MB)                                                                            \
    [[unroll]] for (uint i = 0; i < WTM; i++) {                                                                \
        uint mm = wm * WTM * TM + i * TM;                                                                      \
        if (TRANS_A == 0u)                                                                                     \
            MAT_LOAD(MA[i], S, A_AT + (buf) * A_SZ + mm * A_LD + (ks) / 8u, A_LD, false);                      \
        else                                                                                                   \
            MAT_LOAD(MA[i], S, A_AT + (buf) * A_SZ + (ks) * A_LD + mm / 8u, A_LD, true);                       \
    }                                                                                                          \
    [[unroll]] for (uint j = 0; j < WTN; j++) {                                                                \
        uint nn = wn * WTN * TN + j * TN;                                                                      \
        if (TRANS_B == 0u)                                                                                     \
            MAT_LOAD(MB[j], S, B_AT + (buf) * B_SZ + (ks) * B_LD + nn / 8u, B_LD, false);                      \
        else                                                                                                   \
            MAT_LOAD(MB[j], S, B_AT + (buf) * B_SZ + nn * B_LD + (ks) / 8u, B_LD, true);                       \
    }
#define MADS(MA, MB)                                                                                           \
    [[unroll]] for (uint i = 0; i < WTM; i++)                                                                  \
        [[unroll]] for (uint j = 0; j < WTN; j++)                                                              \
            acc[i * WTN + j] = MAT_MAD(MA[i], MB[j], acc[i * WTN + j]);
#define COMPUTE(buf)                                                                                           \
    [[unroll]] for (uint ks = 0; ks < BK; ks += TK) {                                                          \
        LOAD_FRAGS(buf, ks, ma, mb)                                                                            \
        MADS(ma, mb)                                                                                           \
    }
// Stages 7: one step of stages 2's pipeline with the fragments software-pipelined (the technique of the OpenCL
// tensor-core kernel's MMA_PIPE): on entry ma, mb hold k step 0 of the slice in buffer buf; each k step's
// multiply-adds issue after the next step's fragments are asked for (second set ma2, mb2), and the step's barrier
// sits before the slice's last k step, so that the first fragments of the next slice load while the last
// multiply-adds of this one run: no subgroup waits on a shared-memory load after a barrier with nothing to
// multiply. Safe with two buffers: every read of buffer buf (the last step's fragments included) comes before
// this step's barrier, and the other buffer, read only after it, was written before it (WORK). MORE: a next
// slice exists (uniform).
#define PIPE_STEP(buf, WORK, MORE)                                                                             \
    [[unroll]] for (uint ks = 0; ks + TK < BK; ks += TK) {                                                     \
        LOAD_FRAGS(buf, ks + TK, ma2, mb2)                                                                     \
        MADS(ma, mb)                                                                                           \
        [[unroll]] for (uint i = 0; i < WTM; i++) ma[i] = ma2[i];                                              \
        [[unroll]] for (uint j = 0; j < WTN; j++) mb[j] = mb2[j];                                              \
    }                                                                                                          \
    WORK                                                                                                       \
    barrier();                                                                                                 \
    if (MORE) {                                                                                                \
        LOAD_FRAGS((buf) ^ 1u, 0u, ma2, mb2)                                                                   \
    }                                                                                                          \
    MADS(ma, mb)                                                                                               \
    [[unroll]] for (uint i = 0; i < WTM; i++) ma[i] = ma2[i];                                                  \
    [[unroll]] for (uint j = 0; j < WTN; j++) mb[j] = mb2[j];

// The steady state's reads: the tile lies inside the matrix along M and N, the words are whole and the slice
// inside K (the loops below check), so nothing is predicated. A word past the slice is still skipped, as
// STAGE skips it, since its address may lie past the buffer. Where WS words make whole rows (WORD_SPAN), word i
// lies i * WS / rw rows below word 0 (one leading stride each), so only word 0's offset is kept in a register.
#define A_AT_K(i, k0)                                                                                          \
    ((rwa > 0u && WS % WORD_SPAN(rwa) == 0u ? a_base[0] + (i) * (WS / rwa) * xs8 : a_base[i]) +                           \
     (TRANS_A == 0u ? (k0) / 8u : (k0) * xs8))
#define B_AT_K(i, k0)                                                                                          \
    ((rwb > 0u && WS % WORD_SPAN(rwb) == 0u ? b_base[0] + (i) * (WS / rwb) * ys8 : b_base[i]) +                           \
     (TRANS_B == 0u ? (k0) * ys8 : (k0) / 8u))
#define FETCH_IN(RA, RB, k0)                                                                                   \
    [[unroll]] for (uint i = 0; i < A_PER; i++)                                                                \
        if (A_PER * WS == A_WORDS || t_w + i * WS < A_WORDS) RA[i] = XW[A_AT_K(i, k0)];                        \
    [[unroll]] for (uint i = 0; i < B_PER; i++)                                                                \
        if (B_PER * WS == B_WORDS || t_w + i * WS < B_WORDS) RB[i] = YW[B_AT_K(i, k0)];

    uint nk = (K + BK - 1u) / BK;
    const uint xs8 = pc.xs0 / 8u, ys8 = pc.ys0 / 8u;
    // Slices whose every read is inside the matrix, where the tile is inside along M and N with whole words
    // (uniform over the workgroup); 0 elsewhere, so only the general loops run.
    const uint nin = (pc.pad & 3u) == 3u && m0 + BM <= M && n0 + BN <= N ? K / BK : 0u;
    uint kt = 0u;
    // Slice 0 into buffer 0 (with producers, theirs to do).
    if (NP == 0u) {
        FETCH(ra0, rb0, 0u)
        STAGE(ra0, rb0, 0u)
    }
    if (PREFETCH == 2u) {
        // The next slice is staged from registers right after the multiply and only then is the one after it
        // read into the same registers, so the load is in flight through a barrier and a whole multiply step.
        // (NVIDIA's compiler counts every global load on one scoreboard and its wait takes them all: a store
        // placed after a newer load would wait for that load too.)
        FETCH(ra0, rb0, BK)
        barrier();
        // Steady state: slice kt + 2 is inside K, slice kt + 1 exists.
        for (; kt + 3u <= nin; kt++) {
            uint cur = kt & 1u;
            COMPUTE(cur)
            FOLD_AFTER(kt + 1u)
            STAGE(ra0, rb0, cur ^ 1u)
            FETCH_IN(ra0, rb0, (kt + 2u) * BK)
            barrier();
        }
        for (; kt < nk; kt++) {
            uint cur = kt & 1u;
            COMPUTE(cur)
            FOLD_AFTER(kt + 1u)
            if (kt + 1u < nk) STAGE(ra0, rb0, cur ^ 1u)
            // Unconditional: past K every word reads as zero, and a conditional load would make the compiler
            // copy the registers after the barrier, waiting there for the load.
            FETCH(ra0, rb0, (kt + 2u) * BK)
            barrier();
        }
    } else if (PREFETCH == 7u) {
        // Stages 2's loop with the fragments pipelined across k steps and slices (PIPE_STEP).
        AMAT ma2[WTM];
        BMAT mb2[WTN];
        FETCH(ra0, rb0, BK)
        barrier();
        LOAD_FRAGS(0u, 0u, ma, mb)
        // Steady state: slice kt + 2 is inside K, slice kt + 1 exists.
        for (; kt + 3u <= nin; kt++) {
            uint cur = kt & 1u;
            PIPE_STEP(cur, STAGE(ra0, rb0, cur ^ 1u) FETCH_IN(ra0, rb0, (kt + 2u) * BK), true)
            FOLD_AFTER(kt + 1u)
        }
        for (; kt < nk; kt++) {
            uint cur = kt & 1u;
            bool more = kt + 1u < nk;
            // Unconditional read, as in stages 2: past K every word reads as zero.
            PIPE_STEP(cur, if (more) { STAGE(ra0, rb0, cur ^ 1u) } FETCH(ra0, rb0, (kt + 2u) * BK), more)
            FOLD_AFTER(kt + 1u)
        }
    } else if (PREFETCH == 3u) {
        // The same, unrolled by two so that each step's buffers are constants.
        FETCH(ra0, rb0, BK)
        barrier();
        // Steady state: slices kt + 2 and kt + 3 are inside K.
        for (; kt + 4u <= nin; kt += 2u) {
            COMPUTE(0u)
            FOLD_AFTER(kt + 1u)
            STAGE(ra0, rb0, 1u)
            FETCH_IN(ra0, rb0, (kt + 2u) * BK)
            barrier();
            COMPUTE(1u)
            FOLD_AFTER(kt + 2u)
            STAGE(ra0, rb0, 0u)
            FETCH_IN(ra0, rb0, (kt + 3u) * BK)
            barrier();
        }
        for (; kt < nk; kt += 2u) {
            COMPUTE(0u)
            FOLD_AFTER(kt + 1u)
            if (kt + 1u < nk) STAGE(ra0, rb0, 1u)
            FETCH(ra0, rb0, (kt + 2u) * BK)
            barrier();
            if (kt + 1u >= nk) break;
            COMPUTE(1u)
            FOLD_AFTER(kt + 2u)
            if (kt + 2u < nk) STAGE(ra0, rb0, 0u)
            FETCH(ra0, rb0, (kt + 3u) * BK)
            barrier();
        }
    } else if (NP != 0u) {
        // Producer groups: group p (p < NP, subgroups NSG + p PQ and the PQ - 1 after it) reads slices p, p + NP,
        // p + 2 NP, ... into its registers; in the step before a slice's multiply it stores the slice into shared
        // memory and reads its next one, NP steps ahead. The NSG subgroups before them only multiply. A producer
        // holds one slice at a time, so the wait that takes all its loads at once (PREFETCH 2) covers just that
        // slice, after NP steps in flight, and falls on a subgroup that does no multiply. Two buffers: in step kt
        // the multiply reads buffer kt & 1 while slice kt + 1 is stored into the other. The two kinds of subgroup
        // run separate loops with the same barriers (on NVIDIA's compiler, one loop with a branch per step keeps
        // both kinds' registers live and spills); the multiply's is unrolled by two so that each step's buffers
        // are constants. p wraps past NP for the subgroups that multiply; it is taken from the subgroup's first
        // invocation so that the branch around the cooperative-matrix code is subgroup-uniform to the compiler.
        const uint p = subgroupBroadcastFirst(sg - NSG) / PQ;
        if (p < NP) {
            FETCH(ra0, rb0, p * BK)
            if (p == 0u) {
                STAGE(ra0, rb0, 0u)
                FETCH(ra0, rb0, NP * BK)
            }
            barrier();
            // One barrier per step, as the multiplying subgroups' loop below. The store of slice s comes first
            // in each pass, then the steps that are not this producer's turn are bare barriers: with a branch on
            // the turn in every step, NVIDIA's compiler put the wait for the loads on that branch, so each
            // producer waited for the slice it had just read in the very next step. Slices wholly inside the
            // matrix are read without bounds checks.
            uint s = p == 0u ? NP : p; // the next slice this producer stores, in step s - 1
            for (; kt + 1u < s && kt < nk; kt++) barrier();
            while (kt < nk) {
                if (s < nk) {
                    STAGE(ra0, rb0, s & 1u)
                    if (s + NP < nin) {
                        FETCH_IN(ra0, rb0, (s + NP) * BK)
                    } else {
                        FETCH(ra0, rb0, (s + NP) * BK)
                    }
                }
                barrier();
                kt++;
                [[unroll]] for (uint j = 1u; j < NP; j++) {
                    if (kt >= nk) break;
                    barrier();
                    kt++;
                }
                s += NP;
            }
            return; // the epilogue is the multiplying subgroups'
        }
        barrier();
        for (; kt < nk; kt += 2u) {
            COMPUTE(0u)
            FOLD_AFTER(kt + 1u)
            barrier();
            if (kt + 1u >= nk) break;
            COMPUTE(1u)
            FOLD_AFTER(kt + 2u)
            barrier();
        }
    } else {
        barrier();
        for (; kt < nk; kt++) {
            uint cur = kt & 1u;
            bool more = kt + 1u < nk;
            if (more) FETCH(ra0, rb0, (kt + 1u) * BK)
            COMPUTE(cur)
            FOLD_AFTER(kt + 1u)
            if (more) STAGE(ra0, rb0, cur ^ 1u)
            barrier();
        }
    }

    if (FOLD != 0u)
        [[unroll]] for (uint i = 0; i < WTM * WTN; i++) acc[i] = total[i] + acc[i];

    // Every subgroup passed the last barrier, so A's buffers are free for the scratch.
    bool direct = (pc.pad & 4u) != 0u;
    [[unroll]] for (uint i = 0; i < WTM; i++) {
        [[unroll]] for (uint j = 0; j < WTN; j++) {
            ACC c = acc[i * WTN + j];
            if (EPI != 0u || SCALED)
                [[unroll]] for (int e = 0; e < c.length(); e++) c[e] = act(c[e]);
            uint gm = m0 + (wm * WTM + i) * TM;
            uint gn = n0 + (wn * WTN + j) * TN;
            // Whole tiles straight to memory; the others, and every tile of a bf16 output in a build without
            // bfloat16 matrices (8-bit float inputs), through the scratch, rounded there (ZC).
            const bool whole = direct && gm + TM <= M && gn + TN <= N;
#if defined(Z_F16)
            if (whole) {
                HACC h = HACC(c);
                MAT_STORE(h, z, TRR_ZO + gm * pc.zs0 + gn, pc.zs0, false);
                continue;
            }
#elif defined(Z_BF16) && defined(X_BF16)
            if (whole) {
                // Rounded to nearest even in f32 first (trr_f2bf), so the conversion is exact whatever rounding
                // the driver's float -> bfloat16 conversion takes.
                [[unroll]] for (int e = 0; e < c.length(); e++) c[e] = uintBitsToFloat(trr_f2bf(c[e]) << 16);
                HACC h = HACC(c);
                MAT_STORE(h, z4, (TRR_ZO + gm * pc.zs0 + gn) / 8u, pc.zs0 / 8u, false);
                continue;
            }
#elif !defined(Z_BF16)
            if (whole) {
                MAT_STORE(c, z, TRR_ZO + gm * pc.zs0 + gn, pc.zs0, false);
                continue;
            }
#endif
            MAT_STORE(c, S, A_AT + sg * SCRATCH, TN / 4u, false);
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            for (uint e = lane; e < TM * TN; e += SG) {
                uint r = gm + e / TN, q = gn + e % TN;
                if (r < M && q < N) z[TRR_ZO + r * pc.zs0 + q] = ZC(uintBitsToFloat(S[A_AT + sg * SCRATCH + e / 4u][e % 4u]));
            }
            subgroupBarrier(); // the scratch is rewritten by the next tile
        }
    }
}
