/* Prints the Vulkan shader variants the op definitions name (vk_kinds.h), one "name|source|defines" line each,
 * for backend_vulkan/CMakeLists.txt: built and run at configure time with core/op_table.c, so the shaders the
 * build compiles are the ones the definitions ask for. */
#include "vk_kinds.h"


static const char *define_of(trr_dtype t) {
    return t == TRR_F16 ? "F16" : t == TRR_BF16 ? "BF16" : t == TRR_U8 ? "U8" : t == TRR_F8E4M3 ? "F8E4M3"
           : t == TRR_F8E5M2 ? "F8E5M2" : NULL;
}

int main(void) {
    const char *fault = trr_op_table_fault();
    if (fault) {
        fprintf(stderr, "a built-in op's definition is refused: %s\n", fault);
        return 1;
    }
    for (int op = 0; op < TRR_OP_COUNT; op++) {
        const trr_op_desc *d = trr_op_desc_get((trr_op)op);
        const trr_vk_rule_kinds *k = trr_vk_kinds_of(d);
        if (!k) continue;
        for (int i = 0; i < k->count; i++)
            for (int s = 0; s < d->n_signatures; s++) {
                const trr_dtype in = d->signatures[s].in, out = d->signatures[s].out;
                char name[96];
                trr_vk_shader_name(name, sizeof name, d, k->kind[i], in, out);
                printf("%s|%s%s.comp|ENTRY_%s", name, d->kernel, k->kind[i], d->name);
                if (define_of(in)) printf(",X_%s", define_of(in));
                if (define_of(out)) printf(",Z_%s", define_of(out));
                printf("\n");
            }
    }
    return 0;
}
