/*
 * The body of the CPU attention kernel (attention.c), included once per instruction set: ATTN_FN(name) gives each
 * function its ISA's name, ATTN_TARGET its target attribute and ATTN_MADD(a, b, c) its multiply-add (fused where
 * the ISA has FMA). Everything here is plain C over contiguous f32 blocks whose sizes are multiples of the
 * vector chunk, so GCC vectorises it at -O3 without edge cases.
 *
 * Two block products, in block_gemm alone (the one routine a BLAS sgemm could stand in for): the scores
 * S = Q·Kᵀ (K held transposed, [D][BN]) and the update O += P·V. Between them the online softmax in base 2: q
 * arrives multiplied by scale·log2(e), so p = 2^(s - m) with the running maximum m and sum l of each row.
 */

/* C[m x n] (= or +=) A[m x k]·B[k x n], row-major; m a multiple of ATTN_MR, n of ATTN_NR. Each ATTN_MR x ATTN_NR
 * tile of C is summed in registers over the whole of k. */
ATTN_TARGET static void ATTN_FN(block_gemm)(int64_t m, int64_t n, int64_t k, const float *restrict a, int64_t lda,
                                            const float *restrict b, int64_t ldb, float *restrict c, int64_t ldc,
                                            int accumulate) {
    for (int64_t i = 0; i < m; i += ATTN_MR)
        for (int64_t j = 0; j < n; j += ATTN_NR) {
            float acc[ATTN_MR][ATTN_NR];
            for (int r = 0; r < ATTN_MR; r++)
                _Pragma("GCC unroll 16") for (int t = 0; t < ATTN_NR; t++)
                    acc[r][t] = accumulate ? c[(i + r) * ldc + j + t] : 0.0f;
            for (int64_t kk = 0; kk < k; kk++) {
                const float *bk = b + kk * ldb + j;
                _Pragma("GCC unroll 4") for (int r = 0; r < ATTN_MR; r++) {
                    const float ar = a[(i + r) * lda + kk];
                    _Pragma("GCC unroll 16") for (int t = 0; t < ATTN_NR; t++) acc[r][t] =
                        ATTN_MADD(ar, bk[t], acc[r][t]);
                }
            }
            for (int r = 0; r < ATTN_MR; r++)
                _Pragma("GCC unroll 16") for (int t = 0; t < ATTN_NR; t++) c[(i + r) * ldc + j + t] = acc[r][t];
        }
}

/* 2^x for x <= 0, and exactly 0 below -126 (a masked score is -inf): the nearest integer n and f = x - n in
 * [-1/2, 1/2], 2^f by its Taylor polynomial of degree 7 (truncation under 1e-8), 2^n put together in the
 * exponent bits. Arithmetic and selects only, so loops over it vectorise. */
ATTN_TARGET static inline float ATTN_FN(exp2_neg)(float x) {
    const float xc = x < -126.0f ? -126.0f : x;
    const float n = (xc + 12582912.0f) - 12582912.0f; /* round to nearest: 1.5 * 2^23 */
    const float f = xc - n;
    float p = 1.5252734e-5f;
    p = ATTN_MADD(p, f, 1.5403530e-4f);
    p = ATTN_MADD(p, f, 1.3333558e-3f);
    p = ATTN_MADD(p, f, 9.6181291e-3f);
    p = ATTN_MADD(p, f, 5.5504109e-2f);
    p = ATTN_MADD(p, f, 2.4022651e-1f);
    p = ATTN_MADD(p, f, 6.9314718e-1f);
    p = ATTN_MADD(p, f, 1.0f);
    const uint32_t bits = (uint32_t)((int32_t)n + 127) << 23;
    float s;
    memcpy(&s, &bits, sizeof s);
    return x < -126.0f ? 0.0f : p * s;
}

/* One row's softmax step over a key block: s[0 .. bn) scores (log2 units), the first `seen` of them visible.
 * Turns s into the weights p (0 where masked, up to bn), rescales the row's accumulator o[0 .. dp) and updates
 * its running max *m and sum *l. Each loop runs over whole rows with ATTN_NR independent lanes, so it
 * vectorises. */
