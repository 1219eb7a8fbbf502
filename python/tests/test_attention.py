"""ctx.attention on every device here, against a NumPy float64 reference of the full scores (docs/ops.md, attention)
with docs/ops.md's bounds: f32 o per (batch, head) ||err||_F / ||ref||_F <= 1e-5 + 2^-24 (D + 8) L, lse
|err| <= 1e-5 (1 + |lse|) + 2^-24 (D + 8) L_i, half outputs as every half output (bounds.py); rows that see no key
exactly 0 and -inf. And against torch's scaled_dot_product_attention where torch is installed."""

import numpy as np
import pytest

import trireme
from bounds import bf16, f16, no_spurious_nonfinite
from test_norms import rounded


def attention_ref(q, k, v, causal=False, scale=None):
    """o [B,Hq,Sq,D], lse [B,Hq,Sq] and each row's logit scale, in float64 from the full scores."""
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    b, hq, sq, d = q.shape
    hkv, skv = k.shape[1], k.shape[2]
    scale = 1.0 / np.sqrt(d) if scale is None else float(np.float32(scale))
    kk, vv = np.repeat(k, hq // hkv, axis=1), np.repeat(v, hq // hkv, axis=1)  # head h reads kv head h // group
    s = scale * np.einsum("bhid,bhjd->bhij", q, kk)
    mag = abs(scale) * np.einsum("bhid,bhjd->bhij", np.abs(q), np.abs(kk))
    seen = np.ones((sq, skv), bool)
    if causal:
        seen = np.arange(skv)[None, :] <= np.arange(sq)[:, None] + (skv - sq)
    s = np.where(seen, s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    any_key = np.isfinite(m)
    p = np.where(seen, np.exp(s - np.where(any_key, m, 0.0)), 0.0)
    l = p.sum(axis=-1, keepdims=True)
    o = np.einsum("bhij,bhjd->bhid", p, vv) / np.where(l > 0, l, 1.0)
    lse = np.where(any_key[..., 0], m[..., 0] + np.log(np.where(l[..., 0] > 0, l[..., 0], 1.0)), -np.inf)
    logit_scale = np.where(seen, mag, 0.0).max(axis=-1)
    return o, lse, logit_scale


def rand(rng, *shape):
    return rng.uniform(-1.0, 1.0, shape).astype(np.float32)


def check(o, lse, want_o, want_lse, lscale, dt):
    d = want_o.shape[-1]
    o = np.asarray(o, np.float64)
    sees = np.isfinite(want_lse)
    assert (o[~sees] == 0).all(), "rows that see no key must be exactly 0"
    if lse is not None:
        lse = np.asarray(lse, np.float64)
        assert (np.isneginf(lse) == ~sees).all(), "lse is -inf exactly where a row sees no key"
        bound = 1e-5 * (1 + np.abs(want_lse[sees])) + 2.0 ** -24 * (d + 8) * lscale[sees]
        assert (np.abs(lse[sees] - want_lse[sees]) <= bound).all(), "lse past its bound"
    for b in range(o.shape[0]):
        for h in range(o.shape[1]):
            got, ref = o[b, h], want_o[b, h]
            no_spurious_nonfinite(got, ref)
            if dt == "float32":
                bound = 1e-5 + 2.0 ** -24 * (d + 8) * lscale[b, h].max()
                err = np.linalg.norm(got - ref) / max(np.linalg.norm(ref), np.finfo(np.float32).tiny)
                assert err <= bound, f"matrix ({b}, {h}): Frobenius {err:.3g} > {bound:.3g}"
            elif np.linalg.norm(ref) > 0:
                (f16 if dt == "float16" else bf16)(got, ref)


SHAPES = [  # b, hq, hkv, sq, skv, d, causal
    (1, 1, 1, 1, 1, 16, False),
    (2, 4, 2, 17, 33, 16, False),
    (2, 4, 2, 17, 33, 64, True),
    (1, 8, 1, 1, 100, 80, True),  # decode, multi-query
    (1, 2, 2, 40, 9, 32, True),  # Sq > Skv: the first 31 rows see no key
]


@pytest.mark.parametrize("dt", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("shape", SHAPES)
def test_attention_matches_float64(ctx, rng, dt, shape):
    b, hq, hkv, sq, skv, d, causal = shape
    q, k, v = rand(rng, b, hq, sq, d), rand(rng, b, hkv, skv, d), rand(rng, b, hkv, skv, d)
    tq, tk, tv = (ctx.tensor(a, dtype=dt) for a in (q, k, v))
    o, lse = ctx.attention(tq, tk, tv, causal=causal, lse=True)
    assert o.shape == (b, hq, sq, d) and o.dtype == dt and lse.shape == (b, hq, sq) and lse.dtype == "float32"
    want_o, want_lse, lscale = attention_ref(*(rounded(a, dt) for a in (q, k, v)), causal=causal)
    check(o.numpy(), lse.numpy(), want_o, want_lse, lscale, dt)


def test_numpy_in_numpy_out_scale_and_no_lse(ctx, rng):
    q, k, v = rand(rng, 1, 2, 5, 8), rand(rng, 1, 2, 7, 8), rand(rng, 1, 2, 7, 8)
    o = ctx.attention(q, k, v, scale=0.3)
    assert isinstance(o, np.ndarray) and o.shape == (1, 2, 5, 8)
    want_o, want_lse, lscale = attention_ref(q, k, v, scale=0.3)
    check(o, None, want_o, want_lse, lscale, "float32")
    out = np.full((1, 2, 5, 8), np.nan, np.float32)
    assert ctx.attention(q, k, v, out=out, causal=True) is out
    want_o, want_lse, lscale = attention_ref(q, k, v, causal=True)
    check(out, None, want_o, want_lse, lscale, "float32")
    with pytest.raises(trireme.ArgumentError):
        ctx.attention(q, k, v, scale=0.0)


def test_bshd_view(ctx, rng):
    """torch's [B,S,H,D] storage passed as its permuted [B,H,S,D] view, with padded heads (any B, H, S strides)."""
    b, s, h, d = 2, 11, 3, 16
    store = ctx.tensor(rand(rng, b, s, h, d + 4))  # [B,S,H,D+4], padded rows
    view = trireme.Tensor(store._storage, (b, h, s, d), store.trr_dtype,
                          strides=(s * h * (d + 4), d + 4, h * (d + 4), 1), offset=store.offset)
    k, v = rand(rng, b, h, 13, d), rand(rng, b, h, 13, d)
    o, lse = ctx.attention(view, k, v, lse=True)
    q = np.transpose(store.numpy()[..., :d], (0, 2, 1, 3))
    want_o, want_lse, lscale = attention_ref(q, k, v)
    check(o.numpy(), lse.numpy(), want_o, want_lse, lscale, "float32")


def test_bad_calls_are_refused(ctx, rng):
    q, k, v = rand(rng, 1, 3, 4, 8), rand(rng, 1, 2, 4, 8), rand(rng, 1, 2, 4, 8)
    with pytest.raises(trireme.ArgumentError, match="multiple of Hkv"):
        ctx.attention(q, k, v)
    with pytest.raises(trireme.ArgumentError, match="head dimension"):
        ctx.attention(rand(rng, 1, 2, 4, 8), rand(rng, 1, 2, 4, 9), rand(rng, 1, 2, 4, 9))


def test_matches_torch_sdpa(rng):
    torch = pytest.importorskip("torch", reason="torch is not installed: the SDPA comparison needs it")
    with trireme.Context("cpu") as ctx:
        q, k, v = rand(rng, 2, 4, 17, 32), rand(rng, 2, 4, 17, 32), rand(rng, 2, 4, 17, 32)
        for causal in (False, True):
            o = ctx.attention(q, k, v, causal=causal)
            want = torch.nn.functional.scaled_dot_product_attention(
                *(torch.from_numpy(a).double() for a in (q, k, v)), is_causal=causal).numpy()
            assert np.linalg.norm(o - want) / np.linalg.norm(want) <= 2e-5
        # torch's [B,S,H,D] tensors through DLPack, as their transpose(1, 2) views
        tq, tk, tv = (torch.from_numpy(np.ascontiguousarray(np.transpose(a, (0, 2, 1, 3)))) for a in (q, k, v))
        o = ctx.attention(*(trireme.from_dlpack(t.transpose(1, 2), ctx) for t in (tq, tk, tv)), causal=True)
        want = torch.nn.functional.scaled_dot_product_attention(*(t.transpose(1, 2).double() for t in (tq, tk, tv)),
                                                                is_causal=True).numpy()
        assert np.linalg.norm(o.numpy() - want) / np.linalg.norm(want) <= 2e-5
