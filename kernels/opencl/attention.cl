/* attention (docs/ops.md, attention): the portable kernel, OpenCL C 1.2. kernels/vulkan/attention.comp is the same
 * algorithm in GLSL.
 *
 * A work-group of T work-items takes bm query rows of one head (batch b, query head h, kv head h / group) and a
 * range of keys: all of them, or one split of a long range (below). It keeps in local memory its rows of q (f32,
 * times scale·log2 e), one block of BN keys and values (f32), the block's bm x BN scores and, per row, the running
 * maximum m, sum l and the block's rescale factor. For each key block:
 *   1. the work-items load K and V, converted to f32 (zero past the range);
 *   2. they compute the bm x BN scores, each a D-long dot product; a key a row does not see scores -inf;
 *   3. work-item r (r < bm, and r + T, ...) takes row r's online softmax step in base 2: the block's maximum,
 *      m_new, the weights p = 2^(s - m_new) in place of the scores, l = l·2^(m - m_new) + Σp (a loop over the
 *      rows, not `if (tid < bm)`: PoCL 3.1 dropped the stores of that conditional block);
 *   4. each work-item rescales its share of the bm x D f32 accumulator (OPT elements, private) and adds P·V.
 * A row that has seen no key yet keeps m = -inf and weights 0, and never forms -inf - (-inf).
 *
 * D and BN are arguments (the local memory is an argument too, sized by the host), so one program serves every head
 * dim up to DMAX (256), and bm (an argument too: a decode step takes one row) up to BMMAX: OPT = ceil(BMMAX·DMAX / T)
 * bounds the private accumulator, of which a work-item uses opt = ceil(bm·D / T). MODE 0 writes o (rounded once to its
 * dtype, 0 for a row without keys) and lse = (m + log2 l)·ln 2 (-inf without keys). MODE 1 writes the split's partial
 * result, o_s normalised by its own l_s and lse_s = m_s + log2 l_s in base 2, to f32 scratch; attention_combine then
 * merges the splits: lse = log2 Σ 2^lse_s, o = Σ 2^(lse_s - lse)·o_s. The host splits the keys where the device limits
 * a work-item's loop iterations (llvmpipe), so every launch stays inside it. */

#define OPT ((BMMAX * DMAX + T - 1) / T) /* the accumulator's elements a work-item holds, at most */

/* The operands' dtype is an argument, dt (common.cl's trr_load_dt and trr_store_dt), not a build option: one
 * program then serves every dtype, and PoCL compiles it once. The branch is the same for every work-item. */

