/* Run-time loading of driver libraries (see dynlib.h). */
#include "dynlib.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

void *trr_dynlib_open(const char *const *names, char *reason, size_t reason_cap) {
    size_t used = 0;
    if (reason && reason_cap) reason[0] = '\0';
    for (int i = 0; names[i]; i++) {
        void *lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (lib) return lib;
        if (reason && used < reason_cap) {
            const char *why = dlerror();
            int n = snprintf(reason + used, reason_cap - used, "%s%s", used ? "; " : "", why ? why : names[i]);
            if (n > 0) used += (size_t)n;
        }
    }
    return NULL;
}

void *trr_dynlib_sym(void *lib, const char *sym, char *reason, size_t reason_cap) {
    void *p = dlsym(lib, sym);
    if (!p && reason && reason_cap) snprintf(reason, reason_cap, "symbol %s missing from the driver library", sym);
    return p;
}
