/* sm_90a PTX from the driver's sm_90 PTX (ptx_retarget.h): NVIDIA's OpenCL compiler targets the device's plain
 * architecture, whose ptxas refuses wgmma, but its driver builds sm_90a PTX handed in as a binary. */
#include "ptx_retarget.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first occurrence of needle (m bytes) in hay (n bytes), or NULL. */
static const char *find(const char *hay, size_t n, const char *needle, size_t m) {
    for (size_t i = 0; m <= n && i + m <= n; i++)
        if (memcmp(hay + i, needle, m) == 0) return hay + i;
    return NULL;
}

/* The directive's operand: the text after `name` and blanks, up to the end of its line, into out. */
static int directive(const char *ptx, size_t n, const char *name, char *out, size_t cap) {
    const char *p = find(ptx, n, name, strlen(name));
    if (!p) return -1;
    p += strlen(name);
    const char *end = ptx + n;
    while (p < end && (*p == ' ' || *p == '\t')) p++;
    size_t k = 0;
    while (p + k < end && p[k] != '\n' && p[k] != '\r' && p[k] != ' ' && p[k] != ',' && k + 1 < cap) k++;
    memcpy(out, p, k);
    out[k] = '\0';
    return (int)(p - ptx);
}

int trr_ptx_retarget_sm90a(const char *ptx, size_t n, char **out, size_t *out_n, char *why, size_t cap) {
    *out = NULL;
    *out_n = 0;
    while (n > 0 && ptx[n - 1] == '\0') n--;
    char target[32], version[32];
    const int at = directive(ptx, n, "\n.target", target, sizeof target);
    if (at < 0 || strcmp(target, "sm_90") != 0) {
        snprintf(why, cap, "the driver's PTX targets %s, not sm_90 (wgmma needs sm_90a)", at < 0 ? "nothing" : target);
        return -1;
    }
    if (directive(ptx, n, ".version", version, sizeof version) < 0 || atoi(version) < 8) {
        snprintf(why, cap, "the driver's PTX is version %s; wgmma needs 8.0 or later", version);
        return -1;
    }
    const size_t mark = strlen(TRR_PTX_SM90A_MARK);
    if (!find(ptx, n, TRR_PTX_SM90A_MARK, mark)) {
        snprintf(why, cap, "the driver's PTX holds no sm_90a instruction marker");
        return -1;
    }
    char *s = malloc(n + 2);
    if (!s) {
        snprintf(why, cap, "no host memory for the PTX");
        return -1;
    }
    /* the target's operand ends right after "sm_90": insert the 'a' there */
    const size_t cut = (size_t)at + strlen("sm_90");
    memcpy(s, ptx, cut);
    s[cut] = 'a';
    memcpy(s + cut + 1, ptx + cut, n - cut);
    size_t len = n + 1, w = 0;
    for (size_t r = 0; r < len;) {
        if (r + mark <= len && memcmp(s + r, TRR_PTX_SM90A_MARK, mark) == 0) {
            r += mark;
            continue;
        }
        s[w++] = s[r++];
    }
    s[w] = '\0';
    *out = s;
    *out_n = w;
    return 0;
}