__kernel __attribute__((reqd_work_group_size(T, 1, 1))) void attention(
    __global const uchar *q, __global const uchar *k, __global const uchar *v, __global uchar *o, __global float *lse,
    __global float *part, __global float *part_lse, __local float *smem,
    long qo, long qb, long qh, long qs, long ko, long kb, long kh, long ks, long vo, long vb, long vh, long vs,
    long oo, long ob, long oh, long os, long lo, long lb, long lh, long ls,
    int Hq, int group, int Sq, int Skv, int D, int BN, int causal, int has_lse, int nsplit, int keys_per_split,
    int mode, float qscale, int dt, int bm) {
    const int tid = get_local_id(0);
    const int i0 = get_group_id(0) * bm, h = get_group_id(1);
    const int b = get_group_id(2) / nsplit, split = get_group_id(2) % nsplit;
    const int g = h / group;
    __local float *Qs = smem;              /* [bm][D] */
    __local float *Ks = Qs + bm * D;       /* [BN][D + 1]: the pad keeps a column's reads on distinct banks */
    __local float *Vs = Ks + BN * (D + 1); /* [BN][D] */
    __local float *Ss = Vs + BN * D;       /* [bm][BN] */
    __local float *Ms = Ss + bm * BN, *Ls = Ms + bm, *As = Ls + bm;

    for (int e = tid; e < bm * D; e += T) {
        const int r = e / D, d = e - r * D, i = i0 + r;
        Qs[e] = i < Sq ? trr_load_dt(q, qo + b * qb + h * qh + i * qs + d, dt) * qscale : 0.0f;
    }
    for (int r = tid; r < bm; r += T) Ms[r] = -INFINITY, Ls[r] = 0.0f;
    const int opt = (bm * D + T - 1) / T;
    float acc[OPT];
    for (int u = 0; u < opt; u++) acc[u] = 0.0f;
    /* the keys of this split that any row of the block sees: up to the last row's limit under causal */
    const int last = min(i0 + bm, Sq) - 1;
    const int kend = causal ? clamp(last + Skv - Sq + 1, 0, Skv) : Skv;
    const int kbeg = split * keys_per_split, kstop = min(kend, kbeg + keys_per_split);
    barrier(CLK_LOCAL_MEM_FENCE);

    for (int j0 = kbeg; j0 < kstop; j0 += BN) {
        for (int e = tid; e < BN * D; e += T) {
            const int j = e / D, d = e - j * D, jj = j0 + j;
            float kx = 0.0f, vx = 0.0f;
            if (jj < kstop) {
                kx = trr_load_dt(k, ko + b * kb + g * kh + (long)jj * ks + d, dt);
                vx = trr_load_dt(v, vo + b * vb + g * vh + (long)jj * vs + d, dt);
            }
            Ks[j * (D + 1) + d] = kx;
            Vs[e] = vx;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int e = tid; e < bm * BN; e += T) {
            const int r = e / BN, j = e - r * BN, jj = j0 + j;
            float s = 0.0f;
            for (int d = 0; d < D; d++) s = fma(Qs[r * D + d], Ks[j * (D + 1) + d], s);
            const int limit = causal ? i0 + r + Skv - Sq : Skv - 1; /* the last key row r sees */
            Ss[e] = jj < kstop && jj <= limit ? s : -INFINITY;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int r = tid; r < bm; r += T) {
            const float mo = Ms[r];
            float mb = -INFINITY;
            for (int j = 0; j < BN; j++) mb = fmax(mb, Ss[r * BN + j]);
            const float mn = fmax(mo, mb);
            if (mn == -INFINITY) { /* no key seen yet: weights 0 */
                for (int j = 0; j < BN; j++) Ss[r * BN + j] = 0.0f;
                As[r] = 1.0f;
            } else {
                float sum = 0.0f;
                for (int j = 0; j < BN; j++) {
                    const float p = exp2(Ss[r * BN + j] - mn); /* 2^-inf = 0 */
                    Ss[r * BN + j] = p;
                    sum += p;
                }
                const float alpha = exp2(mo - mn);
                As[r] = alpha;
                Ls[r] = Ls[r] * alpha + sum;
                Ms[r] = mn;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int u = 0; u < opt; u++) {
            const int e = tid + u * T;
            if (e < bm * D) {
                const int r = e / D, d = e - r * D;
                float a = acc[u] * As[r];
                for (int j = 0; j < BN; j++) a = fma(Ss[r * BN + j], Vs[j * D + d], a);
                acc[u] = a;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    for (int u = 0; u < opt; u++) {
        const int e = tid + u * T;
        const int r = e / D, d = e - r * D, i = i0 + r;
        if (e >= bm * D || i >= Sq) continue;
        trr_attention_emit(o, lse, part, part_lse, oo, ob, oh, os, lo, lb, lh, ls, dt, has_lse, mode, Hq, Sq, D,
                           nsplit, split, b, h, i, d, acc[u], Ls[r], Ms[r]);
    }
}

/* Merges the splits of MODE 1: one work-item per (row, d) of the B·Hq·Sq rows. */
__kernel void attention_combine(__global const float *part, __global const float *part_lse, __global uchar *o,
                                __global float *lse, long oo, long ob, long oh, long os, long lo, long lb, long lh,
                                long ls, int Hq, int Sq, int D, int rows, int nsplit, int has_lse, int dt) {
    const long id = get_global_id(0);
    if (id >= (long)rows * D) return;
    const int row = (int)(id / D), d = (int)(id - (long)row * D);
    const int i = row % Sq, h = (row / Sq) % Hq, b = row / Sq / Hq;
    float m = -INFINITY;
    for (int s = 0; s < nsplit; s++) m = fmax(m, part_lse[(long)s * rows + row]);
    float out = 0.0f, total = 0.0f;
    if (m != -INFINITY) {
        for (int s = 0; s < nsplit; s++) {
            const float w = exp2(part_lse[(long)s * rows + row] - m);
            total += w;
            out = fma(w, part[((long)s * rows + row) * D + d], out);
        }
        out /= total;
    }
    trr_store_dt(o, oo + b * ob + h * oh + (long)i * os + d, dt, out);
    if (has_lse && d == 0)
        lse[lo + b * lb + h * lh + (long)i * ls] = m != -INFINITY ? (m + log2(total)) * TRR_LN2 : -INFINITY;
}
