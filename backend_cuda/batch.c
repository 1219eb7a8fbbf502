/* Queued launches. One cuLaunchKernel costs 3.3-4 us of host time on an H200's host, longer than a small kernel
 * runs, so a run of small ops was bound by the launches (issue #19: a 1-element add 3.5-5 us a call). Small
 * kernels (trr_cuda_launch: the memory-bound ops, grids of at most TRR_CUDA_BATCH_MAX_THREADS threads) that
 * come while the stream has work the host has not waited for go into the next node of an executable CUDA graph
 * instead: a chain of TRR_CUDA_BATCH_NODES kernel nodes, instantiated once per context, whose node parameters
 * are replaced (the driver copies the kernel's arguments then) and which is launched when the chain is full or
 * before anything else reaches the stream. Nodes past the batch are disabled. The first launch after a wait is
 * not queued, so an idle device starts at once: it goes out as a graph of one node, whose launch and
 * synchronize cost 2-3 us less than cuLaunchKernel's (bench/results/2026-11-24-h200-cuda-queued-launches.txt).
 * Not queued: launches inside a timed span (the device timer measures kernels launched one by one, as every
 * backend's bench figure is), and every launch once the caller has taken the native stream (work the caller
 * puts on it must not overtake kernels still queued here). */
#include "trr_cuda.h"

#include <stdlib.h>

struct trr_cuda_batch {
    CUgraph graph; /* the chain; its node handles name the nodes of exec */
    CUgraphExec exec;
    CUgraphNode nodes[TRR_CUDA_BATCH_NODES];
    int queued;  /* nodes holding this batch's kernels, from the first */
    int enabled; /* nodes enabled in exec, from the first: those of the last launch, or all after instantiation */
    CUgraph one_graph; /* a graph of one kernel node, launched at once: the first small kernel after a wait */
    CUgraphExec one_exec;
    CUgraphNode one_node;
};

static int graphs_available(void) {
    return trr_cu.GraphCreate && trr_cu.GraphAddKernelNode && trr_cu.GraphInstantiate &&
           trr_cu.GraphExecKernelNodeSetParams && trr_cu.GraphNodeSetEnabled && trr_cu.GraphLaunch &&
           trr_cu.GraphExecDestroy && trr_cu.GraphDestroy;
}

void trr_cuda_batch_release(trr_cuda_dev *dev) {
    trr_cuda_batch *b = dev->batch;
    if (!b) return;
    if (b->exec) trr_cu.GraphExecDestroy(b->exec);
    if (b->graph) trr_cu.GraphDestroy(b->graph);
    if (b->one_exec) trr_cu.GraphExecDestroy(b->one_exec);
    if (b->one_graph) trr_cu.GraphDestroy(b->one_graph);
    free(b);
    dev->batch = NULL;
}

/* The chain, every node first given p (a valid kernel, so that instantiation checks something real). */
static CUresult create(trr_cuda_dev *dev, const trr_cu_kernel_node_params *p) {
    trr_cuda_batch *b = calloc(1, sizeof *b);
    if (!b) return TRR_CUDA_ERROR_OUT_OF_MEMORY;
    dev->batch = b;
    CUresult r = trr_cu.GraphCreate(&b->graph, 0);
    for (int i = 0; r == TRR_CUDA_SUCCESS && i < TRR_CUDA_BATCH_NODES; i++)
        r = trr_cu.GraphAddKernelNode(&b->nodes[i], b->graph, i ? &b->nodes[i - 1] : NULL, i ? 1 : 0, p);
    if (r == TRR_CUDA_SUCCESS) r = trr_cu.GraphInstantiate(&b->exec, b->graph, 0);
    if (r == TRR_CUDA_SUCCESS) r = trr_cu.GraphCreate(&b->one_graph, 0);
    if (r == TRR_CUDA_SUCCESS) r = trr_cu.GraphAddKernelNode(&b->one_node, b->one_graph, NULL, 0, p);
    if (r == TRR_CUDA_SUCCESS) r = trr_cu.GraphInstantiate(&b->one_exec, b->one_graph, 0);
    if (r != TRR_CUDA_SUCCESS) {
        trr_cuda_batch_release(dev);
        return r;
    }
    b->enabled = TRR_CUDA_BATCH_NODES;
    return TRR_CUDA_SUCCESS;
}

CUresult trr_cuda_batch_flush_dev(trr_cuda_dev *dev) {
    trr_cuda_batch *b = dev->batch;
    if (!b || !b->queued) return TRR_CUDA_SUCCESS;
    const int n = b->queued;
    b->queued = 0; /* whatever happens below, these kernels are not launched twice */
    for (int i = n; i < b->enabled; i++) {
        CUresult r = trr_cu.GraphNodeSetEnabled(b->exec, b->nodes[i], 0);
        if (r != TRR_CUDA_SUCCESS) {
            /* which nodes are enabled is no longer known: a stale one must never run, so no more batches */
            trr_cuda_batch_release(dev);
            dev->batch_off = 1;
            return r;
        }
    }
    b->enabled = n;
    return trr_cu.GraphLaunch(b->exec, dev->stream);
}

trr_status trr_cuda_batch_flush(trr_context *ctx) {
    trr_cuda_dev *dev = ctx->dev;
    if (!dev->batch || !dev->batch->queued) return TRR_OK;
    CUresult r = trr_cuda_batch_flush_dev(dev);
    if (r != TRR_CUDA_SUCCESS) return trr_cuda_fail(ctx, "launching the queued kernels (cuGraphLaunch)", r);
    dev->since_wait++;
    return TRR_OK;
}

trr_status trr_cuda_batch_add(trr_context *ctx, const trr_cu_kernel_node_params *p, int *out_queued) {
    trr_cuda_dev *dev = ctx->dev;
    *out_queued = 0;
    if (dev->batch_off || dev->timing) return TRR_OK;
    if (!dev->batch) {
        if (!graphs_available() || create(dev, p) != TRR_CUDA_SUCCESS) {
            dev->batch_off = 1; /* the driver has no graphs for us: launch as before */
            return TRR_OK;
        }
    }
    trr_cuda_batch *b = dev->batch;
    if (dev->since_wait == 0) {
        /* the stream is idle: launch now, as a graph of one node (2-3 us less than cuLaunchKernel, launch and
         * synchronize together); a refused node is launched by the caller, which reports the error */
        if (trr_cu.GraphExecKernelNodeSetParams(b->one_exec, b->one_node, p) != TRR_CUDA_SUCCESS) return TRR_OK;
        TRR_CU_CHECK(ctx, trr_cu.GraphLaunch(b->one_exec, dev->stream), "cuGraphLaunch");
        dev->since_wait++;
        *out_queued = 1;
        return TRR_OK;
    }
    const int i = b->queued;
    /* a refused node (an argument the driver rejects) is launched instead, after the queue, and reports there */
    if (trr_cu.GraphExecKernelNodeSetParams(b->exec, b->nodes[i], p) != TRR_CUDA_SUCCESS)
        return trr_cuda_batch_flush(ctx);
    if (i >= b->enabled) {
        CUresult r = trr_cu.GraphNodeSetEnabled(b->exec, b->nodes[i], 1);
        if (r != TRR_CUDA_SUCCESS) return trr_cuda_batch_flush(ctx);
        b->enabled = i + 1;
    }
    b->queued = i + 1;
    *out_queued = 1;
    if (b->queued == TRR_CUDA_BATCH_NODES) return trr_cuda_batch_flush(ctx);
    return TRR_OK;
}

int trr_cuda_batch_queued(const trr_cuda_dev *dev) { return dev->batch ? dev->batch->queued : 0; }
