/* An API fuzzer: random calls through the public header, mostly invalid, on cpu, opencl:0, vulkan:0 and cuda:0
 * (cuda: on GPU machines; CI has none and reports it skipped).
 *
 * Properties checked after every call:
 *  - it returns a known status (a crash, or a sanitizer report under `make test-asan`, fails the test);
 *  - a failure leaves a message on the context (or on the thread, for calls without one) that starts with the
 *    status name and says something after it (a stale message planted before the call does not count);
 *  - a rejected call changes no byte of any buffer (host shadows of every buffer are compared after each call);
 *  - an accepted op changes no byte outside its output view's elements, computed from the public view (not from
 *    the front-end's normalised form), and where the inputs were filled with well-conditioned values, the output
 *    gathered from the view matches the float64 reference under the conformance suite's bounds;
 *  - buffer reads return the shadow's bytes, and accepted writes, copies and fills do exactly what they say.
 *
 * Each device runs a fixed seed, then a fresh one printed to stderr; TRIREME_FUZZ_SEED=<n> replays one seed
 * alone (TRIREME_FUZZ_VERBOSE=1 prints every call), TRIREME_FUZZ_CALLS=<n> sets the call count. A device that is
 * absent is skipped with its reason (a failure when TRIREME_REQUIRE_BACKENDS names its backend). The run is
 * bounded by a call count and ~20 s of wall time per device; TRIREME_CONFORMANCE_QUICK=1 (the sanitizer run)
 * takes a quarter of the calls. */
#define _POSIX_C_SOURCE 200809L
#include "backend.h"
#include "conformance_check.h"
#include "half.h"
#include "op_table.h"
#include "random.h"
#include "reference.h"
#include "validate.h"

#include <criterion/criterion.h>

#include "test_support.h"
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define N_OWN 4              /* buffers on the context under test */
#define N_BUF (N_OWN + 1)    /* plus one on another context */
#define HOST_BYTES (1 << 16) /* host staging arrays; larger than any buffer */
#define FIXED_SEED 3ull /* reaches the signed overflow of the old stride check within the quick run */
#define WALL_CAP_S 20.0

typedef struct fuzz {
    const char *device;
    uint64_t seed, rng;
    long call;
    int verbose;
    trr_context *ctx, *other;
    trr_buffer *buf[N_BUF];
    uint8_t *shadow[N_BUF];
    size_t size[N_BUF];
    uint8_t *host_a, *host_b, *readback;
    char what[1024];
    long ops_accepted, ops_rejected, values_checked;
    long rejected_by[64]; /* op calls, by status */
    int timer_running;    /* trr_timer_start succeeded on ctx and no stop has followed */
    trr_config configs[6]; /* a small pool, so the compiling backends reuse their kernels */
} fuzz;

#define FZ_ASSERT(f, cond, ...)                                                                                \
    do {                                                                                                       \
        if (!(cond)) {                                                                                         \
            char fz_msg_[1024];                                                                                \
            snprintf(fz_msg_, sizeof fz_msg_, __VA_ARGS__);                                                    \
            cr_assert_fail("%s, seed %llu (TRIREME_FUZZ_SEED), call %ld: %s\n  call: %s", (f)->device,         \
                           (unsigned long long)(f)->seed, (f)->call, fz_msg_, (f)->what);                      \
        }                                                                                                      \
    } while (0)

/* ---- random choices ---- */

static uint64_t rnd(fuzz *f, uint64_t n) { return n ? trr_rng_next(&f->rng) % n : 0; }
static int chance(fuzz *f, int percent) { return (int)rnd(f, 100) < percent; }

static int64_t odd_i64(fuzz *f) {
    static const int64_t v[] = {0, 1, 2, 3, -1, -2, INT64_MAX, INT64_MIN, INT64_MAX / 2, INT64_MIN + 1,
                                (int64_t)1 << 31, ((int64_t)1 << 31) - 1, ((int64_t)1 << 31) + 1, (int64_t)1 << 32,
                                (int64_t)1 << 62, -((int64_t)1 << 62), 65536, 46341, 3037000500LL, 1 << 20};
    return v[rnd(f, sizeof v / sizeof v[0])];
}

static size_t odd_size(fuzz *f, size_t near) {
    switch (rnd(f, 12)) {
    case 0: return SIZE_MAX;
    case 1: return SIZE_MAX - 3;
    case 2: return SIZE_MAX / 2 + 1;
    case 3: return (size_t)1 << 31;
    case 4: return (size_t)1 << 62;
    case 5: return (size_t)INT64_MAX;
    case 6: return near;
    case 7: return near + 1;
    case 8: return near ? near - 1 : 0;
    case 9: return 0;
    case 10: return (size_t)rnd(f, 8);
    default: return (size_t)rnd(f, near + 64);
    }
}

/* a + b wrapping around, as the fuzzer means it (signed overflow would be its own undefined behaviour) */
static int64_t add_wrap(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }

