/* The one conversion of an op definition (the public trr_op_def) into its op-table row, with its checks
 * (user_op.h): trr_op_define's for a user op, and core/op_table.c's for the built-in ops declared by a definition.
 * The launch rule's evaluation, which the conversion checks and the backends' user paths run, is here too. */
#include "user_op.h"

#include "config_fields.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- parsing ---- */

#define BAD(...) trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, __VA_ARGS__)

static int is_ident(const char *s, size_t n) {
    if (n == 0 || n >= TRR_USER_NAME_MAX || !(isalpha((unsigned char)s[0]) || s[0] == '_')) return 0;
    for (size_t i = 1; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_')) return 0;
    return 1;
}

static const char *skip_space(const char *p) {
    while (*p == ' ' || *p == '\t') p++;
    return p;
}

/* One operand "name[D0,D1]" from *pp: its dims' names into dims (rank into *rank). */
static trr_status parse_operand(const char **pp, const char *op, char *out_name, char dims[2][TRR_USER_NAME_MAX],
                                int *rank) {
    const char *p = skip_space(*pp), *name = p;
    while (isalnum((unsigned char)*p) || *p == '_') p++;
    if (!is_ident(name, (size_t)(p - name)))
        return BAD("trr_op_define(%s): operands: expected an operand name at \"%s\"", op, name);
    snprintf(out_name, TRR_USER_NAME_MAX, "%.*s", (int)(p - name), name);
    p = skip_space(p);
    if (*p != '[') return BAD("trr_op_define(%s): operands: %.*s needs its dims, as %.*s[M,N]", op,
                              (int)(p - name), name, (int)(p - name), name);
    *rank = 0;
    for (p++;;) {
        p = skip_space(p);
        const char *d = p;
        while (isalnum((unsigned char)*p) || *p == '_') p++;
        if (!is_ident(d, (size_t)(p - d)))
            return BAD("trr_op_define(%s): operands: a dim must be a name (M, N, ...), at \"%s\"", op, d);
        if (*rank == 2) return BAD("trr_op_define(%s): operands: user ops take operands of rank 1 or 2", op);
        snprintf(dims[*rank], TRR_USER_NAME_MAX, "%.*s", (int)(p - d), d);
        (*rank)++;
        p = skip_space(p);
        if (*p == ']') break;
        if (*p != ',') return BAD("trr_op_define(%s): operands: expected ',' or ']' at \"%s\"", op, p);
        p++;
    }
    *pp = p + 1;
    return TRR_OK;
}

/* "x[M,N], g[M,N] -> y[M,N]": every operand of one shape (the element-wise rule); a row op's
 * "x[M,N], r[M,N], w[N] -> y[M,N], h[M,N]": [M,N] operands of one shape and vectors of its N. */
static trr_status parse_operands(trr_user_op *u, const char *text) {
    const char *op = u->name;
    if (!text) return BAD("trr_op_define(%s): operands is NULL", op);
    if (strlen(text) >= sizeof u->operands) return BAD("trr_op_define(%s): operands text is too long", op);
    const char *arrow = strstr(text, "->");
    if (!arrow) return BAD("trr_op_define(%s): operands: no \"->\" between inputs and outputs", op);
    const char *p = text;
    int inputs = 0, outputs = 0;
    for (int side = 0; side < 2; side++) {
        for (;;) {
            char dims[2][TRR_USER_NAME_MAX], name[TRR_USER_NAME_MAX];
            int rank = 0;
            const int i = inputs + outputs;
            if (i == (u->row_op ? TRR_MAX_ROW_OPERANDS : TRR_MAX_USER_OPERANDS))
                return BAD("trr_op_define(%s): operands: more than %d operands", op,
                           u->row_op ? TRR_MAX_ROW_OPERANDS : TRR_MAX_USER_OPERANDS);
            TRR_TRY(parse_operand(&p, op, name, dims, &rank));
            if (side == 0 && p > arrow) return BAD("trr_op_define(%s): operands: malformed before \"->\"", op);
            snprintf(u->operand_names[i], TRR_USER_NAME_MAX, "%s", name);
            if (i == 0) {
                u->rank = rank;
                snprintf(u->dims[0], TRR_USER_NAME_MAX, "%s", rank == 2 ? dims[0] : "");
                snprintf(u->dims[1], TRR_USER_NAME_MAX, "%s", dims[rank - 1]);
                if (u->row_op && rank != 2)
                    return BAD("trr_op_define(%s): operands: a row op's first input is [M,N], in \"%s\"", op, text);
            } else if (u->row_op && rank == 1 && side == 0) {
                if (strcmp(dims[0], u->dims[1]))
                    return BAD("trr_op_define(%s): operands: a row op's vector is [%s], the rows' length, in \"%s\"",
                               op, u->dims[1], text);
                u->vector[i] = 1;
            } else if (rank != u->rank || strcmp(dims[rank - 1], u->dims[1]) ||
                       (rank == 2 && strcmp(dims[0], u->dims[0]))) {
                return BAD(u->row_op ? "trr_op_define(%s): operands: a row op's operands are [M,N] as its first "
                                       "input, inputs also [N] vectors, in \"%s\""
                                     : "trr_op_define(%s): operands: every operand must have the first one's dims "
                                       "(user ops are element-wise), in \"%s\"",
                           op, text);
            }
            if (side == 0) inputs++;
            else outputs++;
            p = skip_space(p);
            if (*p != ',') break;
            p++;
        }
        if (side == 0) {
            if (p != arrow) return BAD("trr_op_define(%s): operands: expected \"->\" at \"%s\"", op, p);
            p += 2;
        }
    }
    if (*skip_space(p)) return BAD("trr_op_define(%s): operands: unexpected text \"%s\"", op, p);
    if (u->row_op && (inputs < 1 || inputs > 3 || outputs < 1 || outputs > 2))
        return BAD("trr_op_define(%s): row ops take one to three inputs and one or two outputs, got %d -> %d", op,
                   inputs, outputs);
    if (!u->row_op && (inputs < 1 || inputs > 2 || outputs != 1))
        return BAD("trr_op_define(%s): element-wise user ops take one or two inputs and one output, got %d -> %d", op,
                   inputs, outputs);
    if (u->rank == 2 && !strcmp(u->dims[0], u->dims[1]))
        return BAD("trr_op_define(%s): operands: the two dims need names of their own", op);
    snprintf(u->operands, sizeof u->operands, "%s", text);
    u->n_operands = inputs + outputs;
    u->n_inputs = inputs;
    return TRR_OK;
}

/* The value of one name in a launch expression; -1 when it is none of the dims and tile parameters. */
static int64_t symbol_value(const trr_user_op *u, const char *s, size_t n, const trr_call *call, const int *tiles) {
    for (int d = 0; d < 2; d++)
        if (u->dims[d][0] && strlen(u->dims[d]) == n && !strncmp(u->dims[d], s, n))
            return call ? (d == 0 ? call->rows : call->cols) : 1;
    for (int t = 0; t < u->def.n_tiles; t++)
        if (strlen(u->tile_names[t]) == n && !strncmp(u->tile_names[t], s, n)) return tiles ? tiles[t] : 1;
    return -1;
}

/* Evaluates expr left to right ("a/b" rounds up); without a call, checks it (every name known) and gives 1.
 * Returns -1 with why on a malformed expression. */
static int64_t evaluate(const trr_user_op *u, const char *expr, const trr_call *call, const int *tiles, char *why,
                        size_t cap) {
    const char *p = expr;
    int64_t acc = 0;
    char op = '=';
    for (;;) {
        p = skip_space(p);
        const char *t = p;
        int64_t v;
        if (isdigit((unsigned char)*p)) {
            v = 0;
            while (isdigit((unsigned char)*p) && v < ((int64_t)1 << 40)) v = v * 10 + (*p++ - '0');
            if (isdigit((unsigned char)*p)) return snprintf(why, cap, "number too large in \"%s\"", expr), -1;
        } else {
            while (isalnum((unsigned char)*p) || *p == '_') p++;
            if (p == t) return snprintf(why, cap, "expected a name or a number at \"%s\" in \"%s\"", t, expr), -1;
            v = symbol_value(u, t, (size_t)(p - t), call, tiles);
            if (v < 0)
                return snprintf(why, cap, "\"%.*s\" in \"%s\" is neither a dim of the operands nor a tile parameter",
                                (int)(p - t), t, expr),
                       -1;
        }
        const int64_t most = (int64_t)1 << 40; /* past any launch: refused by the caller, and no overflow */
        if (op == '=') acc = v;
        else if (op == '*') acc = v && acc > most / v ? most : acc * v;
        else if (op == '+') acc = acc + v;
        else acc = v ? (acc + v - 1) / v : 0;
        if (acc > most) acc = most;
        p = skip_space(p);
        if (!*p) return acc;
        if (*p != '*' && *p != '/' && *p != '+')
            return snprintf(why, cap, "expected *, / or + at \"%s\" in \"%s\"", p, expr), -1;
        op = *p++;
    }
}

static trr_status copy_text(char **out, const char *text) {
    *out = NULL;
    if (!text) return TRR_OK;
    *out = malloc(strlen(text) + 1);
    if (!*out) return trr_error(NULL, TRR_ERR_OUT_OF_MEMORY, "trr_op_define: no host memory");
    strcpy(*out, text);
    return TRR_OK;
}

static trr_status check_code(trr_user_op *u, trr_user_api api, const trr_kernel_code *code) {
    static const char *const names[TRR_USER_APIS] = {"cuda", "opencl", "vulkan"};
    if (code->source && code->spirv)
        return BAD("trr_op_define(%s): %s: give source or SPIR-V, not both", u->name, names[api]);
    if (api != TRR_USER_VULKAN && code->spirv)
        return BAD("trr_op_define(%s): %s takes source, not SPIR-V", u->name, names[api]);
    if (api == TRR_USER_VULKAN && code->source)
        return BAD("trr_op_define(%s): vulkan takes SPIR-V words (compile the GLSL with glslangValidator; "
                   "docs/custom-ops.md)", u->name);
    if (!code->source && !code->spirv) return TRR_OK;
    const char *entry = code->entry ? code->entry : (code->spirv ? "main" : NULL);
    if (!entry || !is_ident(entry, strlen(entry)))
        return BAD("trr_op_define(%s): %s: the entry point must be a name", u->name, names[api]);
    snprintf(u->entry[api], TRR_USER_NAME_MAX, "%s", entry);
    if (code->spirv) {
        if (code->spirv_words < 5 || code->spirv[0] != 0x07230203u)
            return BAD("trr_op_define(%s): vulkan: not SPIR-V (no magic number in the first word)", u->name);
        u->spirv = malloc(code->spirv_words * 4);
        if (!u->spirv) return trr_error(NULL, TRR_ERR_OUT_OF_MEMORY, "trr_op_define: no host memory");
        memcpy(u->spirv, code->spirv, code->spirv_words * 4);
        u->spirv_words = code->spirv_words;
        return TRR_OK;
    }
    return copy_text(&u->source[api], code->source);
}

void trr_user_op_free(trr_user_op *u) {
    if (!u) return;
    for (int i = 0; i < TRR_USER_APIS; i++) free(u->source[i]);
    for (int i = 0; i < TRR_MAX_OP_PARAMS; i++) free(u->param_choices[i]), free(u->param_docs[i]);
    free(u->spirv);
    free(u);
}

static int name_taken(const char *name) {
    for (int i = 0; i < trr_op_desc_count(); i++)
        if (!strcmp(trr_op_desc_get((trr_op)i)->name, name)) return 1;
    return 0;
}

static trr_status check_params(trr_user_op *u, const trr_op_def *def) {
    if (def->n_params < 0 || def->n_params > TRR_MAX_OP_PARAMS || (def->n_params && !def->params))
        return BAD("trr_op_define(%s): n_params must be 0 to %d, with params", u->name, TRR_MAX_OP_PARAMS);
    for (int i = 0; i < def->n_params; i++) {
        const trr_param_info *p = &def->params[i];
        if (!p->name || !is_ident(p->name, strlen(p->name)))
            return BAD("trr_op_define(%s): parameter %d needs a name", u->name, i);
        if ((unsigned)p->type > TRR_PARAM_INT)
            return BAD("trr_op_define(%s): parameter %s has an unknown type %d", u->name, p->name, (int)p->type);
        if (p->type == TRR_PARAM_ENUM && !p->choices)
            return BAD("trr_op_define(%s): enum parameter %s needs its choices", u->name, p->name);
        for (int j = 0; j < i; j++)
            if (!strcmp(def->params[j].name, p->name))
                return BAD("trr_op_define(%s): parameter %s is declared twice", u->name, p->name);
        if (symbol_value(u, p->name, strlen(p->name), NULL, NULL) >= 0)
            return BAD("trr_op_define(%s): parameter %s has the name of a dim or tile parameter", u->name, p->name);
        u->params[i] = *p;
        snprintf(u->param_names[i], TRR_USER_NAME_MAX, "%s", p->name);
        u->params[i].name = u->param_names[i];
        TRR_TRY(copy_text(&u->param_choices[i], p->choices));
        u->params[i].choices = u->param_choices[i];
        TRR_TRY(copy_text(&u->param_docs[i], p->doc)); /* the caller's text need not outlive the call */
        u->params[i].doc = u->param_docs[i] ? u->param_docs[i] : "";
    }
    return TRR_OK;
}

static trr_status check_tiles(trr_user_op *u, const trr_op_def *def) {
    if (def->n_tiles < 0 || def->n_tiles > TRR_MAX_TILE_PARAMS)
        return BAD("trr_op_define(%s): n_tiles must be 0 to %d", u->name, TRR_MAX_TILE_PARAMS);
    for (int t = 0; t < def->n_tiles; t++) {
        const trr_tile_param *tp = &def->tiles[t];
        if (!tp->name || !is_ident(tp->name, strlen(tp->name)))
            return BAD("trr_op_define(%s): tile parameter %d needs a name", u->name, t);
        if (symbol_value(u, tp->name, strlen(tp->name), NULL, NULL) >= 0)
            return BAD("trr_op_define(%s): tile parameter %s has the name of a dim or another tile parameter",
                       u->name, tp->name);
        const int f = tp->field ? trr_config_field_index(tp->field) : -1;
        if (f < 0 || f == TRR_CONFIG_FIELD_VARIANT)
            return BAD("trr_op_define(%s): tile parameter %s: field \"%s\" is not a trr_config tile field "
                       "(block_m, block_n, block_k, group_m, threads, stages, vector_width, split_k)",
                       u->name, tp->name, tp->field ? tp->field : "(null)");
        for (int s = 0; s < t; s++)
            if (u->tile_field[s] == f)
                return BAD("trr_op_define(%s): tile parameters %s and %s share the field %s", u->name,
                           u->tile_names[s], tp->name, tp->field);
        if (tp->n_candidates < 1 || tp->n_candidates > TRR_MAX_TILE_CANDIDATES)
            return BAD("trr_op_define(%s): tile parameter %s needs 1 to %d candidates", u->name, tp->name,
                       TRR_MAX_TILE_CANDIDATES);
        for (int c = 0; c < tp->n_candidates; c++)
            if (tp->candidates[c] < 1 || tp->candidates[c] > TRR_CONFIG_FIELD_MAX)
                return BAD("trr_op_define(%s): tile parameter %s: candidate %d is outside 1..%d", u->name, tp->name,
                           tp->candidates[c], TRR_CONFIG_FIELD_MAX);
        snprintf(u->tile_names[t], TRR_USER_NAME_MAX, "%s", tp->name);
        u->tile_field[t] = f;
        u->def.tiles[t].name = u->tile_names[t];
        u->def.tiles[t].field = trr_config_fields[f].name;
        u->desc.config_fields |= trr_config_fields[f].bit;
        trr_config_set(&u->desc.default_config, f, tp->candidates[0]);
    }
    u->def.n_tiles = def->n_tiles;
    return TRR_OK;
}

static trr_status check_launch(trr_user_op *u, const trr_op_def *def) {
    char why[256];
    const int gpu = def->cuda.source || def->opencl.source || def->vulkan.spirv;
    if (gpu && !def->launch.threads)
        return BAD("trr_op_define(%s): launch: threads per group is required with GPU kernels", u->name);
    for (int a = 0; a < 4; a++) {
        const char *e = a < 3 ? def->launch.groups[a] : def->launch.threads;
        char *dst = a < 3 ? u->groups[a] : u->threads;
        snprintf(dst, TRR_USER_EXPR_MAX, "%s", e ? e : "1");
        if (e && strlen(e) >= TRR_USER_EXPR_MAX)
            return BAD("trr_op_define(%s): launch: \"%s\" is too long", u->name, e);
        if (evaluate(u, dst, NULL, NULL, why, sizeof why) < 0)
            return BAD("trr_op_define(%s): launch: %s", u->name, why);
    }
    return TRR_OK;
}

/* The row: what the definition says, and for a built-in what its declaration adds (user_op.h). */
static void make_row(trr_user_op *u, const trr_op_def *def, const trr_op_builtin *builtin) {
    trr_op_desc *d = &u->desc;
    d->op = u->op;
    d->name = u->name;
    d->n_inputs = u->n_inputs;
    d->params = u->params;
    d->n_params = def->n_params;
    d->kernel = builtin ? builtin->kernel : u->name;
    d->operands = u->operands;
    for (int i = 0; i < def->n_dtypes; i++) u->signatures[i] = (trr_op_signature){def->dtypes[i], def->dtypes[i], 0,
                                                                                   def->dtypes[i]};
    d->signatures = u->signatures;
    d->n_signatures = def->n_dtypes;
    d->shape = u->row_op ? TRR_SHAPE_ROW_NORM : TRR_SHAPE_ELEMENTWISE;
    /* each operand in its slot by the public order (x, y, u, then z, w), named as the definition names it: of
     * [M,N] or, in a row op, a vector of cols */
    for (int i = 0; i < u->n_operands; i++)
        d->operand[trr_slot_of_operand(u->n_inputs, i)] =
            (trr_operand_rule){u->operand_names[i], 1, u->vector[i] ? TRR_DIM_ONE : TRR_DIM_ROWS, TRR_DIM_COLS,
                               u->vector[i], 0, 0};
    d->flops_per_point = def->flops_per_point;
    d->exact = def->bound == TRR_BOUND_EXACT ? 2 : def->bound == TRR_BOUND_EXACT_F32 ? 1 : 0;
    d->transcendental = def->transcendental != 0;
    d->defined = u;
    if (builtin) {
        /* the backends' own kernels of its stem, by their tuned paths: no user path */
        d->config_fields = builtin->config_fields;
        d->default_config = builtin->default_config;
        d->benches = builtin->benches;
        d->n_benches = builtin->n_benches;
        d->alias_ok = builtin->alias_ok;
    } else {
        d->user = u;
    }
}

trr_status trr_op_def_convert(const trr_op_def *def, trr_op_row_reference_fn row_reference, trr_op_cpu_row_fn row_cpu,
                              const trr_op_builtin *builtin, trr_user_op *u) {
    if (!def->name || !is_ident(def->name, strlen(def->name)))
        return BAD("trr_op_define: the name must be a name of letters, digits and '_' under %d characters",
                   TRR_USER_NAME_MAX);
    snprintf(u->name, sizeof u->name, "%s", def->name);
    if (builtin) u->op = builtin->op;
    else if (name_taken(u->name)) return BAD("trr_op_define(%s): an op of that name exists", u->name);
    u->def = *def;
    u->def.name = u->name;
    if (row_reference && def->reference)
        return BAD("trr_op_define_row_op(%s): def->reference must be NULL: a row op's reference is row_reference",
                   u->name);
    if (!def->reference && !row_reference) return BAD("trr_op_define(%s): the float64 reference is required", u->name);
    if (row_reference && def->cpu)
        return BAD("trr_op_define_row_op(%s): def->cpu must be NULL: a row op's CPU function is the cpu argument",
                   u->name);
    u->row_op = row_reference != NULL;
    u->row_reference = row_reference;
    u->row_cpu = row_cpu;
    TRR_TRY(parse_operands(u, def->operands));
    u->def.operands = u->operands;
    if (def->n_dtypes < 1 || def->n_dtypes > TRR_MAX_USER_DTYPES)
        return BAD("trr_op_define(%s): n_dtypes must be 1 to %d", u->name, TRR_MAX_USER_DTYPES);
    for (int i = 0; i < def->n_dtypes; i++) {
        if ((unsigned)def->dtypes[i] >= TRR_DTYPE_COUNT)
            return BAD("trr_op_define(%s): unknown dtype %d", u->name, (int)def->dtypes[i]);
        for (int j = 0; j < i; j++)
            if (def->dtypes[j] == def->dtypes[i]) return BAD("trr_op_define(%s): a dtype is listed twice", u->name);
    }
    TRR_TRY(check_tiles(u, def));
    TRR_TRY(check_params(u, def));
    u->def.params = u->params;
    TRR_TRY(check_launch(u, def));
    if ((unsigned)def->bound > TRR_BOUND_EXACT)
        return BAD("trr_op_define(%s): unknown bound %d", u->name, (int)def->bound);
    if (def->flops_per_point < 0) return BAD("trr_op_define(%s): flops_per_point is negative", u->name);
    TRR_TRY(check_code(u, TRR_USER_CUDA, &def->cuda));
    TRR_TRY(check_code(u, TRR_USER_OPENCL, &def->opencl));
    TRR_TRY(check_code(u, TRR_USER_VULKAN, &def->vulkan));
    const int code = def->cpu || row_cpu || u->source[TRR_USER_CUDA] || u->source[TRR_USER_OPENCL] || u->spirv;
    if (builtin && (code || !builtin->kernel))
        return BAD("trr_op_define(%s): a built-in op's kernels are its stem's, not the definition's", u->name);
    if (!builtin && !code) return BAD("trr_op_define(%s): no kernel for any API", u->name);
    u->def.cuda.source = u->source[TRR_USER_CUDA];
    u->def.opencl.source = u->source[TRR_USER_OPENCL];
    u->def.vulkan.spirv = u->spirv;
    for (int a = 0; a < TRR_USER_APIS; a++) {
        trr_kernel_code *c = a == TRR_USER_CUDA ? &u->def.cuda : a == TRR_USER_OPENCL ? &u->def.opencl : &u->def.vulkan;
        c->entry = u->entry[a][0] ? u->entry[a] : NULL;
    }
    for (int a = 0; a < 3; a++) u->def.launch.groups[a] = u->groups[a];
    u->def.launch.threads = u->threads;
    make_row(u, def, builtin);
    return TRR_OK;
}

/* ---- the launch rule, as the backends' user paths evaluate it ---- */

void trr_user_tiles(const trr_user_op *u, const trr_config *config, int out[TRR_MAX_TILE_PARAMS]) {
    for (int t = 0; t < TRR_MAX_TILE_PARAMS; t++)
        out[t] = t < u->def.n_tiles ? trr_config_get(config, u->tile_field[t]) : 0;
}

trr_status trr_user_launch(trr_context *ctx, const trr_user_op *u, const trr_call *call, int64_t groups[3],
                           int *out_threads) {
    int tiles[TRR_MAX_TILE_PARAMS];
    trr_user_tiles(u, &call->config, tiles);
    char why[256];
    for (int a = 0; a < 4; a++) {
        const int64_t v = evaluate(u, a < 3 ? u->groups[a] : u->threads, call, tiles, why, sizeof why);
        if (v < 1 || v > INT32_MAX)
            return trr_error(ctx, TRR_ERR_UNSUPPORTED, "%s: launch: %s = %lld for rows %lld, cols %lld", u->name,
                             a < 3 ? u->groups[a] : u->threads, (long long)v, (long long)call->rows,
                             (long long)call->cols);
        if (a < 3) groups[a] = v;
        else *out_threads = (int)v;
    }
    return TRR_OK;
}

