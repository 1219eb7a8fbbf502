/* The process's warning handler (trr_log_set): the library's one way to say something that is not an error of
 * the call it happens in. Library code calls trr_log(), never stdio on stderr. */
#define _POSIX_C_SOURCE 200809L
#include "log.h"

#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static trr_log_fn handler;
static void *handler_user;

trr_status trr_log_set(trr_log_fn fn, void *user) {
    pthread_mutex_lock(&lock);
    handler = fn;
    handler_user = user;
    pthread_mutex_unlock(&lock);
    return TRR_OK;
}

void trr_log(trr_log_level level, const char *fmt, ...) {
    pthread_mutex_lock(&lock);
    const trr_log_fn fn = handler;
    void *user = handler_user;
    pthread_mutex_unlock(&lock);
    if (!fn) return;
    char message[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    fn(level, message, user);
}