static int odd_int(fuzz *f) {
    static const int v[] = {0, 1, -1, 2, 3, 4, 99, 1000, INT_MAX, INT_MIN, 65536, 65537};
    return v[rnd(f, sizeof v / sizeof v[0])];
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- messages ---- */

/* Planted before each call: a failure that records nothing leaves this, which names no failure status. */
static void plant_stale(fuzz *f) {
    trr_error(f->ctx, TRR_OK, "stale message planted by the fuzzer");
    trr_error(f->other, TRR_OK, "stale message planted by the fuzzer");
    trr_error(NULL, TRR_OK, "stale message planted by the fuzzer");
}

static int names_status(const char *msg, trr_status st) {
    const char *name = trr_status_name(st);
    size_t n = strlen(name);
    if (strncmp(msg, name, n) != 0 || msg[n] != ':' || msg[n + 1] != ' ') return 0;
    const char *detail = msg + n + 2;
    return strlen(detail) >= 4 && !strstr(detail, "stale message planted");
}

/* A failed call: a status the header knows, and a message naming it on the context the call was given (on
 * the thread's slot where it was given none, or only a const one). */
static void check_failure(fuzz *f, trr_status st, const trr_context *c) {
    FZ_ASSERT(f, strcmp(trr_status_name(st), "TRR_ERR_UNKNOWN") != 0, "returned unknown status %d", (int)st);
    const char *on_ctx = c ? trr_last_error(c) : "";
    const char *on_thread = trr_last_error(NULL);
    FZ_ASSERT(f, c ? names_status(on_ctx, st) : names_status(on_thread, st),
              "failed with %s but left no message naming it (context: \"%s\"; thread: \"%s\")", trr_status_name(st),
              on_ctx, on_thread);
}

static void describe_tensor(char *out, size_t cap, const char *name, const trr_tensor *t, const fuzz *f) {
    if (!t) {
        snprintf(out, cap, " %s=NULL", name);
        return;
    }
    int b = -1;
    for (int i = 0; i < N_BUF; i++)
        if (t->buffer == f->buf[i]) b = i;
    snprintf(out, cap, " %s{buf %d off %zu dt %d nd %d shape [%lld,%lld,%lld] strides [%lld,%lld,%lld]}", name, b,
             t->offset, (int)t->dtype, t->ndim, (long long)t->shape[0], (long long)t->shape[1],
             (long long)t->shape[2], (long long)t->strides[0], (long long)t->strides[1], (long long)t->strides[2]);
}

static void say(fuzz *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(fuzz *f, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->what, sizeof f->what, fmt, ap);
    va_end(ap);
    if (f->verbose) fprintf(stderr, "fuzz %s #%ld: %s\n", f->device, f->call, f->what);
}

/* ---- buffers and their shadows ---- */

static trr_context *owner_of(const fuzz *f, int b) { return b == N_OWN ? f->other : f->ctx; }

static int index_of(const fuzz *f, const trr_buffer *buf) {
    for (int i = 0; i < N_BUF; i++)
        if (buf && buf == f->buf[i]) return i;
    return -1;
}

/* The index of a buffer the fuzzer made: every operand of a call whose inputs it prepares is one (a call with
 * another buffer fails the test here rather than indexing the shadows with -1). */
static int own_index(fuzz *f, const trr_buffer *buf) {
    const int b = index_of(f, buf);
    FZ_ASSERT(f, b >= 0, "an operand in a buffer the fuzzer did not make");
    return b;
}

static void push_shadow(fuzz *f, int b) {
    trr_status st = trr_buffer_write(owner_of(f, b), f->buf[b], 0, f->shadow[b], f->size[b]);
    FZ_ASSERT(f, st == TRR_OK, "restoring buffer %d: %s", b, trr_last_error(owner_of(f, b)));
}

/* Every buffer must hold its shadow's bytes, except the bytes of buffer out_b that out_mask marks (those are
 * then taken into the shadow). */
static void verify_buffers(fuzz *f, int out_b, const uint8_t *out_mask, const char *why) {
    for (int b = 0; b < N_BUF; b++) {
        trr_status st = trr_buffer_read(owner_of(f, b), f->buf[b], 0, f->readback, f->size[b]);
        FZ_ASSERT(f, st == TRR_OK, "reading buffer %d back: %s", b, trr_last_error(owner_of(f, b)));
        for (size_t i = 0; i < f->size[b]; i++) {
            if (b == out_b && out_mask && out_mask[i]) continue;
            FZ_ASSERT(f, f->readback[i] == f->shadow[b][i],
                      "%s: byte %zu of buffer %d (%zu bytes) changed from 0x%02x to 0x%02x", why, i, b, f->size[b],
                      f->shadow[b][i], f->readback[i]);
        }
        if (b == out_b) memcpy(f->shadow[b], f->readback, f->size[b]);
    }
}

static void setup_phase(fuzz *f, const char *device, uint64_t seed) {
    memset(f->buf, 0, sizeof f->buf);
    f->ops_accepted = f->ops_rejected = f->values_checked = 0;
    f->timer_running = 0;
    memset(f->rejected_by, 0, sizeof f->rejected_by);
    f->device = device;
    f->seed = seed;
    f->rng = seed;
    f->call = -1;
    snprintf(f->what, sizeof f->what, "setup");
    cr_assert_eq(trr_context_create(device, &f->ctx), TRR_OK, "%s: %s", device, trr_last_error(NULL));
    cr_assert_eq(trr_context_create("cpu", &f->other), TRR_OK, "cpu: %s", trr_last_error(NULL));
    const size_t sizes[N_BUF] = {16384, 16384, 1 + (size_t)rnd(f, 4096), 1 + (size_t)rnd(f, 64), 4096};
    for (int b = 0; b < N_BUF; b++) {
        f->size[b] = sizes[b];
        cr_assert_eq(trr_buffer_create(owner_of(f, b), sizes[b], &f->buf[b]), TRR_OK, "%s",
                     trr_last_error(owner_of(f, b)));
        f->shadow[b] = malloc(sizes[b]);
        cr_assert(f->shadow[b]);
        for (size_t i = 0; i < sizes[b]; i++) f->shadow[b][i] = trr_rng_byte(&f->rng);
        push_shadow(f, b);
    }
    static const int field_values[] = {0, 0, 0, 1, 2, 3, 4, 8, 16, 32, 64, 128, 256, 1024, 65536};
    for (int c = 0; c < 6; c++) {
        int *fields = &f->configs[c].block_m;
        for (size_t i = 0; i < sizeof f->configs[c] / sizeof(int); i++)
            fields[i] = field_values[rnd(f, sizeof field_values / sizeof field_values[0])];
        f->configs[c].variant = chance(f, 70) ? 0 : (int)rnd(f, 10);
    }
}

static void teardown_phase(fuzz *f) {
    for (int b = 0; b < N_BUF; b++) {
        trr_buffer_destroy(f->buf[b]);
        free(f->shadow[b]);
    }
    trr_context_destroy(f->ctx);
    trr_context_destroy(f->other);
    f->ctx = f->other = NULL;
}

/* ---- views ---- */

static size_t dtype_bytes(trr_dtype dt) {
    size_t es = 0;
    return trr_dtype_size(dt, &es) == TRR_OK ? es : 1;
}

/* Elements a well-formed view spans (0 when empty). */
static int64_t span_of(const trr_tensor *t) {
    int64_t ext = 1;
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] == 0) return 0;
        ext += (t->shape[i] - 1) * t->strides[i];
    }
    return ext;
}

/* Puts t somewhere: mostly where it fits in one of the context's buffers, sometimes anywhere. */
static void place(fuzz *f, trr_tensor *t) {
    const size_t es = dtype_bytes(t->dtype);
    const size_t bytes = (size_t)span_of(t) * es;
    int b = chance(f, 80) ? (int)rnd(f, 2) : (int)rnd(f, N_BUF);
    t->buffer = f->buf[b];
    if (bytes <= f->size[b] && chance(f, 95)) {
        size_t slots = (f->size[b] - bytes) / es + 1;
        t->offset = (size_t)rnd(f, slots) * es;
    } else {
        t->offset = odd_size(f, f->size[b]);
    }
}

static void packed(trr_tensor *t, trr_dtype dt, int nd, const int64_t *shape, int pad) {
    memset(t, 0, sizeof *t);
    t->dtype = dt;
    t->ndim = nd;
    for (int i = 0; i < nd; i++) t->shape[i] = shape[i];
    t->strides[nd - 1] = 1;
    for (int i = nd - 2; i >= 0; i--) t->strides[i] = (shape[i + 1] > 0 ? shape[i + 1] : 1) * t->strides[i + 1] + pad;
}

static int64_t small_dim(fuzz *f, int64_t hi) { return chance(f, 6) ? 0 : 1 + (int64_t)rnd(f, (uint64_t)hi); }

static const trr_op_signature *pick_signature(fuzz *f, trr_op op) {
    const trr_op_desc *d = trr_op_desc_get(op);
    return &d->signatures[rnd(f, (uint64_t)d->n_signatures)];
}

/* One op call's arguments: a valid call for op, then zero or more mutations. */
typedef struct op_args {
    trr_op op;
    trr_tensor t[TRR_SLOTS];  /* x, y, z, u (op_table.h's slots: u is layer_norm's b) */
    int present[TRR_SLOTS];   /* 0: pass NULL */
    double eps;       /* the norms' eps, when has_eps */
    int has_eps;      /* 0: the op's default (trr_op_run without it; the named functions take the default) */
    trr_epilogue epi;
    float alpha;
    unsigned flags;
    int via_run;      /* trr_op_run rather than the named function */
    int null_params;  /* trr_op_run with params NULL */
    int null_operands;
    trr_context *ctx; /* the context passed */
} op_args;

static trr_op pick_op(fuzz *f) { return (trr_op)rnd(f, TRR_OP_COUNT); }

/* Slots of the views a mutation may touch: the fourth (u) only for the op that has it, so the other ops draw
 * as they did before the slot existed. */
static int slot_count(trr_op op) {
    const trr_op_desc *d = trr_op_desc_get(op);
    return d && d->operand[TRR_SLOT_U].name ? TRR_SLOTS : 3;
}

