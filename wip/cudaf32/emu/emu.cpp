// Host emulation of kernels/cuda/matmul_simt.cu (f32 only): one std::thread per CUDA thread, std::barrier for
// __syncthreads; checks bit-exactly against a sequential fmaf reference.
#include <barrier>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>
#define __device__
#define __forceinline__ inline
#define __global__
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __shared__ static
struct u3 { unsigned x, y, z; };
thread_local u3 threadIdx, blockIdx;
std::barrier<> *g_bar;
inline void __syncthreads() { g_bar->arrive_and_wait(); }
struct trr_bf16 { unsigned short bits; };
inline float trr_to_f32(float v) { return v; }
template <typename T> T trr_from_f32(float v);
template <> float trr_from_f32<float>(float v) { return v; }
inline float trr_epilogue(float v, int epi, float alpha) {
    if (epi == 1) return v > 0.0f ? v : 0.0f;
    if (epi == 2) return v >= 0.0f ? v : alpha * v;
    return v;
}
inline void trr_grouped_block(int pid, int npm, int npn, int group_m, int *pm, int *pn) {
    int width = group_m * npn;
    int group = pid / width;
    int first_m = group * group_m;
    int gsize = npm - first_m < group_m ? npm - first_m : group_m;
    *pm = first_m + (pid % width) % gsize;
    *pn = (pid % width) / gsize;
}
#include KSRC

static int run_case(int M, int N, int K, int lda_pad, int ldb_pad, int ldc_pad, int batch, int epi, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d(-1.f, 1.f);
    long long arows = TRANS_A ? K : M, acols = TRANS_A ? M : K;
    long long brows = TRANS_B ? N : K, bcols = TRANS_B ? K : N;
    long long lda = acols + lda_pad, ldb = bcols + ldb_pad, ldc = N + ldc_pad;
    long long a_bs = batch > 1 ? arows * lda + 4 : 0, b_bs = batch > 1 ? brows * ldb : 0, c_bs = batch > 1 ? (long long)M * ldc + 8 : 0;
    std::vector<float> A((batch > 1 ? a_bs * batch : arows * lda) + 16), Bm((batch > 1 ? b_bs * batch : brows * ldb) + 16),
        C((batch > 1 ? c_bs * batch : M * ldc) + 16, NAN);
    for (auto &x : A) x = d(rng);
    for (auto &x : Bm) x = d(rng);
    std::vector<float> Cpoison = C;
    int npm = (M + BM - 1) / BM, npn = (N + BN - 1) / BN;
    int gm = 1 + (int)(seed % 5);
    std::barrier<> bar(THREADS);
    g_bar = &bar;
    for (int z = 0; z < batch; z++)
        for (int bx = 0; bx < npm * npn; bx++) {
            std::vector<std::thread> ts;
            for (int t = 0; t < THREADS; t++)
                ts.emplace_back([&, t] {
                    threadIdx = {(unsigned)t, 0, 0};
                    blockIdx = {(unsigned)bx, 0, (unsigned)z};
                    matmul_simt(A.data(), lda, Bm.data(), ldb, C.data(), ldc, M, N, K, epi, 0.1f, gm, a_bs, b_bs, c_bs);
                });
            for (auto &t : ts) t.join();
        }
    int bad = 0;
    for (int z = 0; z < batch; z++)
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                float acc = 0.f;
                for (int k = 0; k < K; k++) {
                    float a = TRANS_A ? A[z * a_bs + (long long)k * lda + m] : A[z * a_bs + (long long)m * lda + k];
                    float b = TRANS_B ? Bm[z * b_bs + (long long)n * ldb + k] : Bm[z * b_bs + (long long)k * ldb + n];
                    acc = fmaf(a, b, acc);
                }
                float want = trr_epilogue(acc, epi, 0.1f), got = C[z * c_bs + (long long)m * ldc + n];
                if (memcmp(&want, &got, 4) && bad++ < 5)
                    printf("  M%d N%d K%d b%d: C[%d][%d][%d] = %g want %g\n", M, N, K, batch, z, m, n, got, want);
                C[z * c_bs + (long long)m * ldc + n] = NAN;
            }
    for (size_t i = 0; i < C.size(); i++)
        if (!std::isnan(C[i]) && bad++ < 5) printf("  M%d N%d K%d: wrote outside C at %zu\n", M, N, K, i);
    return bad;
}

int main() {
    int pad = ALIGNED ? 4 : 1;
    struct { int M, N, K, lp, bp, cp, b, e; } cs[] = {
        {BM, BN, BK, 0, 0, 0, 1, 0},           {2 * BM, 2 * BN, 5 * BK, 0, 0, 0, 1, 0},
        {BM + 3, BN + 5, 3 * BK + 3, pad, pad, 1, 1, 1}, {37, 29, 1, pad, 0, 3, 1, 0},
        {BM - 1, 3 * BN - 7, 2 * BK - 1, pad, pad, 2, 2, 2}, {5, 7, 0, 0, 0, 0, 1, 0},
        {3 * BM, BN, 7 * BK, 0, pad, 0, 3, 1},  {17, 2 * BN + 1, 4 * BK + 2, 2 * pad, pad, 0, 1, 0},
    };
    int bad = 0;
    for (unsigned i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        int lp = ALIGNED ? cs[i].lp : cs[i].lp + 1;
        bad += run_case(cs[i].M, cs[i].N, cs[i].K, lp, cs[i].bp, cs[i].cp, cs[i].b, cs[i].e, 100 + i);
    }
    printf("BM%d BN%d BK%d T%d TA%d TB%d AL%d: %s\n", BM, BN, BK, THREADS, TRANS_A, TRANS_B, ALIGNED, bad ? "FAIL" : "ok");
    return bad != 0;
}
