/* Which matmul kernel the OpenCL backend runs where neither an override nor the tuning data names one, and the
 * tensor-core kernel's work-group (config.c).
 * No OpenCL types: tests reach it without a device. */
#ifndef TRR_CL_MATMUL_VARIANT_H
#define TRR_CL_MATMUL_VARIANT_H

#include "backend.h"
#include "trireme.h"

/* 1 for the operand pairs matmul_mma.cl takes: f16 or bf16 alike, or two 8-bit floats (e4m3 and e5m2 in any mix,
 * widened to f16 in the kernel). */
int trr_cl_mma_operands(trr_dtype a, trr_dtype b);
/* TRR_VARIANT_MMA where the mma probe passed (mma_ok) and matmul_mma.cl takes the operands, else
 * TRR_VARIANT_SIMT (matmul.cl, which takes every dtype). */
trr_variant trr_cl_matmul_auto_variant(int mma_ok, trr_dtype a, trr_dtype b);
/* The tensor-core kernel's work-group for its heuristic tile (wide: 128 x 128, else 64 x 64) with A of dtype a
 * and C of dtype c: 256 threads (8 warps) on the wide tile where C is f32 or A an 8-bit float, else 128. */
int trr_cl_mma_threads(int wide, trr_dtype a, trr_dtype c);

/* 1 where an operand's rows start on multiples of n elements in every product of a batch of batch (its row
 * stride, offset, and batch stride where there is more than one product), so a kernel reads its rows in whole
 * n-element chunks (buffers themselves are aligned far beyond that). */
int trr_cl_rows_aligned(const trr_operand *t, int64_t n, int64_t batch);

/* Why matmul_wgmma.cl cannot take call, or NULL where it can: wgmma_ok and probe_reason are the device's wgmma
 * probe verdict (mma_probe.c); then 8-bit float operands, A stored [M,K] with B stored [N,K], and rows, offsets
 * and batch strides that are multiples of 16 elements. */
const char *trr_cl_wgmma_refusal(int wgmma_ok, const char *probe_reason, const trr_call *call);

#endif
