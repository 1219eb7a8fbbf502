/* The device's last-level cache, so a case whose working set fits in it is labelled "in cache" rather than
 * flagged above the copy ceiling: from a cache its bytes stream faster than any copy through memory. */
#include "bench.h"

#include <stdio.h>

/* "32768K", "1M", "524288" -> bytes; 0 when unreadable. */
static size_t size_file(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    unsigned long long v = 0;
    char unit = 0;
    const int got = fscanf(f, "%llu%c", &v, &unit);
    fclose(f);
    if (got < 1) return 0;
    if (got == 2 && (unit == 'K' || unit == 'k')) v <<= 10;
    if (got == 2 && (unit == 'M' || unit == 'm')) v <<= 20;
    if (got == 2 && (unit == 'G' || unit == 'g')) v <<= 30;
    return (size_t)v;
}

static int int_file(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int v = -1;
    if (fscanf(f, "%d", &v) != 1) v = -1;
    fclose(f);
    return v;
}

size_t trr_bench_llc_bytes_sysfs(const char *cache_dir) {
    size_t best = 0;
    int best_level = -1;
    for (int i = 0; i < 16; i++) {
        char path[512], type[32] = "";
        snprintf(path, sizeof path, "%s/index%d/type", cache_dir, i);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        if (fscanf(f, "%31s", type) != 1) type[0] = '\0';
        fclose(f);
        if (type[0] == 'I') continue; /* an instruction cache holds no data */
        snprintf(path, sizeof path, "%s/index%d/level", cache_dir, i);
        const int level = int_file(path);
        snprintf(path, sizeof path, "%s/index%d/size", cache_dir, i);
        const size_t bytes = size_file(path);
        if (bytes && (level > best_level || (level == best_level && bytes > best))) best = bytes, best_level = level;
    }
    return best;
}

size_t trr_bench_device_llc_bytes(const trr_device_info *dev) {
    /* CPU devices (the cpu backend, PoCL, lavapipe) run on the host's cores; the runtime knows no GPU's L2 */
    if (!dev || dev->is_gpu) return 0;
    return trr_bench_llc_bytes_sysfs("/sys/devices/system/cpu/cpu0/cache");
}

int trr_bench_result_suspect(const trr_bench_result *r, double copy_gbs) {
    return r->outcome == TRR_BENCH_OK && !r->in_cache && trr_bench_above_ceiling_suspect(r->bench, r->figure, copy_gbs);
}

int trr_bench_in_cache(const trr_case *c, size_t llc_bytes) {
    if (!llc_bytes) return 0;
    const double bytes = trr_case_bytes(c);
    return bytes > 0 && bytes <= (double)llc_bytes;
}