static void make_valid(fuzz *f, op_args *a) {
    const trr_op_desc *d = trr_op_desc_get(a->op);
    const trr_op_signature *s = pick_signature(f, a->op);
    int pad = chance(f, 30) ? (int)rnd(f, 4) : 0;
    switch (d->shape) {
    case TRR_SHAPE_ELEMENTWISE: {
        int nd = 1 + (int)rnd(f, 3);
        int64_t shape[3];
        for (int i = 0; i < nd; i++) shape[i] = small_dim(f, nd == 1 ? 300 : 10);
        for (int v = 0; v < 3; v++) packed(&a->t[v], v == 2 ? s->out : s->in, nd, shape, chance(f, 30) ? pad : 0);
        break;
    }
    case TRR_SHAPE_PLANES: {
        int64_t img[3] = {3, small_dim(f, 12), small_dim(f, 12)};
        packed(&a->t[0], s->in, 3, img, pad);
        packed(&a->t[2], s->out, 2, img + 1, chance(f, 50) ? pad : 0);
        break;
    }
    case TRR_SHAPE_ROWS: {
        int64_t shape[2] = {small_dim(f, 6), small_dim(f, 40)};
        packed(&a->t[0], s->in, 2, shape, pad);
        packed(&a->t[2], s->out, 2, shape, chance(f, 50) ? pad : 0);
        break;
    }
    case TRR_SHAPE_ROW_NORM: {
        /* x and y [M,N] with padded rows; w and b [N] at element strides 1 to 3 */
        int64_t shape[2] = {small_dim(f, 6), small_dim(f, 40)};
        packed(&a->t[0], s->in, 2, shape, pad);
        packed(&a->t[2], s->out, 2, shape, chance(f, 50) ? pad : 0);
        for (int v = 1; v < TRR_SLOTS; v += 2) {
            if (!d->operand[v].name) continue;
            packed(&a->t[v], s->in, 1, shape + 1, 0);
            a->t[v].strides[0] = 1 + (int64_t)rnd(f, 3);
        }
        static const double eps[] = {0.0, 1e-6, 1e-5, 0.5};
        a->has_eps = chance(f, 70);
        a->eps = a->has_eps ? eps[rnd(f, sizeof eps / sizeof eps[0])] : d->params[TRR_NORM_PARAM_EPS].default_value;
        break;
    }
    case TRR_SHAPE_ATTENTION: {
        /* q and o [B,Hq,Sq,D], k and v [B,Hkv,Skv,D], Hq a multiple of Hkv, padded rows; lse is left out (the
         * named call passes NULL for it), so o is the one output */
        const int64_t b = small_dim(f, 2), hkv = 1 + (int64_t)rnd(f, 2), hq = hkv * (1 + (int64_t)rnd(f, 3));
        int64_t qs[4] = {b, hq, small_dim(f, 9), 1 + (int64_t)rnd(f, 16)};
        int64_t ks[4] = {b, hkv, small_dim(f, 9), qs[3]};
        packed(&a->t[TRR_SLOT_X], s->in, 4, qs, pad);
        packed(&a->t[TRR_SLOT_Z], s->out, 4, qs, chance(f, 50) ? pad : 0);
        packed(&a->t[TRR_SLOT_Y], s->in, 4, ks, chance(f, 50) ? pad : 0);
        packed(&a->t[TRR_SLOT_U], s->in, 4, ks, chance(f, 50) ? pad : 0);
        break;
    }
    case TRR_SHAPE_ROW_REDUCE: {
        int64_t shape[2] = {small_dim(f, 8), small_dim(f, 40)};
        packed(&a->t[0], s->in, 2, shape, pad);
        packed(&a->t[2], s->out, 1, shape, 0);
        a->t[2].strides[0] = 1 + (int64_t)rnd(f, 3);
        break;
    }
    case TRR_SHAPE_MATMUL: {
        int64_t m = small_dim(f, 20), n = small_dim(f, 20), k = small_dim(f, 20);
        const int c_trans = chance(f, 12);
        if (c_trans && chance(f, 50)) m = 1; /* a "transposed" C is a valid view only with one row or column */
        if (c_trans && chance(f, 30)) n = 1;
        int64_t sa[2] = {m, k}, sb[2] = {k, n}, sc[2] = {m, n};
        packed(&a->t[0], s->in, 2, sa, pad);
        packed(&a->t[1], trr_signature_input(s, TRR_SLOT_Y), 2, sb, chance(f, 50) ? pad : 0);
        packed(&a->t[2], s->out, 2, sc, chance(f, 50) ? pad : 0);
        for (int v = 0; v < 3; v++) {
            /* stored transposed: element (i, j) at j * ld + i, ld >= rows; C too now and then, which is wrong
             * unless it has one row (or one column) */
            if (v == 2 ? c_trans : chance(f, 35)) {
                a->t[v].strides[0] = 1;
                a->t[v].strides[1] = (a->t[v].shape[0] > 0 ? a->t[v].shape[0] : 1) + (int64_t)rnd(f, 3);
            }
        }
        a->epi = (trr_epilogue)rnd(f, TRR_EPI_COUNT);
        a->alpha = trr_rng_unit(&f->rng);
        a->flags = chance(f, 10) ? TRR_MATMUL_ALLOW_TF32 : 0;
        break;
    }
    }
    for (int v = 0; v < TRR_SLOTS; v++)
        if (d->operand[v].name && !d->operand[v].optional) place(f, &a->t[v]);
    /* an output that is exactly an input: allowed for the ops that read each element before writing it */
    if (chance(f, 15)) {
        int v = d->n_inputs == 2 && chance(f, 50) ? 1 : 0;
        if (a->t[v].dtype == a->t[2].dtype) {
            trr_tensor z = a->t[v];
            a->t[2] = z;
        }
    }
    for (int v = 0; v < TRR_SLOTS; v++) a->present[v] = d->operand[v].name != NULL && !d->operand[v].optional;
}

static void mutate(fuzz *f, op_args *a) {
    const int n_slots = slot_count(a->op);
    int v = (int)rnd(f, (uint64_t)n_slots);
    trr_tensor *t = &a->t[v];
    switch (rnd(f, 18)) {
    case 0: t->dtype = chance(f, 50) ? (trr_dtype)rnd(f, TRR_DTYPE_COUNT) : (trr_dtype)odd_int(f); break;
    case 1: t->ndim = chance(f, 50) ? (int)rnd(f, 5) : odd_int(f); break;
    case 2:
    case 3: t->shape[rnd(f, 3)] = chance(f, 50) ? odd_i64(f) : add_wrap(t->shape[rnd(f, 3)], (int64_t)rnd(f, 3) - 1); break;
    case 4:
    case 5: t->strides[rnd(f, 3)] = chance(f, 50) ? odd_i64(f) : (int64_t)rnd(f, 5) - 1; break;
    case 6: t->offset = chance(f, 50) ? odd_size(f, 16384) : t->offset + 1 + rnd(f, 4); break;
    case 7: t->buffer = chance(f, 30) ? NULL : f->buf[rnd(f, N_BUF)]; break;
    case 8: /* an optional output (attention's lse) stays out: the checks below watch one output */
        if (!trr_op_desc_get(a->op) || !trr_op_desc_get(a->op)->operand[v].optional) a->present[v] = !a->present[v];
        break;
    case 9: a->op = chance(f, 60) ? pick_op(f) : (trr_op)odd_int(f); break;
    case 10: a->epi = chance(f, 50) ? (trr_epilogue)rnd(f, TRR_EPI_COUNT) : (trr_epilogue)odd_int(f); break;
    case 11: {
        static const float odd[] = {NAN, INFINITY, -INFINITY, 0.0f, -1e30f, 1e-45f};
        a->alpha = odd[rnd(f, sizeof odd / sizeof odd[0])];
        break;
    }
    case 12: a->flags = chance(f, 50) ? (unsigned)rnd(f, 4) : (unsigned)trr_rng_next(&f->rng); break;
    case 13: /* every dimension huge: the stride and extent arithmetic must not overflow */
        t->ndim = 3;
        for (int i = 0; i < 3; i++) t->shape[i] = chance(f, 70) ? odd_i64(f) : 1 + (int64_t)rnd(f, 4);
        for (int i = 0; i < 3; i++) t->strides[i] = chance(f, 70) ? odd_i64(f) : 1 + (int64_t)rnd(f, 4);
        break;
    case 14: a->ctx = chance(f, 50) ? NULL : f->other; break;
    case 15:
    case 16: { /* one huge dimension (and maybe stride) in every view alike, so the shape checks pass and the
                * stride, extent and bounds arithmetic sees it */
        int j = (int)rnd(f, 3);
        int64_t n = chance(f, 80) ? odd_i64(f) : ((int64_t)1 << 31) / (1 + (int64_t)rnd(f, 8));
        int64_t st = chance(f, 50) ? odd_i64(f) : 0;
        for (int u = 0; u < n_slots; u++) {
            if (chance(f, 30)) a->t[u].ndim = 3;
            a->t[u].shape[j] = n;
            if (st) a->t[u].strides[j] = st;
        }
        break;
    }
    default: { /* one view overlapping another, off by a few elements */
        int u = (int)rnd(f, (uint64_t)n_slots);
        t->buffer = a->t[u].buffer;
        t->offset = a->t[u].offset + dtype_bytes(t->dtype) * rnd(f, 4);
        break;
    }
    }
}

/* ---- preparing inputs and checking an accepted op ---- */

/* Calls fn(f, t, element index) for every element of a well-formed view in logical (row-major) order. */
typedef void (*elem_fn)(fuzz *f, const trr_tensor *t, int64_t elem, int64_t logical, void *user);
static void for_each_element(fuzz *f, const trr_tensor *t, elem_fn fn, void *user) {
    int64_t base = (int64_t)(t->offset / dtype_bytes(t->dtype));
    int64_t n0 = t->shape[0], n1 = t->ndim > 1 ? t->shape[1] : 1, n2 = t->ndim > 2 ? t->shape[2] : 1;
    int64_t n3 = t->ndim > 3 ? t->shape[3] : 1;
    int64_t s0 = t->strides[0], s1 = t->ndim > 1 ? t->strides[1] : 0, s2 = t->ndim > 2 ? t->strides[2] : 0;
    int64_t s3 = t->ndim > 3 ? t->strides[3] : 0;
    int64_t logical = 0;
    for (int64_t i = 0; i < n0; i++)
        for (int64_t j = 0; j < n1; j++)
            for (int64_t k = 0; k < n2; k++)
                for (int64_t l = 0; l < n3; l++) fn(f, t, base + i * s0 + j * s1 + k * s2 + l * s3, logical++, user);
}

