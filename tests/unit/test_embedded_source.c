/* trr_embedded_source (core/embedded.h): the one text a kernel compiler is given, its include lines expanded from
 * the embedded files, with #line directives naming the file and line each part came from. */
#include <criterion/criterion.h>

#include "embedded.h"

#include <stdlib.h>
#include <string.h>

#define FILE_OF(n, t) {n, (const unsigned char *)(t), sizeof(t) - 1}

static const trr_embedded_file table[] = {
    FILE_OF("common.h", "int c;\n"),
    FILE_OF("inner.h", "int i;\n"),
    FILE_OF("outer.h", "#include \"inner.h\"\nint o;\n"),
    FILE_OF("op.k", "int a;\n  #include  \"outer.h\"\nint b; /* #include \"nothing\" */\n#include <sys.h>\nint z;"),
    FILE_OF("missing.k", "int a;\n#include \"absent.h\"\n"),
    FILE_OF("self.k", "#include \"self.k\"\n"),
};
#define COUNT (sizeof table / sizeof table[0])

Test(embedded_source, prelude_then_file_with_includes_expanded_and_lines_marked) {
    char why[200] = "";
    size_t size = 0;
    char *src = NULL;
    cr_assert_eq(trr_embedded_source(table, COUNT, "common.h", "op.k", &src, &size, why, sizeof why), TRR_OK, "%s",
                 why);
    const char *want = "#line 1 \"common.h\"\nint c;\n"
                       "#line 1 \"op.k\"\nint a;\n"
                       "#line 1 \"outer.h\"\n#line 1 \"inner.h\"\nint i;\n\n#line 2 \"outer.h\"\nint o;\n\n"
                       "#line 3 \"op.k\"\n"
                       "int b; /* #include \"nothing\" */\n#include <sys.h>\nint z;\n";
    cr_assert_str_eq(src, want);
    cr_assert_eq(size, strlen(want));
    free(src);
}

Test(embedded_source, no_prelude) {
    char why[200] = "";
    char *src = NULL;
    cr_assert_eq(trr_embedded_source(table, COUNT, NULL, "common.h", &src, NULL, why, sizeof why), TRR_OK, "%s", why);
    cr_assert_str_eq(src, "#line 1 \"common.h\"\nint c;\n");
    free(src);
}

Test(embedded_source, refusals_say_why) {
    char why[200] = "", *src = (char *)"poison";
    cr_assert_eq(trr_embedded_source(table, COUNT, NULL, "nope.k", &src, NULL, why, sizeof why), TRR_ERR_INTERNAL);
    cr_assert_null(src);
    cr_assert(strstr(why, "nope.k") && strstr(why, "not embedded"), "%s", why);
    cr_assert_eq(trr_embedded_source(table, COUNT, "nope.h", "op.k", &src, NULL, why, sizeof why), TRR_ERR_INTERNAL);
    cr_assert(strstr(why, "nope.h") && strstr(why, "not embedded"), "%s", why);
    cr_assert_eq(trr_embedded_source(table, COUNT, NULL, "missing.k", &src, NULL, why, sizeof why), TRR_ERR_INTERNAL);
    cr_assert(strstr(why, "missing.k:2") && strstr(why, "absent.h"), "%s", why);
    cr_assert_eq(trr_embedded_source(table, COUNT, NULL, "self.k", &src, NULL, why, sizeof why), TRR_ERR_INTERNAL);
    cr_assert_null(src);
    cr_assert(strstr(why, "nested too deeply"), "%s", why);
}
