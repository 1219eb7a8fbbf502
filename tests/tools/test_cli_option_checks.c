/* The CLI's options read the same way in every command (issue #41 items 16 and 17): op lists come from the op
 * table, one number parser takes 4096, 2^12 and 1<<12 and refuses junk and overflow, shapes are whole, a matmul
 * names every dimension, a config field the op has no use for is said to be ignored, outputs that cannot be
 * written and sizes past the device's memory are refused before any work. */
#define _POSIX_C_SOURCE 200809L /* fork, execv, mkstemp, waitpid, setenv */

#include "cli_child.h"

#include "trireme.h"

static const char *const no_db[] = {"TRIREME_TUNE_DB=/nonexistent/trireme-test-tune.json", NULL};

/* Every op of the table is named wherever a command lists the ops in an error. */
Test(cli_options, op_lists_name_every_op) {
    const char *const cases[][8] = {
        {"conformance", "--ops", "copy,nope", NULL},
        {"tune", "nope", NULL},
        {"run", "add", "--config", "nope:block_n=64", NULL},
        {"bench", "--config", "nope:block_n=64", NULL},
        {"run", "nope", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cli_child *r = cli_child_run(cases[i]);
        CLI_EXPECT(r, 2);
        for (int o = 0; o < TRR_OP_COUNT; o++) {
            const char *name = NULL;
            cr_assert_eq(trr_op_name((trr_op)o, &name), TRR_OK);
            cr_assert(strstr(r->err, name), "case %zu: '%s' is not listed:\n%s", i, name, r->err);
        }
    }
}

/* An op whose tuning space is empty on the device (the CPU backend's softmax reads no tile field) says so, instead
 * of timing configs that differ in fields nothing reads. */
Test(cli_options, tune_says_when_an_op_has_no_tile_parameters, .timeout = 120) {
    cli_child *r = cli_child_run((const char *const[]){"tune", "softmax", "--device", "cpu", "--shapes", "64x256",
                                                       "--dtype", "f32", "--reps", "2", "--no-write", NULL});
    CLI_EXPECT(r, 0);
    cr_assert(strstr(r->out, "softmax has no tile parameters on cpu:0"), "%s", r->out);
}

/* run's help lists the ops from the table, and each shape rule's ops with its shape form. */
Test(cli_options, run_help_names_every_op) {
    cli_child *r = cli_child_run((const char *const[]){"run", "--help", NULL});
    CLI_EXPECT(r, 0);
    const char *shape = strstr(r->out, "--shape");
    cr_assert(shape, "%s", r->out);
    for (int o = 0; o < TRR_OP_COUNT; o++) {
        const char *name = NULL;
        cr_assert_eq(trr_op_name((trr_op)o, &name), TRR_OK);
        cr_assert(strstr(r->out, name), "'%s' is not listed:\n%s", name, r->out);
        char item[40];
        snprintf(item, sizeof item, "%s,", name);
        char last[40];
        snprintf(last, sizeof last, "%s)", name);
        cr_assert(strstr(shape, item) || strstr(shape, last), "--shape does not say %s's form:\n%s", name, shape);
    }
}

/* silu has a tuning space like the other element-wise ops: it is tuned, not "nothing to tune". */
Test(cli_options, tune_silu_tunes, .timeout = 120) {
    cli_child *r = cli_child_run((const char *const[]){"tune", "silu", "--device", "cpu", "--shapes", "4096",
                                                       "--dtype", "f32", "--reps", "2", "--no-write", NULL});
    CLI_EXPECT(r, 0);
    cr_assert(!strstr(r->err, "nothing to tune"), "%s", r->err);
    cr_assert(strstr(r->out, "silu f32->f32 1x4096"), "%s", r->out);
}

Test(cli_options, malformed_shapes_are_refused) {
    const char *const cases[][10] = {
        {"run", "add", "--device", "cpu", "--shape", "10x", NULL},
        {"run", "add", "--device", "cpu", "--shape", "x10", NULL},
        {"run", "add", "--device", "cpu", "--shape", "10xx4", NULL},
        {"run", "add", "--device", "cpu", "--shape", "10x4x", NULL},
        {"run", "matmul", "--device", "cpu", "--shape", "8x8x8x", NULL},
        {"tune", "add", "--device", "cpu", "--shapes", "64x", "--no-write", NULL},
        {"tune", "add", "--device", "cpu", "--shapes", "64,x3", "--no-write", NULL},
    };
    const char *quoted[] = {"'10x'", "'x10'", "'10xx4'", "'10x4x'", "'8x8x8x'", "'64x'", "'x3'"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cli_child *r = cli_child_run(cases[i]);
        cr_assert_eq(r->status, 2, "case %zu (%s): exit %d\n%s", i, cases[i][5], r->status, r->err);
        cr_assert(strstr(r->err, quoted[i]), "case %zu: the error does not quote %s:\n%s", i, quoted[i], r->err);
    }
}

/* --n takes what --sizes takes (2^20), through one parser; junk and overflow are refused. */
Test(cli_options, numbers_read_alike_everywhere) {
    cli_child *r = cli_child_run_env((const char *const[]){"run", "add", "--device", "cpu", "--n", "2^10", "--seed",
                                                           "2^3", NULL}, no_db);
    CLI_EXPECT(r, 0);
    cr_assert(strstr(r->out, "n=1024"), "%s", r->out);
    cr_assert(strstr(r->out, "seed: 8"), "%s", r->out);
    r = cli_child_run_env((const char *const[]){"run", "add", "--device", "cpu", "--shape", "2^3x1<<4", NULL}, no_db);
    CLI_EXPECT(r, 0);
    cr_assert(strstr(r->out, "8x16"), "%s", r->out);
    r = cli_child_run_env((const char *const[]){"run", "softmax", "--device", "cpu", "--m", "4", "--n", "2^7", NULL},
                          no_db);
    CLI_EXPECT(r, 0);
    cr_assert(strstr(r->out, "4x128"), "%s", r->out);
    const char *const bad[] = {"2^", "2^x", "12abc", "1e3", "99999999999999999999", "2^63", "3^40", "1<<63", " 5", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        r = cli_child_run((const char *const[]){"run", "add", "--device", "cpu", "--n", bad[i], NULL});
        cr_assert_eq(r->status, 2, "--n '%s': exit %d\n%s%s", bad[i], r->status, r->out, r->err);
        r = cli_child_run((const char *const[]){"bench", "--sizes", bad[i], "add_f32", NULL});
        cr_assert_eq(r->status, 2, "--sizes '%s': exit %d\n%s%s", bad[i], r->status, r->out, r->err);
    }
    r = cli_child_run((const char *const[]){"bench", "--reps", "2^40x", NULL});
    CLI_EXPECT(r, 2);
}

/* An op given some of its dimensions but not all is refused with the missing one named, never run at a default
 * (an element-wise op takes --n alone: a vector). */
Test(cli_options, matmul_needs_every_dimension) {
    const char *const cases[][10] = {
        {"run", "matmul", "--device", "cpu", "--m", "10", "--n", "10", NULL},
        {"run", "matmul", "--device", "cpu", "--m", "10", "--k", "10", NULL},
        {"run", "matmul", "--device", "cpu", "--k", "10", NULL},
        {"run", "softmax", "--device", "cpu", "--m", "4", NULL},
        {"run", "row_sum", "--device", "cpu", "--n", "4", NULL},
        {"run", "add", "--device", "cpu", "--m", "4", NULL},
    };
    const char *missing[] = {"--k", "--n", "--m", "--n", "--m", "--n"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cli_child *r = cli_child_run(cases[i]);
        CLI_EXPECT(r, 2);
        cr_assert(strstr(r->err, missing[i]), "case %zu does not name %s:\n%s", i, missing[i], r->err);
    }
    /* no dimension at all: the default product, and the output says it is the default */
    cli_child *r = cli_child_run_env((const char *const[]){"run", "matmul", "--device", "cpu", NULL}, no_db);
    CLI_EXPECT(r, 0);
    cr_assert(strstr(r->out, "512x512x512") && strstr(r->out, "default"), "%s", r->out);
}

/* A --config field the op, or the device's kernel for it, has no use for is said to be ignored. */
Test(cli_options, unused_config_field_is_reported) {
    cli_child *r = cli_child_run_env((const char *const[]){"run", "add", "--device", "cpu", "--n", "1000",
                                                           "--config", "block_m=7", NULL}, no_db);
    CLI_EXPECT(r, 0);
    cr_assert(strstr(r->err, "block_m") && strstr(r->err, "ignored"), "%s", r->err);
    r = cli_child_run_env((const char *const[]){"run", "add", "--device", "cpu", "--n", "1000", "--config",
                                                "block_n=4096", NULL}, no_db);
    CLI_EXPECT(r, 0);
    cr_assert(!strstr(r->err, "warning"), "a field add uses: %s", r->err);
    /* a field the op has but the device's kernel does not read (the CPU's element-wise loops take no thread
     * count) */
    r = cli_child_run_env((const char *const[]){"run", "add", "--device", "cpu", "--n", "1000", "--config",
                                                "threads=64", NULL}, no_db);
    CLI_EXPECT(r, 0);
    cr_assert(strstr(r->err, "threads") && strstr(r->err, "does not read it") && strstr(r->err, "ignored"), "%s",
              r->err);
    /* bench and conformance say so for a config of a named op, before running anything */
    r = cli_child_run((const char *const[]){"bench", "--config", "add:block_m=7", "no_such_bench", NULL});
    CLI_EXPECT(r, 2);
    cr_assert(strstr(r->err, "block_m") && strstr(r->err, "ignored"), "%s", r->err);
    r = cli_child_run((const char *const[]){"conformance", "--config", "gelu:block_k=8", "--bogus", NULL});
    CLI_EXPECT(r, 2);
    cr_assert(strstr(r->err, "block_k") && strstr(r->err, "ignored"), "%s", r->err);
}

/* conformance --json to a path that cannot be written fails before the matrix runs, as bench and tune do. */
Test(cli_options, conformance_checks_its_json_path_first) {
    cli_child *r = cli_child_run((const char *const[]){"conformance", "--device", "cpu", "--quick", "--ops", "copy",
                                                       "--json", "/nonexistent-trireme-dir/conf.json", NULL});
    CLI_EXPECT(r, 2);
    cr_assert(strstr(r->err, "/nonexistent-trireme-dir"), "%s", r->err);
    cr_assert(!strstr(r->out, "copy f32->f32"), "the matrix ran first:\n%s", r->out);
}

/* A tuning shape past the device's memory is refused before its operands are allocated (400 TB of host memory
 * for this one), with run's reason. */
Test(cli_options, tune_refuses_a_shape_past_the_device_memory) {
    cli_child *r = cli_child_run((const char *const[]){"tune", "add", "--device", "cpu", "--shapes", "99999999999999",
                                                       "--dtype", "f32", "--no-write", NULL});
    cr_assert_neq(r->status, 0, "%s", r->out);
    cr_assert(strstr(r->out, "device's memory") || strstr(r->err, "device's memory"), "%s\n%s", r->out, r->err);
    r = cli_child_run((const char *const[]){"run", "add", "--device", "cpu", "--n", "99999999999999", NULL});
    cr_assert_neq(r->status, 0);
    cr_assert(strstr(r->err, "device's memory"), "%s", r->err);
}
