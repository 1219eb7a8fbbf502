"""Tiling configs from Python (Context.override, Context.last_config): a forced field reaches the backend and the
call reports it, an unknown field or variant name is refused before any call, a config the backend cannot run
fails the call with its reason, and clearing the override gives the backend its choice back. Split-K forced on
the GPU backends' portable kernels (lavapipe, PoCL) returns the product within the f16 bound."""

import numpy as np
import pytest

import trireme
import bounds


def matmul_inputs(rng, m, n, k):
    return ((rng.random((m, k)) * 2 - 1).astype(np.float16), (rng.random((k, n)) * 2 - 1).astype(np.float16))


def test_forced_fields_reach_the_call(ctx, rng):
    a, b = matmul_inputs(rng, 33, 65, 200)
    ctx.override("matmul", block_k=32, group_m=4)
    ctx.matmul(a, b)
    last = ctx.last_config()
    assert last["block_k"] == 32 and last["group_m"] == 4, last
    assert isinstance(last["variant"], str) and last["variant"] != "auto", last
    ctx.override("matmul")  # cleared: the backend's own choice again
    ctx.matmul(a, b)
    assert ctx.last_config()["group_m"] != 4 or ctx.last_config()["block_k"] != 32


def test_a_dict_and_named_fields_merge(ctx, rng):
    a, b = matmul_inputs(rng, 16, 16, 64)
    ctx.override("matmul", {"block_k": 32}, group_m=4)  # the config above: no kernel built for this test alone
    ctx.matmul(a, b)
    last = ctx.last_config()
    assert (last["block_k"], last["group_m"]) == (32, 4), last
    ctx.override("matmul")


def test_unknown_field_and_variant_are_refused(ctx):
    with pytest.raises(TypeError, match="no config field 'tile'"):
        ctx.override("matmul", tile=64)
    with pytest.raises(trireme.TriremeError):
        ctx.override("matmul", variant="no_such_kernel")
    with pytest.raises(trireme.TriremeError):
        ctx.override("no_such_op", block_k=16)


def test_a_config_the_backend_cannot_run_fails_with_its_reason(ctx, rng):
    a, b = matmul_inputs(rng, 16, 16, 64)
    ctx.override("matmul", split_k=33)
    try:
        with pytest.raises(trireme.TriremeError) as e:
            ctx.matmul(a, b)
        assert e.value.name == "TRR_ERR_UNSUPPORTED", e.value
        assert "split_k" in e.value.detail, e.value.detail
    finally:
        ctx.override("matmul")


@pytest.mark.parametrize("split", [2, 5])
def test_split_k_on_every_backend(ctx, rng, split):
    if ctx.backend == "cuda":
        pytest.skip("the CUDA backend splits K on its mma and wgmma kernels, not the simt one")
    a, b = matmul_inputs(rng, 40, 70, 1030)
    ctx.override("matmul", split_k=split, variant="simt")
    try:
        got = ctx.matmul(a, b)
        assert ctx.last_config()["split_k"] == split
    finally:
        ctx.override("matmul")
    bounds.f16(got, a.astype(np.float64) @ b.astype(np.float64), k=1030)
