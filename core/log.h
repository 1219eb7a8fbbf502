/* Messages to the program's handler (include/trireme.h, trr_log_set); a no-op when none is set. */
#ifndef TRR_LOG_H
#define TRR_LOG_H

#include "trireme.h"

#include <stdarg.h>

void trr_log(trr_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
