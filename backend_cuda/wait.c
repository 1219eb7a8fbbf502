/* The synchronize's short path. cuStreamSynchronize after a small kernel costs 0.4-0.8 us more than the host
 * watching a word the device writes when the stream reaches it (stream_probe's flag probe on an H200: a graph of
 * one empty kernel then cuStreamSynchronize 5.83 us, then cuStreamWriteValue32 and a spin on the word 5.45;
 * bench/results/2026-11-24-h200-cuda-sync-flag.txt). So the synchronize puts a write of a new sequence number
 * into mapped host memory behind the stream's work and spins on it for a short while; the write comes after a
 * memory barrier (the flag's default: the driver refuses the write without it), so every earlier write of the
 * stream is visible to the host first. Past the spin, when the driver lacks the calls, or once the caller has
 * the stream itself, it waits in cuStreamSynchronize, which also reports a fault (a faulted stream never writes
 * the flag). */
#define _POSIX_C_SOURCE 200809L
#include "trr_cuda.h"

#include <time.h>

#define SPIN_NS 20000 /* longer waits go to the driver, which sleeps or spins as the context's flags say */
#define TRR_CU_MEMHOSTALLOC_DEVICEMAP 0x02

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
}

void trr_cuda_flag_close(trr_cuda_dev *dev) {
    if (dev->flag) trr_cu.MemFreeHost((void *)dev->flag);
    dev->flag = NULL;
}

CUresult trr_cuda_wait_stream(trr_cuda_dev *dev) {
    /* not on a stream the caller also uses: a capture it began there would take the write into its graph */
    if (dev->flag && dev->busy && !dev->native) {
        const uint32_t seq = dev->flag_seq + 1;
        if (trr_cu.StreamWriteValue32(dev->stream, dev->flag_dev, seq, 0) == TRR_CUDA_SUCCESS) {
            dev->flag_seq = seq;
            const int64_t t0 = now_ns();
            do {
                if (*dev->flag == seq) return TRR_CUDA_SUCCESS;
            } while (now_ns() - t0 < SPIN_NS);
        }
    }
    return trr_cu.StreamSynchronize(dev->stream);
}
