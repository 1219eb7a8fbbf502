/* PTX from NVIDIA's OpenCL compiler made into sm_90a PTX (ptx_retarget.c). No OpenCL types: tests reach it
 * without a device. */
#ifndef TRR_PTX_RETARGET_H
#define TRR_PTX_RETARGET_H

#include <stddef.h>

/* The marker kernels put before each sm_90a-only instruction while the driver compiles them for sm_90
 * (kernels/opencl/matmul_wgmma.cl: WG_PTX): a PTX comment to that compiler. */
#define TRR_PTX_SM90A_MARK "//@sm_90a@ "

/* ptx (n bytes, not necessarily terminated) with every marker removed, ".target sm_90" made ".target sm_90a",
 * as a new terminated string in *out (its length in *out_n; free() it). 0 on success; -1 with the reason in why
 * where the text is not PTX for sm_90 (another architecture, a .version before 8.0, which has no wgmma) or holds
 * no marker, or memory ran out. */
int trr_ptx_retarget_sm90a(const char *ptx, size_t n, char **out, size_t *out_n, char *why, size_t cap);

#endif
