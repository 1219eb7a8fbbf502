/* Finding an op's kernel by its definition's stem and entry (kernel_find.h). */
#include "kernel_find.h"

#include <stdio.h>
#include <string.h>

static int ident_char(char c) {
    return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

int trr_kernel_text_provides(const char *text, const char *entry) {
    if (!text || !entry || !*entry) return 0;
    const size_t len = strlen(entry);
    for (const char *p = text; *p;) {
        if (p[0] == '/' && p[1] == '*') { /* comments name entries without providing them */
            const char *e = strstr(p + 2, "*/");
            if (!e) return 0;
            p = e + 2;
        } else if (p[0] == '/' && p[1] == '/') {
            while (*p && *p != '\n') p++;
        } else if (ident_char(*p) && (p == text || !ident_char(p[-1]))) {
            /* one identifier: ENTRY_<entry>, or <entry> called or defined */
            const char *e = p;
            while (ident_char(*e)) e++;
            const size_t n = (size_t)(e - p);
            if (n == len + 6 && strncmp(p, "ENTRY_", 6) == 0 && strncmp(p + 6, entry, len) == 0) return 1;
            if (n == len && strncmp(p, entry, len) == 0) {
                const char *q = e;
                while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r') q++;
                if (*q == '(') return 1;
            }
            p = e;
        } else {
            p++;
        }
    }
    return 0;
}

static int look(const trr_embedded_file *table, size_t count, const char *api, const char *ext, const trr_op_desc *d,
                const char *kind, char *why, size_t cap) {
    char file[96], entry[96];
    if (!d->kernel) {
        snprintf(why, cap, "its definition names no kernel stem");
        return 0;
    }
    if (snprintf(file, sizeof file, "%s.%s", d->kernel, ext) >= (int)sizeof file) {
        snprintf(why, cap, "the kernel stem %s is too long", d->kernel);
        return 0;
    }
    const trr_embedded_file *f = trr_embedded_find(table, count, file);
    if (!f) {
        snprintf(why, cap, "there is no kernels/%s/%s", api, file);
        return 0;
    }
    if (snprintf(entry, sizeof entry, "%s%s", d->name, kind ? kind : "") >= (int)sizeof entry) {
        snprintf(why, cap, "the entry %s%s is too long", d->name, kind);
        return 0;
    }
    if (!trr_kernel_text_provides((const char *)f->data, entry)) {
        snprintf(why, cap, "kernels/%s/%s has no entry %s (a kernel %s or code under ENTRY_%s)", api, file, entry,
                 entry, entry);
        return 0;
    }
    return 1;
}

int trr_kernel_source_provides(const trr_embedded_file *table, size_t count, const char *api, const char *ext,
                               const trr_op_desc *d, const char *kind, char *why, size_t cap) {
    char scratch[160];
    if (!why || !cap) why = scratch, cap = sizeof scratch;
    why[0] = '\0';
    return look(table, count, api, ext, d, kind, why, cap);
}

trr_status trr_kernel_sources_support(trr_context *ctx, const trr_kernel_sources *src, const trr_op_desc *d,
                                      int has_rule, int own_files, trr_user_api user_api, trr_kernel_memo *memo) {
    if (d && trr_kernel_memo_get(memo, d) == 1) return TRR_OK;
    char why[256];
    if (!d || !has_rule) {
        snprintf(why, sizeof why, "the %s backend has no path for its shape rule (%d)", src->label,
                 d ? (int)d->shape : -1);
        return trr_kernel_unsupported(ctx, src->backend, d, why);
    }
    if (d->user) return trr_user_need_code(ctx, d->user, user_api, src->backend);
    /* an op that moves bytes copies bits of any element size, with no kernel of its own */
    if (own_files || (d->shape == TRR_SHAPE_ELEMENTWISE && d->bytewise)) return TRR_OK;
    const int rows = d->shape == TRR_SHAPE_ROWS;
    for (int k = 0; k < (rows ? src->n_rows_kinds : 1); k++)
        if (!trr_kernel_source_provides(src->table, src->count, src->backend, src->ext, d,
                                        rows ? src->rows_kinds[k] : NULL, why, sizeof why))
            return trr_kernel_unsupported(ctx, src->backend, d, why);
    trr_kernel_memo_put(memo, d, 1);
    return TRR_OK;
}

trr_status trr_kernel_unsupported(trr_context *ctx, const char *backend, const trr_op_desc *d, const char *why) {
    return trr_error(ctx, TRR_ERR_UNSUPPORTED, "%s: %s has no kernel here: %s", backend, d ? d->name : "(unknown op)",
                     why && *why ? why : "no path for its shape rule");
}
