/* The library's warnings (trr_log_set): a call that meets something it sets aside (here a damaged tuning
 * database) succeeds, gives its warning to the handler once, and prints nothing itself; with no handler the
 * warning goes nowhere. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <criterion/redirect.h>

#include "trireme.h"
#include "tune.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct seen {
    int calls;
    trr_log_level level;
    char text[512];
} seen;

static void keep(trr_log_level level, const char *message, void *user) {
    seen *s = user;
    s->calls++;
    s->level = level;
    snprintf(s->text, sizeof s->text, "%s", message);
}

static char db_path[64];

/* A damaged database of the test's own, and a lookup cache that has not seen it. */
static void damaged_db(void) {
    snprintf(db_path, sizeof db_path, "/tmp/trireme-log-test-XXXXXX");
    const int fd = mkstemp(db_path);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, "{ not json", 10), 10);
    close(fd);
    setenv("TRIREME_TUNE_DB", db_path, 1);
    trr_tune_reset();
}

static void cleanup(void) {
    trr_log_set(NULL, NULL);
    unlink(db_path);
    trr_tune_reset();
}

/* A small matmul on the CPU: its config lookup reads the database. */
static void run_matmul(void) {
    trr_context *ctx = NULL;
    cr_assert_eq(trr_context_create("cpu", &ctx), TRR_OK, "%s", trr_last_error(NULL));
    trr_buffer *a, *b, *c;
    cr_assert_eq(trr_buffer_create(ctx, 8 * 4 * 4, &a), TRR_OK);
    cr_assert_eq(trr_buffer_create(ctx, 4 * 5 * 4, &b), TRR_OK);
    cr_assert_eq(trr_buffer_create(ctx, 8 * 5 * 4, &c), TRR_OK);
    cr_assert_eq(trr_buffer_fill(ctx, a, 0, 8 * 4 * 4, 0), TRR_OK);
    cr_assert_eq(trr_buffer_fill(ctx, b, 0, 4 * 5 * 4, 0), TRR_OK);
    trr_tensor ta, tb, tc;
    trr_tensor_2d(a, 0, TRR_F32, 8, 4, 0, &ta);
    trr_tensor_2d(b, 0, TRR_F32, 4, 5, 0, &tb);
    trr_tensor_2d(c, 0, TRR_F32, 8, 5, 0, &tc);
    cr_assert_eq(trr_matmul(ctx, &ta, &tb, &tc, TRR_EPI_NONE, 0, 0), TRR_OK, "%s", trr_last_error(ctx));
    float out[40];
    cr_assert_eq(trr_buffer_read(ctx, c, 0, out, sizeof out), TRR_OK);
    for (int i = 0; i < 40; i++) cr_assert_eq(out[i], 0.0f);
    trr_buffer_destroy(a);
    trr_buffer_destroy(b);
    trr_buffer_destroy(c);
    trr_context_destroy(ctx);
}

Test(log, a_set_aside_database_reaches_the_handler_once, .init = cr_redirect_stderr, .fini = cleanup) {
    damaged_db();
    seen s = {0};
    cr_assert_eq(trr_log_set(keep, &s), TRR_OK);
    run_matmul();
    run_matmul();
    cr_assert_eq(s.calls, 1, "%d warnings", s.calls);
    cr_assert_eq(s.level, TRR_LOG_WARNING);
    cr_assert(strstr(s.text, "ignoring the tuning database") && strstr(s.text, db_path), "%s", s.text);
    fflush(stderr);
    cr_assert_stderr_eq_str("", "the library printed a warning of its own");
}

Test(log, without_a_handler_nothing_is_printed, .init = cr_redirect_stderr, .fini = cleanup) {
    seen s = {0};
    cr_assert_eq(trr_log_set(keep, &s), TRR_OK);
    cr_assert_eq(trr_log_set(NULL, NULL), TRR_OK); /* cleared again */
    damaged_db();
    run_matmul();
    cr_assert_eq(s.calls, 0);
    fflush(stderr);
    cr_assert_stderr_eq_str("");
}
