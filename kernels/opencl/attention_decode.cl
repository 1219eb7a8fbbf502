/* attention (docs/ops.md, attention), the decode form: few query rows per kv head and many keys, where the time is
 * the read of K and V. OpenCL C 1.2; kernels/vulkan/attention_decode.comp is the same algorithm in GLSL.
 *
 * A work-group takes one chunk of keys of one kv head (batch b, kv head g, split s) and BM rows of that kv head's
 * group: its G = Hq / Hkv query heads times Sq queries, row r being query r % Sq of head g·G + r / Sq. So K and V
 * are read once per kv head, not once per query head, and the splits put enough work-groups in flight. The host
 * then merges the splits with attention.cl's attention_combine (the same scratch layout).
 *
 * The T work-items are KS = T / L key slots of L = D / 8 lanes: lane l of a slot holds elements 8l..8l+7 of one
 * key's K and V row (read as one 16-byte word of f16 or bf16, two of f32, converted to f32 on load) and of each
 * row's q (f32, times scale·log2 e) and of each row's f32 accumulator, in registers. A step of BN = NK·KS keys
 * (slot k takes keys k, k + KS, ...):
 *   1. each lane forms its 8-element part of q·k for its keys and rows, into local memory;
 *   2. the work-items sum the L parts of each (key, row) score; a key the row does not see scores -inf;
 *   3. each lane takes the online softmax step of every row over its slot's keys: the slot's running maximum m,
 *      the rescale of its accumulator and of the slot's sum l, and p·v for the slot's keys.
 * The V words of a step are loaded before step 1 and the next step's K words before step 2, so the loads are in
 * flight across the barriers. The scores are double-buffered: step 3 of one step and step 2 of the next need no
 * barrier between them. At the end the slots' results are merged in local memory, as the splits are: each scaled
 * to the largest of the slots' maxima, then added. A row that has
 * seen no key yet keeps m = -inf and weights 0, and never forms -inf - (-inf).
 *
 * Build options: T, BM (rows, 1..16) and NK (keys a slot takes a step). The dtype (dt, as attention.cl's), D (a
 * multiple of 8 up to 256: the host sends other calls to attention.cl, as it does K and V views that are not whole
 * 16-byte words) and BN = NK·KS are arguments, so one program serves every dtype and head dim. mode 0 writes o and
 * lse, mode 1 the split's o_s and lse_s (base 2) to the f32 scratch, as attention.cl does. */


/* Elements 0..7 of a row at p (16-byte aligned) of dtype dt, as f32: one 16-byte word of f16 or bf16, two of f32. */
inline float8 load8(__global const uchar *p, int dt) {
    if (dt == DT_F16) return trr_vloada_half8((__global const half *)p);
    if (dt == DT_BF16) {
        const uint4 u = *(__global const uint4 *)p;
        return (float8)(as_float(u.x << 16), as_float(u.x & 0xffff0000u), as_float(u.y << 16),
                        as_float(u.y & 0xffff0000u), as_float(u.z << 16), as_float(u.z & 0xffff0000u),
                        as_float(u.w << 16), as_float(u.w & 0xffff0000u));
    }
    __global const float4 *f = (__global const float4 *)p;
    return (float8)(f[0], f[1]);
}

inline float dot8(float8 a, float8 b) { return dot(a.lo, b.lo) + dot(a.hi, b.hi); }