/* How an accepted call's inputs are drawn. A matmul's relative (Frobenius) bound only means something when the
 * products do not cancel: 20 random-signed terms summing to 0.008, the one output a ReLU left non-zero, is off
 * by 1.1e-5 relative in correct f32 arithmetic (seed 219718911). So a matmul takes magnitudes in [0.25, 1],
 * every term of one output with one sign: A positive, B's odd columns negative (both branches of every
 * epilogue are still reached), or all of B positive when A and B share a buffer (an aliased element is written
 * once, for both). */
typedef struct nice_inputs {
    trr_op op;
    int matmul_b;          /* this tensor is matmul's B */
    int signed_columns;    /* B's odd columns negative */
    int64_t cols;          /* B's last dimension */
} nice_inputs;

static void put_nice(fuzz *f, const trr_tensor *t, int64_t elem, int64_t logical, void *user) {
    const nice_inputs *n = user;
    uint8_t *mem = f->shadow[own_index(f, t->buffer)];
    float v = trr_rng_input(&f->rng, n->op);
    if (n->op == TRR_OP_MATMUL) {
        v = 0.625f + 0.375f * v;
        if (n->matmul_b && n->signed_columns && n->cols > 0 && (logical % n->cols) % 2) v = -v;
    }
    if (t->dtype == TRR_U8) mem[elem] = trr_rng_byte(&f->rng);
    else trr_dtype_store_f32(mem, t->dtype, elem, v);
}

static void put_poison(fuzz *f, const trr_tensor *t, int64_t elem, int64_t logical, void *user) {
    (void)logical, (void)user;
    uint8_t *mem = f->shadow[own_index(f, t->buffer)];
    const uint32_t p32 = TRR_CONF_POISON_F32;
    const uint16_t p16 = (uint16_t)trr_conf_poison(t->dtype); /* f16 or bf16 */
    if (t->dtype == TRR_F32) memcpy(mem + elem * 4, &p32, 4);
    else if (t->dtype == TRR_F16 || t->dtype == TRR_BF16) memcpy(mem + elem * 2, &p16, 2);
    else mem[elem] = trr_rng_byte(&f->rng);
}

static void mark(fuzz *f, const trr_tensor *t, int64_t elem, int64_t logical, void *user) {
    (void)f, (void)logical;
    const size_t es = dtype_bytes(t->dtype);
    memset((uint8_t *)user + elem * (int64_t)es, 1, es);
}

typedef struct gather_ctx {
    const uint8_t *src;
    uint8_t *dst;
} gather_ctx;

static void gather_one(fuzz *f, const trr_tensor *t, int64_t elem, int64_t logical, void *user) {
    (void)f;
    gather_ctx *g = user;
    const size_t es = dtype_bytes(t->dtype);
    memcpy(g->dst + logical * (int64_t)es, g->src + elem * (int64_t)es, es);
}

