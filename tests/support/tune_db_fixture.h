/* A tuning database of the test's own: a fresh directory whose tune.json TRIREME_TUNE_DB names (absent until a
 * test writes it), and a lookup cache that has never seen another file. For the suites that test the database,
 * its lookup and the configs calls resolve through it. */
#ifndef TRR_TEST_TUNE_DB_FIXTURE_H
#define TRR_TEST_TUNE_DB_FIXTURE_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "test_support.h"
#include "tune.h"

static char db_dir[256];
static char db_path[300];

/* Removes the database and a damaged one the store moved aside, then the directory (once). */
static inline void tune_db_teardown(void) {
    if (!db_dir[0]) return;
    char p[400];
    const char *names[] = {"tune.json", "tune.json.corrupt"};
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/%s", db_dir, names[i]);
        remove(p);
    }
    rmdir(db_dir);
    db_dir[0] = '\0';
    trr_tune_reset();
}

static inline void tune_db_setup(void) {
    log_to_stderr(); /* the lookup's warnings on stderr, where tests that redirect it read them */
    snprintf(db_dir, sizeof db_dir, "/tmp/trireme-tune-test-XXXXXX");
    cr_assert_not_null(mkdtemp(db_dir));
    snprintf(db_path, sizeof db_path, "%s/tune.json", db_dir);
    setenv("TRIREME_TUNE_DB", db_path, 1);
    trr_tune_reset();
    /* a skipped test (cr_skip_test: no device) ends without the suite's fini; the exit still removes it */
    atexit(tune_db_teardown);
}

#endif
