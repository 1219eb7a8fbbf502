/* The kernel sources embedded at build time, looked up by name, and the program text a compiler is given for one
 * of them (embedded.h). */
#include "embedded.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const trr_embedded_file *trr_embedded_find(const trr_embedded_file *table, size_t count, const char *name) {
    for (size_t i = 0; i < count; i++)
        if (strcmp(table[i].name, name) == 0) return &table[i];
    return NULL;
}

typedef struct text {
    char *data;
    size_t size, cap;
    int failed;
} text;

static void put(text *t, const char *s, size_t n) {
    if (t->failed) return;
    if (t->size + n + 1 > t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 4096;
        while (cap < t->size + n + 1) cap *= 2;
        char *grown = realloc(t->data, cap);
        if (!grown) {
            t->failed = 1;
            return;
        }
        t->data = grown;
        t->cap = cap;
    }
    memcpy(t->data + t->size, s, n);
    t->size += n;
    t->data[t->size] = '\0';
}

static void put_line_mark(text *t, int line, const char *file) {
    char mark[160];
    int n = snprintf(mark, sizeof mark, "#line %d \"%s\"\n", line, file);
    put(t, mark, (size_t)n < sizeof mark ? (size_t)n : sizeof mark - 1);
}

/* The name a line `#include "name"` names (leading blanks allowed), copied into name; 0 for any other line. */
static int include_of(const char *line, size_t n, char *name, size_t cap) {
    size_t i = 0;
    while (i < n && (line[i] == ' ' || line[i] == '\t')) i++;
    if (n - i < 8 || memcmp(line + i, "#include", 8) != 0) return 0;
    i += 8;
    while (i < n && (line[i] == ' ' || line[i] == '\t')) i++;
    if (i >= n || line[i] != '"') return 0;
    const char *end = memchr(line + i + 1, '"', n - i - 1);
    if (!end || (size_t)(end - (line + i + 1)) >= cap) return 0;
    const size_t len = (size_t)(end - (line + i + 1));
    memcpy(name, line + i + 1, len);
    name[len] = '\0';
    return 1;
}

/* f's text, each include line replaced by its file's (expanded the same way, depth levels at most). */
static int expand(text *t, const trr_embedded_file *table, size_t count, const trr_embedded_file *f, int depth,
                  char *why, size_t why_cap) {
    const char *p = (const char *)f->data, *end = p + f->size;
    for (int line = 1; p < end; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        char name[128];
        if (include_of(p, n, name, sizeof name)) {
            const trr_embedded_file *inc = trr_embedded_find(table, count, name);
            if (!inc) {
                snprintf(why, why_cap, "%s:%d includes %s, which is not an embedded kernel file", f->name, line, name);
                return 0;
            }
            if (depth == 0) {
                snprintf(why, why_cap, "%s:%d: includes nested too deeply at %s", f->name, line, name);
                return 0;
            }
            put_line_mark(t, 1, inc->name);
            if (!expand(t, table, count, inc, depth - 1, why, why_cap)) return 0;
            put(t, "\n", 1);
            put_line_mark(t, line + 1, f->name);
        } else {
            put(t, p, n);
            put(t, "\n", 1);
        }
        p += n + 1;
    }
    return 1;
}

trr_status trr_embedded_source(const trr_embedded_file *table, size_t count, const char *prelude, const char *file,
                               char **out_text, size_t *out_size, char *why, size_t why_cap) {
    text t = {0};
    *out_text = NULL;
    const trr_embedded_file *pre = prelude ? trr_embedded_find(table, count, prelude) : NULL;
    const trr_embedded_file *body = trr_embedded_find(table, count, file);
    if ((prelude && !pre) || !body) {
        snprintf(why, why_cap, "kernel file %s is not embedded", body ? prelude : file);
        return TRR_ERR_INTERNAL;
    }
    if (pre) put_line_mark(&t, 1, pre->name);
    int ok = !pre || expand(&t, table, count, pre, 4, why, why_cap);
    if (ok) put_line_mark(&t, 1, body->name);
    ok = ok && expand(&t, table, count, body, 4, why, why_cap);
    if (ok && (t.failed || !t.data)) {
        snprintf(why, why_cap, "no host memory for the source of %s", file);
        free(t.data);
        return TRR_ERR_OUT_OF_MEMORY;
    }
    if (!ok) {
        free(t.data);
        return TRR_ERR_INTERNAL;
    }
    if (out_size) *out_size = t.size;
    *out_text = t.data;
    return TRR_OK;
}
