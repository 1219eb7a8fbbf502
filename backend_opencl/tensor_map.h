/* Tensor maps for the TMA loads of kernels/opencl/matmul_wgmma.cl. OpenCL has no way to make one: NVIDIA's CUDA
 * driver, which every NVIDIA OpenCL install has beside it, encodes them (cuTensorMapEncodeTiled, which needs a
 * current CUDA context: the device's primary context, retained on first use and current only while encoding).
 * The encoding carries a placeholder address, since OpenCL does not tell the host a buffer's device address;
 * the kernel tmap_fill writes the map into device memory and sets the address there.
 * No OpenCL types: tests reach the geometry without a device. */
#ifndef TRR_CL_TENSOR_MAP_H
#define TRR_CL_TENSOR_MAP_H

#include <stdint.h>

/* A device's encoder state: state 0 untried, 1 ready, -1 unavailable (reason says why). Used under the
 * context's lock, as every call on a context is. */
typedef struct trr_cl_tma {
    int state;
    void *context; /* the retained primary context */
    int device;    /* its CUdevice */
    char reason[192];
} trr_cl_tma;

/* The 3-D box geometry of an 8-bit operand of batch products of rows x k bytes (row stride ld, batch stride bs,
 * 0 for one matrix shared by every product) read in boxes of 64 bytes of K by box rows: dims {k, rows,
 * products}, strides {ld, bs} in bytes (a lone matrix gets a batch dimension of 1), boxes {64, box, 1}. */
void trr_cl_tma_geometry(int64_t rows, int64_t k, int64_t ld, int64_t bs, int64_t batch, int box, uint64_t dims[3],
                         uint64_t strides[2], unsigned boxes[3]);

/* map (128 bytes, 64-byte aligned) for that geometry, 64-byte swizzled (the layout matmul_wgmma.cl's SW64 names),
 * reads past the matrix as zeros, on the CUDA device at PCI address pci_bus_id ("dddd:bb:dd.f"). 1: written;
 * 0: not (tma->reason says why; a device that cannot is not asked again). */
int trr_cl_tma_encode(trr_cl_tma *tma, const char *pci_bus_id, uint64_t map[16], int64_t rows, int64_t k, int64_t ld,
                      int64_t bs, int64_t batch, int box);

/* Gives the primary context back. */
void trr_cl_tma_release(trr_cl_tma *tma);

#endif
