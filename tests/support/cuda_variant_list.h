/* The CUDA kernel variants the NVRTC check compiles (trr_cuda_for_each_variant), collected, so a test can check
 * that a config a heuristic chooses is one of them: a heuristic change must not pick a kernel CI never compiled. */
#ifndef TRR_TEST_CUDA_VARIANT_LIST_H
#define TRR_TEST_CUDA_VARIANT_LIST_H

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "trr_cuda.h"

typedef struct variant_list {
    trr_cuda_variant *items;
    int count, cap;
} variant_list;

/* trr_cuda_for_each_variant's callback: appends v to the variant_list at user. */
static inline void collect(const trr_cuda_variant *v, void *user) {
    variant_list *l = user;
    if (l->count == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 512;
        l->items = realloc(l->items, (size_t)l->cap * sizeof *l->items);
        cr_assert_not_null(l->items);
    }
    l->items[l->count++] = *v;
}

/* Whether l holds v (the same file and defines). */
static inline int listed(const variant_list *l, const trr_cuda_variant *v) {
    for (int i = 0; i < l->count; i++)
        if (strcmp(l->items[i].file, v->file) == 0 && strcmp(l->items[i].defines, v->defines) == 0) return 1;
    return 0;
}

#endif
