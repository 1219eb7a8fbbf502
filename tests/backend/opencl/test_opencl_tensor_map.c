/* The tensor maps of the OpenCL wgmma kernel's TMA loads (backend_opencl/tensor_map.h): the box geometry of an
 * operand, and a device the CUDA driver cannot encode for refused with the reason, not retried. No device is
 * needed. */
#include <criterion/criterion.h>
#include <string.h>

#include "../backend_opencl/tensor_map.h"

Test(opencl_tensor_map, one_matrix_gets_a_batch_dimension_of_one) {
    uint64_t dims[3], strides[2];
    unsigned boxes[3];
    trr_cl_tma_geometry(1000, 528, 544, 0, 1, 128, dims, strides, boxes);
    cr_expect_eq(dims[0], 528u);
    cr_expect_eq(dims[1], 1000u);
    cr_expect_eq(dims[2], 1u);
    cr_expect_eq(strides[0], 544u);
    cr_expect_eq(strides[1], 544u * 1000u);
    cr_expect_eq(boxes[0], 64u);
    cr_expect_eq(boxes[1], 128u);
    cr_expect_eq(boxes[2], 1u);
    /* a batch stride with a single product changes nothing */
    trr_cl_tma_geometry(1000, 528, 544, 7 * 4096, 1, 112, dims, strides, boxes);
    cr_expect_eq(dims[2], 1u);
    cr_expect_eq(strides[1], 544u * 1000u);
    cr_expect_eq(boxes[1], 112u);
}

Test(opencl_tensor_map, batches_step_by_their_stride_and_a_shared_matrix_by_none) {
    uint64_t dims[3], strides[2];
    unsigned boxes[3];
    const int64_t bs = 300 * 1008 + 16;
    trr_cl_tma_geometry(300, 1000, 1008, bs, 3, 64, dims, strides, boxes);
    cr_expect_eq(dims[0], 1000u);
    cr_expect_eq(dims[1], 300u);
    cr_expect_eq(dims[2], 3u);
    cr_expect_eq(strides[0], 1008u);
    cr_expect_eq(strides[1], (uint64_t)bs);
    /* one matrix for every product (batch stride 0): the kernel reads it at batch 0 */
    trr_cl_tma_geometry(300, 1000, 1008, 0, 3, 64, dims, strides, boxes);
    cr_expect_eq(dims[2], 1u);
    cr_expect_eq(strides[1], 1008u * 300u);
}

Test(opencl_tensor_map, a_device_the_driver_cannot_encode_for_says_why_once) {
    trr_cl_tma tma;
    memset(&tma, 0, sizeof tma);
    _Alignas(64) uint64_t map[16];
    /* no CUDA device has this PCI address, and without a CUDA driver there is none at all */
    cr_expect_eq(trr_cl_tma_encode(&tma, "0000:ff:1f.7", map, 256, 256, 256, 0, 1, 128), 0);
    cr_expect_eq(tma.state, -1);
    cr_expect(strlen(tma.reason) > 0);
    cr_expect(strstr(tma.reason, "CUDA") != NULL, "%s", tma.reason);
    char kept[sizeof tma.reason];
    memcpy(kept, tma.reason, sizeof kept);
    /* asked again: refused at once with the same reason */
    cr_expect_eq(trr_cl_tma_encode(&tma, "0000:ff:1f.7", map, 256, 256, 256, 0, 1, 128), 0);
    cr_expect_str_eq(tma.reason, kept);
    /* no PCI address at all */
    trr_cl_tma fresh;
    memset(&fresh, 0, sizeof fresh);
    cr_expect_eq(trr_cl_tma_encode(&fresh, "", map, 256, 256, 256, 0, 1, 128), 0);
    cr_expect(strlen(fresh.reason) > 0);
    trr_cl_tma_release(&tma);
    trr_cl_tma_release(&fresh);
    cr_expect_eq(tma.state, 0);
}
