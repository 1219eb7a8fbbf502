/* One monotonic clock for every wall-clock interval the library measures (progress, warm-up, recheck periods). */
#ifndef TRR_CLOCK_H
#define TRR_CLOCK_H

/* Seconds since an arbitrary fixed point; only differences mean anything. */
double trr_now_s(void);

#endif