__kernel __attribute__((reqd_work_group_size(T, 1, 1))) void attention_decode(
    __global const uchar *q, __global const uchar *k, __global const uchar *v, __global uchar *o, __global float *lse,
    __global float *part, __global float *part_lse, __local float *smem,
    long qo, long qb, long qh, long qs, long ko, long kb, long kh, long ks, long vo, long vb, long vh, long vs,
    long oo, long ob, long oh, long os, long lo, long lb, long lh, long ls,
    int Hq, int group, int Sq, int Skv, int D, int BN, int causal, int has_lse, int nsplit, int kps, int mode,
    float qscale, int dt) {
    const int tid = get_local_id(0), L = D / 8, KS = T / L, slot = tid / L, lane = tid - slot * L;
    const int live = slot < KS, LP = L + 1;
    const int g = get_group_id(1), b = get_group_id(2) / nsplit, split = get_group_id(2) % nsplit;
    const int nrows = group * Sq, r0 = get_group_id(0) * BM;
    /* step 1's parts, [key][row][lane]; after the loop, the slots' accumulators added, [row][d] */
    __local float *Sp = smem;
    __local float *Ss = Sp + max(BN * BM * LP, BM * D); /* the scores, [buffer][row][key] */
    __local float *Ls = Ss + 2 * BM * BN, *Ms = Ls + BM;

    /* this lane's share of q for each row, and the last key each row sees (-1: none, rows past nrows) */
    float8 qr[BM];
    int lim[BM];
    for (int r = 0; r < BM; r++) {
        const int rr = r0 + r, h = g * group + rr / Sq, i = rr % Sq;
        lim[r] = rr >= nrows ? -1 : causal ? i + Skv - Sq : Skv - 1;
        const long at = qo + b * qb + h * qh + (long)i * qs + lane * 8;
        float x[8];
        for (int e = 0; e < 8; e++) x[e] = live && rr < nrows ? trr_load_dt(q, at + e, dt) * qscale : 0.0f;
        qr[r] = (float8)(x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7]);
    }
    /* the keys of this split that any row sees: up to the largest limit */
    int kend = -1;
    for (int r = 0; r < BM; r++) kend = max(kend, lim[r]);
    const int kbeg = split * kps, kstop = min(kend + 1, kbeg + kps);

    /* this lane's part of the kv head's rows of K and V, in bytes (offsets and strides are whole 16-byte words) */
    const long es = dt == DT_F32 ? 4 : 2;
    __global const uchar *kp = k + (ko + b * kb + g * kh + lane * 8) * es;
    __global const uchar *vp = v + (vo + b * vb + g * vh + lane * 8) * es;
    const long kstep = ks * es, vstep = vs * es;
    float8 kr[NK], vr[NK], acc[BM];
    float m[BM], l[BM];
    for (int r = 0; r < BM; r++) m[r] = -INFINITY, l[r] = 0.0f, acc[r] = (float8)(0.0f);
    for (int n = 0; n < NK; n++) {
        const int j = kbeg + n * KS + slot;
        kr[n] = live && j < kstop ? load8(kp + j * kstep, dt) : (float8)(0.0f);
    }

    int buf = 0;
    for (int j0 = kbeg; j0 < kstop; j0 += BN) {
        for (int n = 0; n < NK; n++) {
            const int j = j0 + n * KS + slot;
            vr[n] = live && j < kstop ? load8(vp + j * vstep, dt) : (float8)(0.0f);
        }
        /* 1. the parts of q·k */
        if (live)
            for (int n = 0; n < NK; n++)
                for (int r = 0; r < BM; r++) Sp[((n * KS + slot) * BM + r) * LP + lane] = dot8(qr[r], kr[n]);
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int n = 0; n < NK; n++) { /* the next step's K, in flight through steps 2 and 3 */
            const int j = j0 + BN + n * KS + slot;
            kr[n] = live && j < kstop ? load8(kp + j * kstep, dt) : (float8)(0.0f);
        }
        /* 2. the scores */
        for (int p = tid; p < BN * BM; p += T) {
            const int jb = p / BM, r = p - jb * BM, j = j0 + jb;
            float s = 0.0f;
            for (int x = 0; x < L; x++) s += Sp[p * LP + x];
            int lr = -1;
            for (int rr = 0; rr < BM; rr++) lr = rr == r ? lim[rr] : lr;
            Ss[(buf * BM + r) * BN + jb] = j < kstop && j <= lr ? s : -INFINITY;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        /* 3. the online softmax step over the slot's own keys and p·v */
        if (live)
            for (int r = 0; r < BM; r++) {
                __local const float *srow = Ss + (buf * BM + r) * BN + slot;
                float mb = -INFINITY;
                for (int n = 0; n < NK; n++) mb = fmax(mb, srow[n * KS]);
                const float mn = fmax(m[r], mb);
                if (mn == -INFINITY) continue; /* no key seen yet: nothing to add */
                const float alpha = m[r] == -INFINITY ? 0.0f : exp2(m[r] - mn);
                m[r] = mn;
                float8 a = acc[r] * alpha;
                float sum = l[r] * alpha;
                for (int n = 0; n < NK; n++) {
                    const float sj = srow[n * KS];
                    const float pj = sj == -INFINITY ? 0.0f : exp2(sj - mn);
                    sum += pj;
                    a += pj * vr[n];
                }
                acc[r] = a;
                l[r] = sum;
            }
        buf ^= 1;
    }

    /* the slots' results merged: each scaled by 2^(m_slot - M) to the rows' maxima M over the slots, then added
     * one slot after another */
    barrier(CLK_LOCAL_MEM_FENCE);
    if (live && lane == 0)
        for (int r = 0; r < BM; r++) Ss[slot * BM + r] = m[r];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int r = 0; r < BM; r++) {
        float mx = -INFINITY;
        for (int s = 0; s < KS; s++) mx = fmax(mx, Ss[s * BM + r]);
        const float f = m[r] == -INFINITY ? 0.0f : exp2(m[r] - mx);
        acc[r] *= f;
        l[r] *= f;
        m[r] = mx;
    }
    for (int s = 0; s < KS; s++) {
        if (slot == s)
            for (int r = 0; r < BM; r++) {
                __local float *at = Sp + r * D + lane * 8;
                vstore8(s == 0 ? acc[r] : vload8(0, at) + acc[r], 0, at);
                if (lane == 0) {
                    Ls[r] = s == 0 ? l[r] : Ls[r] + l[r];
                    Ms[r] = m[r];
                }
            }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    for (int e = tid; e < BM * D; e += T) {
        const int r = e / D, d = e - r * D, rr = r0 + r;
        if (rr >= nrows) continue;
        const int h = g * group + rr / Sq, i = rr % Sq;
        trr_attention_emit(o, lse, part, part_lse, oo, ob, oh, os, lo, lb, lh, ls, dt, has_lse, mode, Hq, Sq, D,
                           nsplit, split, b, h, i, d, Sp[e], Ls[r], Ms[r]);
    }
}
