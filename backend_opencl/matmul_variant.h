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
 * probe verdict (mma_probe.c); then two 8-bit float operands. Any layout and alignment: the operands it cannot
 * read as stored run from copies (trr_cl_f8_view). */
const char *trr_cl_wgmma_refusal(int wgmma_ok, const char *probe_reason, const trr_call *call);

/* Which operands of an 8-bit float matmul the wgmma kernel reads from K-major copies (matmul_pack.c): bit 0 A,
 * bit 1 B; 0 for any other call. It reads A stored [M,K] and B stored [N,K] whose rows, offsets and batch
 * strides are multiples of 16 elements as they are. */
int trr_cl_f8_copies(const trr_call *call);
/* The call as the wgmma kernel runs it, into *out_view: each copied operand [rows, K rounded up to 16] K-major,
 * one matrix per matrix of the batch that has its own, offset 0, mem NULL until trr_cl_f8_pack sets it. 0 (and
 * *out_view untouched) where nothing is copied. */
int trr_cl_f8_view(const trr_call *call, trr_call *out_view);

#endif
