/* The kernel sources embedded at build time, looked up by name (embedded.h). */
#include "embedded.h"

#include <string.h>

const trr_embedded_file *trr_embedded_find(const trr_embedded_file *table, size_t count, const char *name) {
    for (size_t i = 0; i < count; i++)
        if (strcmp(table[i].name, name) == 0) return &table[i];
    return NULL;
}