ATTN_TARGET static void ATTN_FN(softmax_step)(float *restrict s, int64_t seen, int64_t bn, float *restrict o,
                                              int64_t dp, float *m, float *l) {
    for (int64_t j = seen; j < bn; j++) s[j] = -INFINITY;
    float lane[ATTN_NR];
    for (int t = 0; t < ATTN_NR; t++) lane[t] = -INFINITY;
    for (int64_t j = 0; j < bn; j += ATTN_NR)
        for (int t = 0; t < ATTN_NR; t++) lane[t] = s[j + t] > lane[t] ? s[j + t] : lane[t];
    float mb = -INFINITY;
    for (int t = 0; t < ATTN_NR; t++) mb = lane[t] > mb ? lane[t] : mb;
    const float mnew = mb > *m ? mb : *m;
    if (mnew == -INFINITY) { /* nothing seen yet: weights 0, the row stays as it is */
        for (int64_t j = 0; j < bn; j++) s[j] = 0.0f;
        return;
    }
    const float alpha = *m == -INFINITY ? 0.0f : ATTN_FN(exp2_neg)(*m - mnew);
    float sum[ATTN_NR];
    for (int t = 0; t < ATTN_NR; t++) sum[t] = 0.0f;
    for (int64_t j = 0; j < bn; j++) s[j] = ATTN_FN(exp2_neg)(s[j] - mnew);
    for (int64_t j = 0; j < bn; j += ATTN_NR)
        for (int t = 0; t < ATTN_NR; t++) sum[t] += s[j + t];
    float total = 0.0f;
    for (int t = 0; t < ATTN_NR; t++) total += sum[t];
    if (alpha != 1.0f)
        for (int64_t d = 0; d < dp; d++) o[d] *= alpha;
    *l = *l * alpha + total;
    *m = mnew;
}

/* One work item: the query rows [i0, i0 + bq) of every head of kv group g in batch b, against the keys they see. */
ATTN_TARGET static void ATTN_FN(run_block)(const attn_job *job, int64_t b, int64_t g, int64_t i0, float *ws) {
    const trr_call *c = job->call;
    const trr_attention_shape *a = &c->attn;
    const int64_t D = a->head_dim, dp = job->dp, bn = job->bn, rp = job->rp, group = job->group;
    const int64_t bq = i0 + job->bq <= a->seq_q ? job->bq : a->seq_q - i0; /* the last block may be short */
    float *q = ws, *kt = q + rp * dp, *v = kt + dp * bn, *s = v + bn * dp, *o = s + rp * bn, *m = o + rp * dp;
    float *l = m + rp;
    /* rows r = hh * job->bq + ii: head g * group + hh, query i0 + ii; rows past the valid ones stay zero */
    memset(q, 0, (size_t)(rp * dp) * sizeof *q);
    memset(o, 0, (size_t)(rp * dp) * sizeof *o);
    for (int64_t r = 0; r < rp; r++) m[r] = -INFINITY, l[r] = 0.0f;
    for (int64_t hh = 0; hh < group; hh++)
        for (int64_t ii = 0; ii < bq; ii++) {
            float *qr = q + (hh * job->bq + ii) * dp;
            attn_load_row(&c->x, b, g * group + hh, i0 + ii, D, qr);
            for (int64_t d = 0; d < D; d++) qr[d] *= job->qscale;
        }
    const int64_t keys = attn_visible(a, i0 + bq - 1); /* the block's last row sees the most */
    for (int64_t j0 = 0; j0 < keys; j0 += bn) {
        const int64_t nb = keys - j0 < bn ? keys - j0 : bn;
        attn_load_kv(c, b, g, j0, nb, job, kt, v);
        ATTN_FN(block_gemm)(rp, bn, dp, q, dp, kt, bn, s, bn, 0);
        for (int64_t hh = 0; hh < group; hh++)
            for (int64_t ii = 0; ii < bq; ii++) {
                const int64_t r = hh * job->bq + ii;
                int64_t seen = attn_visible(a, i0 + ii) - j0;
                seen = seen < 0 ? 0 : seen > nb ? nb : seen;
                ATTN_FN(softmax_step)(s + r * bn, seen, bn, o + r * dp, dp, &m[r], &l[r]);
            }
        /* padding rows (past bq within a head, and past group * job->bq) keep zero weights */
        for (int64_t hh = 0; hh < group; hh++)
            for (int64_t ii = bq; ii < job->bq; ii++) memset(s + (hh * job->bq + ii) * bn, 0, (size_t)bn * sizeof *s);
        for (int64_t r = group * job->bq; r < rp; r++) memset(s + r * bn, 0, (size_t)bn * sizeof *s);
        ATTN_FN(block_gemm)(rp, dp, bn, s, bn, v, dp, o, dp, 1);
    }
    for (int64_t hh = 0; hh < group; hh++)
        for (int64_t ii = 0; ii < bq; ii++) {
            const int64_t r = hh * job->bq + ii;
            attn_store_row(c, b, g * group + hh, i0 + ii, o + r * dp, m[r], l[r]);
        }
}
