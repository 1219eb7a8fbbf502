/* Launches through CUDA graphs. One cuLaunchKernel costs more host time than a small kernel runs, so a run of
 * small ops is bound by the launches (issue #19), and a kernel launched and synchronized takes longer than a
 * graph of one node (docs/performance.md).
 * - Queued: small kernels (trr_cuda_launch: the memory-bound ops, grids of at most TRR_CUDA_BATCH_MAX_THREADS
 *   threads) that come while the stream has work the host has not waited for go into the next node of an
 *   executable graph instead: a chain of TRR_CUDA_BATCH_NODES kernel nodes, instantiated once per context, whose
 *   node parameters are replaced (the driver copies the kernel's arguments then) and which is launched when the
 *   chain is full or before anything else reaches the stream. Nodes past the batch are disabled.
 * - At once: any kernel launched on an idle stream (the first after a wait) goes out as a graph of one node, one
 *   instantiated graph per kernel function (ONE_SLOTS of them, the oldest replaced; only on an idle stream, so no
 *   launch of a replaced graph is still pending), its node's parameters replaced for each launch.
 * Neither inside a timed span (the device timer measures kernels launched one by one, as every backend's bench
 * figure is), nor once the caller has taken the native stream (work the caller puts on it must not overtake
 * kernels still queued here). */
#include "trr_cuda.h"

#include <stdlib.h>
#include <string.h>

#define ONE_SLOTS 16 /* kernel functions with a one-node graph of their own */

struct trr_cuda_batch {
    CUgraph graph; /* the chain (NULL until a kernel is queued); its node handles name the nodes of exec */
    CUgraphExec exec;
    CUgraphNode nodes[TRR_CUDA_BATCH_NODES];
    int queued;  /* nodes holding this batch's kernels, from the first */
    int enabled; /* nodes enabled in exec, from the first: those of the last launch, or all after instantiation */
    struct {
        CUfunction fn; /* NULL: free */
        CUgraph graph;
        CUgraphExec exec;
        CUgraphNode node;
    } one[ONE_SLOTS];
    int one_next; /* the slot replaced next */
};

static int graphs_available(void) {
    return trr_cu.GraphCreate && trr_cu.GraphAddKernelNode && trr_cu.GraphInstantiate &&
           trr_cu.GraphExecKernelNodeSetParams && trr_cu.GraphNodeSetEnabled && trr_cu.GraphLaunch &&
           trr_cu.GraphExecDestroy && trr_cu.GraphDestroy;
}

static void release_one(trr_cuda_batch *b, int i) {
    if (b->one[i].exec) trr_cu.GraphExecDestroy(b->one[i].exec);
    if (b->one[i].graph) trr_cu.GraphDestroy(b->one[i].graph);
    memset(&b->one[i], 0, sizeof b->one[i]);
}

void trr_cuda_batch_release(trr_cuda_dev *dev) {
    trr_cuda_batch *b = dev->batch;
    if (!b) return;
    if (b->exec) trr_cu.GraphExecDestroy(b->exec);
    if (b->graph) trr_cu.GraphDestroy(b->graph);
    for (int i = 0; i < ONE_SLOTS; i++) release_one(b, i);
    free(b);
    dev->batch = NULL;
}

/* The batch's state, when graphs can be used now: not in a timed span, not after the native stream was taken, and
 * the driver has them. NULL otherwise. */
static trr_cuda_batch *usable(trr_cuda_dev *dev) {
    if (dev->batch_off || dev->timing) return NULL;
    if (!dev->batch) {
        if (!graphs_available() || !(dev->batch = calloc(1, sizeof *dev->batch))) {
            dev->batch_off = 1; /* the driver has no graphs for us (or no memory): launch as before */
            return NULL;
        }
    }
    return dev->batch;
}

