/* The synchronize's short path. cuStreamSynchronize after a small kernel costs more than the host watching a
 * word the device writes when the stream reaches it (stream_probe's flag probe measures both). So the synchronize puts a write of a new sequence number
 * into mapped host memory behind the stream's work and spins on it for a short while; the write comes after a
 * memory barrier (the flag's default: the driver refuses the write without it), so every earlier write of the
 * stream is visible to the host first. Past the spin, when the driver lacks the calls, or once the caller has
 * the stream itself, it waits in cuStreamSynchronize, which also reports a fault (a faulted stream never writes
 * the flag). A one-block element-wise kernel writes the flag itself as its last act (elementwise.cu), quicker
 * still than the stream's write behind it: then the synchronize adds nothing to the stream and only watches. */
#define _POSIX_C_SOURCE 200809L
#include "trr_cuda.h"

#include <time.h>

#define SPIN_NS 20000 /* longer waits go to the driver, which sleeps or spins as the context's flags say */

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void trr_cuda_flag_open(trr_cuda_dev *dev) {
    void *host = NULL;
    CUdeviceptr device = 0;
    if (!trr_cu.MemHostAlloc || !trr_cu.MemHostGetDevicePointer || !trr_cu.MemFreeHost || !trr_cu.StreamWriteValue32)
        return;
    if (trr_cu.MemHostAlloc(&host, 64, TRR_CU_MEMHOSTALLOC_DEVICEMAP) != TRR_CUDA_SUCCESS) return;
    if (trr_cu.MemHostGetDevicePointer(&device, host, 0) != TRR_CUDA_SUCCESS) {
        trr_cu.MemFreeHost(host);
        return;
    }
    dev->flag = host;
    dev->flag_dev = device;
    *dev->flag = 0;
    dev->flag_seq = 0;
    dev->flag_kernel = 0;
}

void trr_cuda_flag_close(trr_cuda_dev *dev) {
    if (dev->flag) trr_cu.MemFreeHost((void *)dev->flag);
    dev->flag = NULL;
}

static uint32_t next_seq(const trr_cuda_dev *dev) {
    return dev->flag_seq + 1 ? dev->flag_seq + 1 : 1; /* 0 means "no kernel writes it" (flag_kernel) */
}

CUdeviceptr trr_cuda_flag_for_kernel(const trr_cuda_dev *dev, uint32_t *out_seq) {
    *out_seq = 0;
    /* Only a kernel on an idle stream, outside timed spans: the pattern of an op and then its synchronize. The
     * kernel's system-scope fence costs device time, which a queued chain of such kernels would pay once per op
     * (the batched tiny add about doubles its time a call when every one-block kernel writes the flag). */
    if (!dev->flag || dev->native || dev->busy || dev->timing) return 0;
    *out_seq = next_seq(dev);
    return dev->flag_dev;
}

void trr_cuda_flag_kernel_enqueued(trr_cuda_dev *dev, uint32_t seq) {
    dev->flag_seq = seq;
    dev->flag_kernel = seq;
}

CUresult trr_cuda_wait_stream(trr_cuda_dev *dev) {
    /* not on a stream the caller also uses: a capture it began there would take the write into its graph */
    if (dev->flag && dev->busy && !dev->native) {
        uint32_t seq = dev->flag_kernel; /* the last command writes the flag itself: nothing to add behind it */
        if (!seq) {
            seq = next_seq(dev);
            if (trr_cu.StreamWriteValue32(dev->stream, dev->flag_dev, seq, 0) != TRR_CUDA_SUCCESS) seq = 0;
            else dev->flag_seq = seq;
        }
        if (seq) {
            const int64_t t0 = now_ns();
            do {
                if (*dev->flag == seq) return TRR_CUDA_SUCCESS;
            } while (now_ns() - t0 < SPIN_NS);
        }
    }
    return trr_cu.StreamSynchronize(dev->stream);
}
