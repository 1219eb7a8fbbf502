/* Run-time loading of driver libraries, so one build runs where a driver is missing and says why. */
#ifndef TRR_DYNLIB_H
#define TRR_DYNLIB_H

#include <stddef.h>

/* Opens the first library of names that loads; on failure writes the names tried and dlerror() into reason. */
void *trr_dynlib_open(const char *const *names, char *reason, size_t reason_cap);
/* Looks up sym; on failure writes which symbol is missing into reason and returns NULL. */
void *trr_dynlib_sym(void *lib, const char *sym, char *reason, size_t reason_cap);

#endif