/* The chain, every node first given p (a valid kernel, so that instantiation checks something real). */
static CUresult create_chain(trr_cuda_batch *b, const trr_cu_kernel_node_params *p) {
    CUresult r = trr_cu.GraphCreate(&b->graph, 0);
    for (int i = 0; r == TRR_CUDA_SUCCESS && i < TRR_CUDA_BATCH_NODES; i++)
        r = trr_cu.GraphAddKernelNode(&b->nodes[i], b->graph, i ? &b->nodes[i - 1] : NULL, i ? 1 : 0, p);
    if (r == TRR_CUDA_SUCCESS) r = trr_cu.GraphInstantiate(&b->exec, b->graph, 0);
    if (r != TRR_CUDA_SUCCESS) {
        if (b->exec) trr_cu.GraphExecDestroy(b->exec);
        if (b->graph) trr_cu.GraphDestroy(b->graph);
        b->exec = NULL;
        b->graph = NULL;
        return r;
    }
    b->enabled = TRR_CUDA_BATCH_NODES;
    return TRR_CUDA_SUCCESS;
}

/* The one-node graph of p's function, made (replacing the oldest) where there is none, its node given p. -1 when
 * the driver refuses (the caller then launches p itself, which reports why). */
static int one_for(trr_cuda_batch *b, const trr_cu_kernel_node_params *p) {
    for (int i = 0; i < ONE_SLOTS; i++)
        if (b->one[i].fn == p->func)
            return trr_cu.GraphExecKernelNodeSetParams(b->one[i].exec, b->one[i].node, p) == TRR_CUDA_SUCCESS ? i : -1;
    const int i = b->one_next;
    b->one_next = (i + 1) % ONE_SLOTS;
    release_one(b, i);
    if (trr_cu.GraphCreate(&b->one[i].graph, 0) != TRR_CUDA_SUCCESS ||
        trr_cu.GraphAddKernelNode(&b->one[i].node, b->one[i].graph, NULL, 0, p) != TRR_CUDA_SUCCESS ||
        trr_cu.GraphInstantiate(&b->one[i].exec, b->one[i].graph, 0) != TRR_CUDA_SUCCESS) {
        release_one(b, i);
        return -1;
    }
    b->one[i].fn = p->func;
    return i;
}

trr_status trr_cuda_batch_launch_now(trr_context *ctx, const trr_cu_kernel_node_params *p, int *out_launched) {
    trr_cuda_dev *dev = ctx->dev;
    *out_launched = 0;
    trr_cuda_batch *b = !dev->busy ? usable(dev) : NULL;
    if (!b) return TRR_OK;
    const int i = one_for(b, p);
    if (i < 0) return TRR_OK;
    TRR_CU_CHECK(ctx, trr_cu.GraphLaunch(b->one[i].exec, dev->stream), "cuGraphLaunch");
    trr_cuda_enqueued(dev);
    *out_launched = 1;
    return TRR_OK;
}

CUresult trr_cuda_batch_flush_dev(trr_cuda_dev *dev) {
    trr_cuda_batch *b = dev->batch;
    if (!b || !b->queued) return TRR_CUDA_SUCCESS;
    const int n = b->queued;
    b->queued = 0; /* whatever happens below, these kernels are not launched twice */
    for (int i = n; i < b->enabled; i++) {
        CUresult r = trr_cu.GraphNodeSetEnabled(b->exec, b->nodes[i], 0);
        if (r != TRR_CUDA_SUCCESS) {
            /* which nodes are enabled is no longer known: a stale one must never run, so no more graphs (they are
             * freed at close, when nothing launched from them is pending) */
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
    trr_cuda_flushed(dev);
    return TRR_OK;
}

trr_status trr_cuda_batch_add(trr_context *ctx, const trr_cu_kernel_node_params *p, int *out_queued) {
    trr_cuda_dev *dev = ctx->dev;
    *out_queued = 0;
    trr_cuda_batch *b = dev->busy ? usable(dev) : NULL; /* an idle stream launches at once instead */
    if (!b) return TRR_OK;
    if (!b->graph && create_chain(b, p) != TRR_CUDA_SUCCESS) return TRR_OK;
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
    trr_cuda_enqueued(dev); /* the stream's last command now, though it reaches the device at the flush */
    if (b->queued == TRR_CUDA_BATCH_NODES) return trr_cuda_batch_flush(ctx);
    return TRR_OK;
}

int trr_cuda_batch_queued(const trr_cuda_dev *dev) { return dev->batch ? dev->batch->queued : 0; }