static int64_t count_of(const trr_tensor *t) {
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

static uint8_t *gather(fuzz *f, const trr_tensor *t, const uint8_t *mem) {
    const size_t es = dtype_bytes(t->dtype);
    uint8_t *out = malloc((size_t)count_of(t) * es + 1);
    cr_assert(out);
    gather_ctx g = {mem, out};
    for_each_element(f, t, gather_one, &g);
    return out;
}

/* The output of an accepted call against the float64 reference, both in the views' logical order: the inputs
 * are gathered from the shadows into packed arrays, the reference runs on a packed call built here (not by
 * the front-end), and the conformance suite's bounds judge the output gathered from the device's bytes. */
static void check_values(fuzz *f, const op_args *a, const uint8_t *inputs_before[TRR_SLOTS], const uint8_t *out_bytes) {
    const trr_op_desc *d = trr_op_desc_get(a->op);
    const trr_tensor *x = &a->t[0], *y = &a->t[1], *z = &a->t[2], *u = &a->t[TRR_SLOT_U];
    uint8_t *px = gather(f, x, inputs_before[0]);
    uint8_t *py = d->operand[TRR_SLOT_Y].name ? gather(f, y, inputs_before[1]) : NULL;
    uint8_t *pu = d->operand[TRR_SLOT_U].name ? gather(f, u, inputs_before[TRR_SLOT_U]) : NULL;
    uint8_t *pz = gather(f, z, out_bytes);
    trr_call c;
    memset(&c, 0, sizeof c);
    c.op = a->op;
    c.slices = 1;
    c.x = (trr_operand){.mem = px, .dtype = x->dtype};
    if (py) c.y = (trr_operand){.mem = py, .dtype = y->dtype};
    if (pu) c.u = (trr_operand){.mem = pu, .dtype = u->dtype};
    c.z = (trr_operand){.mem = pz, .dtype = z->dtype};
    trr_case tc;
    memset(&tc, 0, sizeof tc);
    switch (d->shape) {
    case TRR_SHAPE_ELEMENTWISE:
        c.rows = 1, c.cols = count_of(x);
        c.x.stride0 = c.y.stride0 = c.z.stride0 = c.cols;
        break;
    case TRR_SHAPE_PLANES:
        c.rows = x->shape[1], c.cols = x->shape[2];
        c.x.stride0 = c.rows * c.cols, c.x.stride1 = c.cols, c.z.stride0 = c.cols;
        break;
    case TRR_SHAPE_ROWS: c.rows = x->shape[0], c.cols = x->shape[1], c.x.stride0 = c.z.stride0 = c.cols; break;
    case TRR_SHAPE_ATTENTION: break;
    case TRR_SHAPE_ROW_REDUCE: c.rows = x->shape[0], c.cols = x->shape[1], c.x.stride0 = c.cols, c.z.stride0 = 1; break;
    case TRR_SHAPE_ROW_NORM: /* gathered: x and y packed rows, w and b packed vectors */
        c.rows = x->shape[0], c.cols = x->shape[1], c.x.stride0 = c.z.stride0 = c.cols;
        c.y.stride0 = c.u.stride0 = 1;
        c.params[TRR_NORM_PARAM_EPS] = (double)(float)a->eps; /* f32, as the op resolves it */
        break;
    case TRR_SHAPE_MATMUL: {
        /* rank 3 is a batch [B, rows, cols]; an input's batch of one (or a 2-D input) is shared by every batch */
        const int xb = x->ndim == 3, yb = y->ndim == 3;
        c.rows = x->shape[xb], c.k = x->shape[xb + 1], c.cols = y->shape[yb + 1];
        c.batch = z->ndim == 3 ? z->shape[0] : 1;
        c.x.stride0 = c.k, c.y.stride0 = c.cols, c.z.stride0 = c.cols;
        c.x.batch_stride = xb && x->shape[0] > 1 ? c.rows * c.k : 0;
        c.y.batch_stride = yb && y->shape[0] > 1 ? c.k * c.cols : 0;
        c.z.batch_stride = c.rows * c.cols;
        c.epilogue = a->epi, c.alpha = a->alpha;
        /* the per-tensor scales of 8-bit float inputs: the fuzzer leaves them at their default */
        c.params[TRR_MATMUL_PARAM_SCALE_A] = c.params[TRR_MATMUL_PARAM_SCALE_B] = 1.0;
        tc.batch = z->ndim == 3 ? c.batch : 0;
        break;
    }
    }
    tc.op = a->op, tc.in_dtype = x->dtype, tc.out_dtype = z->dtype, tc.rows = c.rows, tc.cols = c.cols;
    tc.m = c.rows, tc.n = c.cols, tc.k = c.k, tc.epilogue = c.epilogue, tc.alpha = c.alpha;
    const int64_t n_out = (c.batch > 1 ? c.batch : 1) * c.rows * (a->op == TRR_OP_ROW_SUM ? 1 : c.cols);
    double *ref = malloc((size_t)(n_out > 0 ? n_out : 1) * sizeof *ref);
    cr_assert(ref);
    FZ_ASSERT(f, trr_reference_run(&c, ref) == TRR_OK, "reference: %s", trr_last_error(NULL));
    trr_conf_check_input in = {.tcase = &tc, .call = &c, .before = pz, .after = pz,
                               .bytes = (size_t)n_out * dtype_bytes(z->dtype), .ref = ref};
    trr_conf_result res;
    memset(&res, 0, sizeof res);
    FZ_ASSERT(f, trr_conf_check(&in, &res) == TRR_OK, "checker: %s", trr_last_error(NULL));
    FZ_ASSERT(f, res.outcome == TRR_CONF_PASS, "accepted call's output is wrong: %s", res.message);
    f->values_checked++;
    free(ref);
    free(px);
    free(py);
    free(pu);
    free(pz);
}

/* The tensor passed for slot v: NULL where it is not present. */
static const trr_tensor *slot_arg(const op_args *a, int v) { return a->present[v] ? &a->t[v] : NULL; }

static trr_status call_op(const op_args *a) {
    const trr_tensor *x = slot_arg(a, 0), *y = slot_arg(a, 1), *z = slot_arg(a, 2), *u = slot_arg(a, TRR_SLOT_U);
    if (a->via_run) {
        const trr_tensor *ops[TRR_SLOTS] = {NULL};
        const trr_op_desc *d = trr_op_desc_get(a->op);
        int n_in = d ? d->n_inputs : 1;
        /* the public order: the inputs, then the outputs (an optional one not present is NULL) */
        for (int i = 0; i < n_in + (d ? trr_op_outputs(d) : 1); i++) ops[i] = slot_arg(a, trr_slot_of_operand(n_in, i));
        /* the old fields as the named parameters matmul declares; on other ops a set one is a name they lack */
        trr_op_params p;
        memset(&p, 0, sizeof p);
        const int mm = d && d->shape == TRR_SHAPE_MATMUL;
        if (mm || a->epi != TRR_EPI_NONE) trr_op_params_set(&p, "epilogue", (double)a->epi);
        if (mm ? a->epi == TRR_EPI_LEAKY_RELU : a->alpha != 0.0f) trr_op_params_set(&p, "alpha", (double)a->alpha);
        /* flags beyond TRR_MATMUL_ALLOW_TF32 become a bool out of range, which must be rejected as they were */
        if (mm || a->flags) trr_op_params_set(&p, "allow_tf32", (double)a->flags);
        if (a->has_eps) trr_op_params_set(&p, "eps", a->eps);
        return trr_op_run(a->ctx, a->op, a->null_operands ? NULL : ops, a->null_params ? NULL : &p);
    }
    switch (a->op) {
    case TRR_OP_COPY: return trr_copy(a->ctx, x, z);
    case TRR_OP_ADD: return trr_add(a->ctx, x, y, z);
    case TRR_OP_GELU: return trr_gelu(a->ctx, x, z);
    case TRR_OP_SILU: return trr_silu(a->ctx, x, z);
    case TRR_OP_RGB_TO_GREY: return trr_rgb_to_grey(a->ctx, x, z);
    case TRR_OP_SOFTMAX: return trr_softmax(a->ctx, x, z);
    case TRR_OP_ROW_SUM: return trr_row_sum(a->ctx, x, z);
    case TRR_OP_RMS_NORM: return trr_rms_norm(a->ctx, x, y, z, (float)a->eps);
    case TRR_OP_LAYER_NORM: return trr_layer_norm(a->ctx, x, y, u, z, (float)a->eps);
    case TRR_OP_ATTENTION: return trr_attention(a->ctx, x, y, u, z, NULL, 0.0f, 0);
    case TRR_OP_CAST: return trr_cast(a->ctx, x, z);
    default: return trr_matmul(a->ctx, x, y, z, a->epi, a->alpha, a->flags);
    }
}

static void fuzz_op(fuzz *f) {
    op_args a;
    memset(&a, 0, sizeof a);
    a.op = pick_op(f);
    a.ctx = f->ctx;
    make_valid(f, &a);
    a.via_run = chance(f, 50);
    a.null_params = a.via_run && chance(f, 10);
    a.null_operands = a.via_run && chance(f, 2);
    int n_mut = chance(f, 45) ? 0 : 1 + (int)rnd(f, 3);
    for (int i = 0; i < n_mut; i++) mutate(f, &a);
    if (!a.via_run && (unsigned)a.op >= TRR_OP_COUNT) a.via_run = 1;
    /* what the call really passes: no params means none; the named non-matmul functions take none */
    if (a.null_params || (!a.via_run && a.op != TRR_OP_MATMUL)) a.epi = TRR_EPI_NONE, a.alpha = 0.0f, a.flags = 0;
    /* eps as the call passes it: the named norms always pass theirs, trr_op_run only when set (else the default) */
    const trr_op_desc *dn = trr_op_desc_get(a.op);
    const int norm = dn && dn->shape == TRR_SHAPE_ROW_NORM;
    if (!norm) a.has_eps = 0, a.eps = 0;
    else if (a.via_run && (a.null_params || !a.has_eps)) a.has_eps = 0, a.eps = dn->params[TRR_NORM_PARAM_EPS].default_value;
    else if (!a.via_run) a.has_eps = 1;

    char desc[900];
    size_t used = (size_t)snprintf(desc, sizeof desc, "%s op %d epi %d alpha %g flags 0x%x eps %g ctx %s%s%s",
                                   a.via_run ? "trr_op_run" : "named", (int)a.op, (int)a.epi, (double)a.alpha, a.flags,
                                   a.eps,
                                   a.ctx == f->ctx ? "own" : a.ctx ? "other" : "NULL", a.null_params ? " params NULL" : "",
                                   a.null_operands ? " operands NULL" : "");
    const char *names[TRR_SLOTS] = {"x", "y", "z", "u", "w"};
    for (int v = 0; v < slot_count(a.op) && used < sizeof desc; v++) {
        describe_tensor(desc + used, sizeof desc - used, names[v], a.present[v] ? &a.t[v] : NULL, f);
        used = strlen(desc);
    }

    /* The front-end's own verdict, to fill the inputs of a call it will accept with well-conditioned values and
     * to poison its output. */
    const trr_op_desc *d = trr_op_desc_get(a.op);
    int predicted_ok = 0, prepped = 0, empty = 0;
    int all_present = 1;
    for (int v = 0; d && v < TRR_SLOTS; v++) all_present &= !d->operand[v].name || d->operand[v].optional || a.present[v];
    if (d && (a.ctx == f->ctx || a.ctx == f->other) && all_present && !a.null_operands) {
        trr_call call;
        const trr_tensor *slots[TRR_SLOTS];
        for (int v = 0; v < TRR_SLOTS; v++) slots[v] = d->operand[v].name && a.present[v] ? &a.t[v] : NULL;
        predicted_ok = trr_call_build_slots(a.ctx, a.op, slots, a.epi, a.alpha, a.flags, &call, &empty) == TRR_OK;
        /* a leaky_relu slope far from 1 takes f16 results past their range, which the bounds do not model */
        const int nice_alpha = a.epi != TRR_EPI_LEAKY_RELU || fabsf(a.alpha) <= 1.0f;
        /* attention's values are the conformance suite's to check (its checker takes two outputs); here its
         * calls are judged by what they accept and what they write where */
        if (predicted_ok && !empty && nice_alpha && d->shape != TRR_SHAPE_ATTENTION && chance(f, 85)) {
            int zb = own_index(f, a.t[2].buffer);
            for_each_element(f, &a.t[2], put_poison, NULL);
            for (int v = 0; v < TRR_SLOTS; v++) {
                if (v == TRR_SLOT_Z || !d->operand[v].name) continue;
                nice_inputs n = {.op = a.op, .matmul_b = a.op == TRR_OP_MATMUL && v == 1,
                                 .signed_columns = a.t[0].buffer != a.t[1].buffer,
                                 .cols = a.t[v].shape[a.t[v].ndim > 0 ? a.t[v].ndim - 1 : 0]};
                for_each_element(f, &a.t[v], put_nice, &n);
            }
            push_shadow(f, zb);
            for (int v = 0; v < TRR_SLOTS; v++)
                if (v != TRR_SLOT_Z && d->operand[v].name) push_shadow(f, own_index(f, a.t[v].buffer));
            prepped = 1;
        }
    }
    say(f, "%s%s", desc, prepped ? " (inputs prepared)" : "");

    /* the inputs as the call will read them (an exactly aliased output overwrites its input) */
    uint8_t *before[TRR_SLOTS] = {NULL, NULL, NULL, NULL};
    if (prepped)
        for (int v = 0; v < TRR_SLOTS; v++) {
            if (v == TRR_SLOT_Z || !d->operand[v].name) continue;
            int b = own_index(f, a.t[v].buffer);
            before[v] = malloc(f->size[b]);
            cr_assert(before[v]);
            memcpy(before[v], f->shadow[b], f->size[b]);
        }

    plant_stale(f);
    trr_status st = call_op(&a);
    if (st != TRR_OK) {
        f->ops_rejected++;
        f->rejected_by[(unsigned)st % 64]++;
        check_failure(f, st, a.ctx);
        verify_buffers(f, -1, NULL, "rejected call");
    } else {
        f->ops_accepted++;
        FZ_ASSERT(f, predicted_ok, "accepted a call that trr_call_build rejects");
        int zb = index_of(f, a.t[2].buffer);
        FZ_ASSERT(f, zb >= 0 && owner_of(f, zb) == a.ctx, "accepted an output in buffer %d of another context", zb);
        uint8_t *mask = calloc(f->size[zb], 1);
        cr_assert(mask);
        /* an empty reduction (matmul K = 0, row_sum N = 0) writes the identity 0 into its non-empty output */
        if (empty != TRR_CALL_NOTHING) for_each_element(f, &a.t[2], mark, mask);
        verify_buffers(f, zb, mask, empty ? "accepted empty call" : "accepted call, outside its output view");
        if (empty == TRR_CALL_IDENTITY)
            for (size_t i = 0; i < f->size[zb]; i++)
                FZ_ASSERT(f, !mask[i] || f->shadow[zb][i] == 0, "empty reduction: output byte %zu is 0x%02x, not 0", i,
                          f->shadow[zb][i]);
        if (prepped) {
            const uint8_t *in[TRR_SLOTS] = {before[0], before[1], NULL, before[TRR_SLOT_U]};
            check_values(f, &a, in, f->shadow[zb]);
        }
        free(mask);
    }
    for (int v = 0; v < TRR_SLOTS; v++) free(before[v]);
}

/* ---- buffer calls ---- */

static int pick_buffer(fuzz *f, trr_buffer **out) {
    if (chance(f, 4)) {
        *out = NULL;
        return -1;
    }
    int b = (int)rnd(f, N_BUF);
    *out = f->buf[b];
    return b;
}

static trr_context *pick_ctx(fuzz *f) { return chance(f, 90) ? f->ctx : chance(f, 50) ? f->other : NULL; }

static void fuzz_buffer_io(fuzz *f) {
    trr_buffer *dst, *src;
    int db = pick_buffer(f, &dst), sb = pick_buffer(f, &src);
    trr_context *c = pick_ctx(f);
    size_t near = db >= 0 ? f->size[db] : 64;
    size_t off = chance(f, 70) ? (size_t)rnd(f, near + 1) : odd_size(f, near);
    size_t bytes = chance(f, 70) ? (size_t)rnd(f, near - (off < near ? off : near) + 2) : odd_size(f, near);
    for (size_t i = 0; i < HOST_BYTES; i++) f->host_a[i] = trr_rng_byte(&f->rng);
    memset(f->host_b, 0x5c, HOST_BYTES);
    const int kind = (int)rnd(f, 4);
    const char *kinds[4] = {"write", "read", "copy", "fill"};
    const int null_host = chance(f, 5);
    size_t soff = chance(f, 70) && sb >= 0 ? (size_t)rnd(f, f->size[sb] + 1) : odd_size(f, 4096);
    uint8_t value = trr_rng_byte(&f->rng);
    say(f, "buffer_%s ctx %s dst %d off %zu bytes %zu src %d src_off %zu%s", kinds[kind],
        c == f->ctx ? "own" : c ? "other" : "NULL", db, off, bytes, sb, soff, null_host ? " host NULL" : "");
    plant_stale(f);
    trr_status st;
    switch (kind) {
    case 0: st = trr_buffer_write(c, dst, off, null_host ? NULL : f->host_a, bytes); break;
    case 1: st = trr_buffer_read(c, dst, off, null_host ? NULL : f->host_b, bytes); break;
    case 2: st = trr_buffer_copy(c, dst, off, src, soff, bytes); break;
    default: st = trr_buffer_fill(c, dst, off, bytes, value); break;
    }
    if (st != TRR_OK) {
        check_failure(f, st, c);
        if (kind == 1)
            for (size_t i = 0; i < HOST_BYTES; i++)
                FZ_ASSERT(f, f->host_b[i] == 0x5c, "a rejected read wrote host byte %zu", i);
        verify_buffers(f, -1, NULL, "rejected buffer call");
        return;
    }
    FZ_ASSERT(f, db >= 0 && owner_of(f, db) == c, "accepted with buffer %d on the wrong context", db);
    FZ_ASSERT(f, off <= f->size[db] && bytes <= f->size[db] - off, "accepted a range past the end");
    switch (kind) {
    case 0: memcpy(f->shadow[db] + off, f->host_a, bytes); break;
    case 1:
        for (size_t i = 0; i < HOST_BYTES; i++)
            FZ_ASSERT(f, i < bytes ? f->host_b[i] == f->shadow[db][off + i] : f->host_b[i] == 0x5c,
                      "read: host byte %zu is 0x%02x", i, f->host_b[i]);
        break;
    case 2:
        FZ_ASSERT(f, sb >= 0 && owner_of(f, sb) == c && soff <= f->size[sb] && bytes <= f->size[sb] - soff,
                  "accepted a bad copy source");
        FZ_ASSERT(f, sb != db || soff + bytes <= off || off + bytes <= soff || bytes == 0, "accepted an overlapping copy");
        memcpy(f->shadow[db] + off, f->shadow[sb] + soff, bytes);
        break;
    default: memset(f->shadow[db] + off, value, bytes); break;
    }
    verify_buffers(f, -1, NULL, "accepted buffer call");
}

static void fuzz_buffer_create(fuzz *f) {
    trr_context *c = chance(f, 90) ? f->ctx : NULL;
    trr_device_info info;
    cr_assert_eq(trr_context_device(f->ctx, &info), TRR_OK);
    size_t sizes[] = {0, 1, 1 + (size_t)rnd(f, 4095), SIZE_MAX, SIZE_MAX - 4095, (size_t)1 << 62, (size_t)INT64_MAX,
                      (size_t)1 << 63, info.global_memory ? (size_t)info.global_memory + 1 : SIZE_MAX};
    size_t bytes = sizes[rnd(f, sizeof sizes / sizeof sizes[0])];
    int null_out = chance(f, 5);
    say(f, "buffer_create ctx %s bytes %zu%s", c ? "own" : "NULL", bytes, null_out ? " out NULL" : "");
    trr_buffer *b = NULL;
    plant_stale(f);
    trr_status st = trr_buffer_create(c, bytes, null_out ? NULL : &b);
    if (st != TRR_OK) {
        check_failure(f, st, c);
        FZ_ASSERT(f, b == NULL, "a failed create wrote its output");
        return;
    }
    FZ_ASSERT(f, bytes > 0 && bytes <= 4096, "accepted a buffer of %zu bytes", bytes);
    size_t got = 0;
    FZ_ASSERT(f, trr_buffer_size(b, &got) == TRR_OK && got == bytes, "size %zu", got);
    cr_assert_eq(trr_buffer_write(f->ctx, b, 0, f->host_a, bytes), TRR_OK);
    cr_assert_eq(trr_buffer_read(f->ctx, b, 0, f->host_b, bytes), TRR_OK);
    FZ_ASSERT(f, memcmp(f->host_a, f->host_b, bytes) == 0, "a new buffer does not read back what was written");
    cr_assert_eq(trr_buffer_destroy(b), TRR_OK);
}

/* ---- tensor helpers ---- */

static void fuzz_tensor_helpers(fuzz *f) {
    trr_buffer *b;
    pick_buffer(f, &b);
    size_t off = chance(f, 60) ? (size_t)rnd(f, 64) : odd_size(f, 4096);
    trr_dtype dt = chance(f, 80) ? (trr_dtype)rnd(f, TRR_DTYPE_COUNT) : (trr_dtype)odd_int(f);
    int64_t r = chance(f, 60) ? (int64_t)rnd(f, 50) : odd_i64(f), c = chance(f, 60) ? (int64_t)rnd(f, 50) : odd_i64(f);
    int64_t rs = chance(f, 50) ? 0 : chance(f, 50) ? add_wrap(c, (int64_t)rnd(f, 3) - 1) : odd_i64(f);
    int null_out = chance(f, 5);
    trr_tensor t, pre;
    memset(&pre, 0xa7, sizeof pre);
    t = pre;
    const int kind = (int)rnd(f, 3);
    say(f, "tensor_%s dt %d off %zu rows %lld cols %lld stride %lld%s", kind == 0 ? "1d" : kind == 1 ? "2d" : "transpose",
        (int)dt, off, (long long)r, (long long)c, (long long)rs, null_out ? " out NULL" : "");
    plant_stale(f);
    trr_status st;
    trr_tensor in;
    if (kind == 0) {
        st = trr_tensor_1d(b, off, dt, c, null_out ? NULL : &t);
    } else if (kind == 1) {
        st = trr_tensor_2d(b, off, dt, r, c, rs, null_out ? NULL : &t);
    } else {
        memset(&in, 0, sizeof in);
        in.buffer = b, in.offset = off, in.dtype = dt, in.ndim = chance(f, 80) ? 2 : odd_int(f);
        in.shape[0] = r, in.shape[1] = c, in.strides[0] = rs, in.strides[1] = 1;
        st = trr_tensor_transpose(chance(f, 5) ? NULL : &in, null_out ? NULL : &t);
    }
    if (st != TRR_OK) {
        check_failure(f, st, NULL);
        FZ_ASSERT(f, memcmp(&t, &pre, sizeof t) == 0, "a failed tensor helper wrote its output");
        return;
    }
    FZ_ASSERT(f, !null_out, "accepted a NULL output");
    if (kind == 0) {
        FZ_ASSERT(f, c >= 0 && (unsigned)dt < TRR_DTYPE_COUNT, "accepted length %lld dtype %d", (long long)c, (int)dt);
        FZ_ASSERT(f, t.ndim == 1 && t.shape[0] == c && t.strides[0] == 1 && t.buffer == b && t.offset == off, "1d view");
    } else if (kind == 1) {
        FZ_ASSERT(f, r >= 0 && c >= 0 && (unsigned)dt < TRR_DTYPE_COUNT && rs >= 0, "accepted a bad 2-D view");
        FZ_ASSERT(f, t.ndim == 2 && t.shape[0] == r && t.shape[1] == c && t.strides[1] == 1 && t.strides[0] >= 1 &&
                         t.strides[0] >= c && (rs == 0 || t.strides[0] == rs),
                  "2d view strides [%lld,%lld]", (long long)t.strides[0], (long long)t.strides[1]);
    } else {
        FZ_ASSERT(f, in.ndim == 2 && t.shape[0] == c && t.shape[1] == r && t.strides[0] == 1 && t.strides[1] == rs,
                  "transposed view");
    }
}

/* ---- configs, names, conversions, timers, contexts ---- */

static void fuzz_config(fuzz *f) {
    trr_op op = chance(f, 85) ? (trr_op)rnd(f, TRR_OP_COUNT) : (trr_op)odd_int(f);
    trr_context *c = chance(f, 95) ? f->ctx : NULL;
    trr_config cfg = f->configs[rnd(f, 6)];
    if (chance(f, 10)) (&cfg.block_m)[rnd(f, sizeof cfg / sizeof(int))] = odd_int(f);
    const int clear = chance(f, 35);
    if (chance(f, 20)) {
        trr_config last;
        say(f, "config_last");
        plant_stale(f);
        trr_status st = trr_config_last(chance(f, 90) ? f->ctx : NULL, chance(f, 90) ? &last : NULL);
        if (st != TRR_OK) check_failure(f, st, NULL); /* a const context: the thread's slot has it */
        return;
    }
    say(f, "config_override op %d ctx %s %s [%d %d %d %d %d %d %d %d %d]", (int)op, c ? "own" : "NULL",
        clear ? "clear" : "set", cfg.block_m, cfg.block_n, cfg.block_k, cfg.group_m, cfg.threads, cfg.stages,
        cfg.vector_width, cfg.split_k, cfg.variant);
    plant_stale(f);
    trr_status st = trr_config_override(c, op, clear ? NULL : &cfg);
    if (st != TRR_OK) {
        check_failure(f, st, c);
        return;
    }
    FZ_ASSERT(f, c && (unsigned)op < TRR_OP_COUNT, "accepted an override for op %d", (int)op);
}

static void fuzz_names(fuzz *f) {
    int v = chance(f, 50) ? (int)rnd(f, 50) - 5 : odd_int(f);
    const char *name = NULL;
    say(f, "names of %d", v);
    FZ_ASSERT(f, trr_status_name((trr_status)v) && *trr_status_name((trr_status)v), "status name");
    FZ_ASSERT(f, trr_status_message((trr_status)v) && *trr_status_message((trr_status)v), "status message");
    const int null_out = chance(f, 10);
    trr_status st;
    plant_stale(f);
    size_t es = 0;
    switch (rnd(f, 7)) {
    case 0:
        st = trr_dtype_size((trr_dtype)v, null_out ? NULL : &es);
        FZ_ASSERT(f, st != TRR_OK || (es >= 1 && es <= 4), "dtype size %zu", es);
        break;
    case 1: st = trr_dtype_name((trr_dtype)v, null_out ? NULL : &name); break;
    case 2: st = trr_op_name((trr_op)v, null_out ? NULL : &name); break;
    case 3: st = trr_epilogue_name((trr_epilogue)v, null_out ? NULL : &name); break;
    case 4: {
        trr_op_info info;
        memset(&info, 0, sizeof info);
        st = trr_op_get_info((trr_op)v, null_out ? NULL : &info);
        FZ_ASSERT(f, st != TRR_OK || (info.n_inputs >= 1 && info.n_inputs <= 3 && info.name && info.operands),
                  "op info");
        break;
    }
    case 5: {
        static const char *const words[] = {"copy", "add", "gelu", "silu", "rgb_to_grey", "softmax", "row_sum",
                                            "matmul", "", "matmu", "MATMUL", "copy ", "add\n", NULL};
        const char *w = words[rnd(f, sizeof words / sizeof words[0])];
        char longw[600];
        if (chance(f, 10)) {
            memset(longw, 'x', sizeof longw - 1);
            longw[sizeof longw - 1] = '\0';
            w = longw;
        }
        trr_op op = (trr_op)-7;
        st = trr_op_from_name(w, null_out ? NULL : &op);
        if (st == TRR_OK) {
            const char *back = NULL;
            FZ_ASSERT(f, trr_op_name(op, &back) == TRR_OK && !strcmp(back, w), "op name round trip of '%s'", w);
        }
        break;
    }
    default: {
        trr_backend_info bi;
        trr_device_info di;
        static const char *const backends[] = {"cpu", "opencl", "vulkan", "cuda", "", "nope", NULL};
        if (chance(f, 50)) st = trr_backend_get_info(v, null_out ? NULL : &bi);
        else st = trr_device_get_info(backends[rnd(f, 7)], v, null_out ? NULL : &di);
        break;
    }
    }
    if (st != TRR_OK) check_failure(f, st, NULL);
    else FZ_ASSERT(f, !null_out, "accepted a NULL output");
}

static int ordered16(uint16_t h) { return (h & 0x8000u) ? -(int)(h & 0x7fffu) : (int)h; }
static uint16_t from_ordered16(int o) { return o < 0 ? (uint16_t)(0x8000u | (unsigned)(-o)) : (uint16_t)o; }

static void fuzz_conversions(fuzz *f) {
    size_t n = chance(f, 80) ? (size_t)rnd(f, 64) : odd_size(f, 64);
    const int null_src = chance(f, 10), null_dst = chance(f, 10), to_half = chance(f, 50);
    say(f, "%s n %zu%s%s", to_half ? "f32_to_f16" : "f16_to_f32", n, null_src ? " src NULL" : "",
        null_dst ? " dst NULL" : "");
    float fl[64];
    uint16_t h[64];
    for (int i = 0; i < 64; i++) {
        uint32_t bits = (uint32_t)trr_rng_next(&f->rng);
        if (chance(f, 70)) fl[i] = ldexpf(trr_rng_unit(&f->rng), (int)rnd(f, 50) - 30);
        else memcpy(&fl[i], &bits, 4);
        h[i] = (uint16_t)trr_rng_next(&f->rng);
    }
    const int fits = n <= 64;
    if (!fits && !null_src && !null_dst) return; /* would read past the arrays: a caller's bug, not ours */
    plant_stale(f);
    trr_status st;
    if (to_half) {
        uint16_t out[64];
        memset(out, 0xee, sizeof out);
        st = trr_f32_to_f16(null_src ? NULL : fl, null_dst ? NULL : out, n);
        if (st == TRR_OK) {
            for (size_t i = 0; i < n && !null_src && !null_dst; i++) {
                /* nearest: neither neighbour is closer (ties to even); NaN stays NaN */
                float got = trr_half_to_float(out[i]);
                if (isnan(fl[i])) {
                    FZ_ASSERT(f, isnan(got), "NaN -> 0x%04x", out[i]);
                    continue;
                }
                double err = fabs((double)got - fl[i]);
                if (isinf(got)) {
                    FZ_ASSERT(f, fabs(fl[i]) >= 65520.0, "%g -> inf", (double)fl[i]);
                    continue;
                }
                for (int dlt = -1; dlt <= 1; dlt += 2) {
                    uint16_t nb = from_ordered16(ordered16(out[i]) + dlt);
                    float nf = trr_half_to_float(nb);
                    if (isinf(nf) || isnan(nf)) continue;
                    double nerr = fabs((double)nf - fl[i]);
                    FZ_ASSERT(f, err < nerr || (err == nerr && !(out[i] & 1)), "%.9g -> 0x%04x (%.9g), 0x%04x is closer",
                              (double)fl[i], out[i], (double)got, nb);
                }
            }
        }
    } else {
        float out[64];
        st = trr_f16_to_f32(null_src ? NULL : h, null_dst ? NULL : out, n);
        for (size_t i = 0; st == TRR_OK && i < n && !null_src && !null_dst; i++) {
            if (isnan(out[i])) {
                FZ_ASSERT(f, (h[i] & 0x7c00u) == 0x7c00u && (h[i] & 0x3ffu), "0x%04x -> NaN", h[i]);
                continue;
            }
            FZ_ASSERT(f, trr_half_from_float(out[i]) == h[i], "0x%04x -> %g does not round-trip", h[i], (double)out[i]);
        }
    }
    if (st != TRR_OK) check_failure(f, st, NULL);
    else FZ_ASSERT(f, n == 0 || (!null_src && !null_dst), "accepted NULL arrays with n = %zu", n);
}

static void fuzz_timers(fuzz *f) {
    trr_context *c = chance(f, 90) ? f->ctx : NULL;
    const int kind = (int)rnd(f, 3), null_out = chance(f, 10);
    say(f, "%s ctx %s%s", kind == 0 ? "timer_start" : kind == 1 ? "timer_stop" : "synchronize", c ? "own" : "NULL",
        null_out ? " out NULL" : "");
    plant_stale(f);
    double ms = -12345.0;
    trr_status st = kind == 0 ? trr_timer_start(c) : kind == 1 ? trr_timer_stop(c, null_out ? NULL : &ms) : trr_synchronize(c);
    const int was_running = f->timer_running;
    if (c && kind == 0 && st == TRR_OK) f->timer_running = 1;
    if (c && kind == 1 && !null_out) f->timer_running = 0;
    if (st != TRR_OK) {
        check_failure(f, st, c);
        return;
    }
    FZ_ASSERT(f, c != NULL, "accepted a NULL context");
    if (kind == 1) {
        FZ_ASSERT(f, was_running, "timer_stop without timer_start returned TRR_OK (%g ms)", ms);
        FZ_ASSERT(f, !null_out && isfinite(ms) && ms >= 0 && ms < 3.6e6, "timer_stop reported %g ms", ms);
    }
}

static void fuzz_contexts(fuzz *f) {
    static const char *const specs[] = {"cpu:1", "cpu:-1", "cpu:", ":0", "opencl:99", "vulkan:99", "cuda:99",
                                        "nonsense", "cpu:0x", "cpu:99999999999999999999", "vulkan:2147483648",
                                        "opencl:-2147483648", "cpu:0:0", "auto:1", "cpu"};
    const char *spec = specs[rnd(f, sizeof specs / sizeof specs[0])];
    const int null_out = chance(f, 10);
    say(f, "context_create '%s'%s", spec, null_out ? " out NULL" : "");
    trr_context *c = NULL;
    plant_stale(f);
    trr_status st = trr_context_create(spec, null_out ? NULL : &c);
    if (st != TRR_OK) {
        check_failure(f, st, NULL);
        FZ_ASSERT(f, c == NULL, "a failed create wrote its output");
        return;
    }
    FZ_ASSERT(f, !strcmp(spec, "cpu") && c, "opened '%s'", spec);
    const char *sel = NULL;
    FZ_ASSERT(f, trr_context_selection(c, &sel) == TRR_OK && sel && *sel, "selection text");
    trr_context_destroy(c);
    cr_assert_eq(trr_context_destroy(NULL), TRR_OK);
    cr_assert_eq(trr_buffer_destroy(NULL), TRR_OK);
}

/* ---- the driver ---- */

static void run_phase(fuzz *f, const char *device, uint64_t seed, long calls, double deadline) {
    setup_phase(f, device, seed);
    long done = 0;
    for (f->call = 0; f->call < calls && now_s() < deadline; f->call++, done++) {
        uint64_t r = rnd(f, 100);
        if (r < 55) fuzz_op(f);
        else if (r < 67) fuzz_buffer_io(f);
        else if (r < 70) fuzz_buffer_create(f);
        else if (r < 78) fuzz_tensor_helpers(f);
        else if (r < 84) fuzz_config(f);
        else if (r < 88) fuzz_names(f);
        else if (r < 93) fuzz_conversions(f);
        else if (r < 98) fuzz_timers(f);
        else fuzz_contexts(f);
    }
    fprintf(stderr, "fuzz %s: seed %llu: %ld calls (%ld ops accepted, %ld rejected, %ld outputs checked against the "
                    "reference)\n",
            device, (unsigned long long)seed, done, f->ops_accepted, f->ops_rejected, f->values_checked);
    fprintf(stderr, "fuzz %s: op calls rejected with", device);
    for (int i = 0; i < 64; i++)
        if (f->rejected_by[i]) fprintf(stderr, " %s %ld", trr_status_name((trr_status)i), f->rejected_by[i]);
    fprintf(stderr, "\n");
    teardown_phase(f);
}

static void fuzz_device(const char *backend, const char *device) {
    trr_context_destroy(open_device_or_skip(device, backend));

    const int quick = conformance_quick_env();
    const char *calls_env = getenv("TRIREME_FUZZ_CALLS");
    const char *seed_env = getenv("TRIREME_FUZZ_SEED");
    const char *verbose = getenv("TRIREME_FUZZ_VERBOSE");
    long calls = calls_env && *calls_env ? strtol(calls_env, NULL, 0) : quick ? 1500 : 6000;
    fuzz f;
    memset(&f, 0, sizeof f);
    f.verbose = verbose && *verbose && strcmp(verbose, "0");
    f.host_a = malloc(HOST_BYTES);
    f.host_b = malloc(HOST_BYTES);
    f.readback = malloc(HOST_BYTES);
    cr_assert(f.host_a && f.host_b && f.readback);
    const double start = now_s();
    if (seed_env && *seed_env) {
        /* a replay: that seed alone, with time to reach the call that failed */
        run_phase(&f, device, strtoull(seed_env, NULL, 0), calls, start + 600.0);
    } else {
        const uint64_t fresh = (uint64_t)time(NULL) * 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid();
        fprintf(stderr, "fuzz %s: fixed seed %llu, then fresh seed %llu (replay one with TRIREME_FUZZ_SEED)\n", device,
                (unsigned long long)FIXED_SEED, (unsigned long long)fresh);
        run_phase(&f, device, FIXED_SEED, calls / 2, start + WALL_CAP_S / 2);
        run_phase(&f, device, fresh, calls - calls / 2, start + WALL_CAP_S);
    }
    free(f.host_a);
    free(f.host_b);
    free(f.readback);
}

Test(fuzz, cpu) { fuzz_device("cpu", "cpu"); }
Test(fuzz, opencl) { fuzz_device("opencl", "opencl:0"); }
Test(fuzz, vulkan) { fuzz_device("vulkan", "vulkan:0"); }
Test(fuzz, cuda) { fuzz_device("cuda", "cuda:0"); }
