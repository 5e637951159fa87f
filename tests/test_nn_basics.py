"""Linear, softmax, cross_entropy and attention from lecture_utils.nn_basics against torch.nn.functional."""

import math

import pytest
import torch
import torch.nn.functional as F

from lecture_utils.nn_basics import Linear, cross_entropy, scaled_dot_product_attention, softmax, truncated_normal_


def test_linear_weight_shape_and_truncated_init():
    torch.manual_seed(0)
    layer = Linear(256, 768)
    assert [name for name, _ in layer.named_parameters()] == ["weight"]  # no bias
    w = layer.weight.detach()
    assert w.shape == (768, 256)
    sigma = math.sqrt(2 / (256 + 768))
    assert w.abs().max() <= 3 * sigma
    assert w.abs().max() > 2.9 * sigma  # cut at 3 sigma, not narrower
    # A normal cut at +-3 sigma keeps std sigma * sqrt(1 - 2 c phi(c) / erf(c / sqrt 2)) = 0.9866 sigma.
    c = 3.0
    kept = math.sqrt(1 - 2 * c * math.exp(-c * c / 2) / math.sqrt(2 * math.pi) / math.erf(c / math.sqrt(2)))
    assert w.std().item() == pytest.approx(kept * sigma, rel=0.01)  # 196,608 draws: sampling error ~0.2%
    assert w.mean().abs() < 0.01 * sigma


def test_linear_forward_matches_f_linear_and_honours_device_dtype():
    torch.manual_seed(0)
    layer = Linear(6, 4)
    x = torch.randn(2, 3, 6)
    torch.testing.assert_close(layer(x), F.linear(x, layer.weight))
    wide = Linear(3, 2, device="cpu", dtype=torch.float64)
    assert wide.weight.dtype == torch.float64 and wide.weight.device.type == "cpu"
    assert Linear(3, 2, dtype=torch.bfloat16).weight.dtype == torch.bfloat16


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_matches_torch_and_survives_large_inputs(dim):
    torch.manual_seed(0)
    x = torch.randn(4, 5, 6)
    torch.testing.assert_close(softmax(x, dim), F.softmax(x, dim=dim))
    # exp(1000) overflows fp32; the max shift makes this the same softmax as x's.
    big = 1000 * x + 1e4
    out = softmax(big, dim)
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out, F.softmax(big, dim=dim))


@pytest.mark.parametrize("shape", [(7,), (2, 3, 5)])
@pytest.mark.parametrize("scale", [1.0, 1e4])
def test_cross_entropy_matches_torch_with_extra_batch_dims_and_large_logits(shape, scale):
    torch.manual_seed(0)
    vocab = 11
    logits = (scale * torch.randn(*shape, vocab)).requires_grad_()
    targets = torch.randint(0, vocab, shape)
    ours = cross_entropy(logits, targets)
    (ours_grad,) = torch.autograd.grad(ours, logits)
    ref = F.cross_entropy(logits.reshape(-1, vocab), targets.reshape(-1))
    (ref_grad,) = torch.autograd.grad(ref, logits)
    assert ours.shape == () and torch.isfinite(ours)
    torch.testing.assert_close(ours, ref)
    torch.testing.assert_close(ours_grad, ref_grad)


def test_cross_entropy_takes_bf16_logits_to_fp32():
    torch.manual_seed(0)
    logits = torch.randn(8, 50).bfloat16()
    targets = torch.randint(0, 50, (8,))
    loss = cross_entropy(logits, targets)
    assert loss.dtype == torch.float32
    torch.testing.assert_close(loss, F.cross_entropy(logits.float(), targets))


def _masks(batch: int, heads: int, queries: int, keys: int) -> dict[str, torch.Tensor | None]:
    """Masks of each kind; every query keeps key 0, so no row is fully masked (that row would be NaN)."""
    g = torch.Generator().manual_seed(1)
    random = torch.rand(batch, heads, queries, keys, generator=g) > 0.5
    random[..., 0] = True
    per_batch = torch.rand(batch, 1, 1, keys, generator=g) > 0.5  # broadcast over heads and queries
    per_batch[..., 0] = True
    return {
        "none": None,
        "causal": torch.ones(queries, keys, dtype=torch.bool).tril(),
        "random": random,
        "broadcast": per_batch,
    }


@pytest.mark.parametrize("kind", ["none", "causal", "random", "broadcast"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_attention_matches_torch_sdpa(kind, dtype):
    torch.manual_seed(0)
    batch, heads, seq, d_k, d_v = 2, 3, 6, 8, 5
    q, k = torch.randn(2, batch, heads, seq, d_k).to(dtype)
    v = torch.randn(batch, heads, seq, d_v).to(dtype)
    mask = _masks(batch, heads, seq, seq)[kind]
    out = scaled_dot_product_attention(q, k, v, mask)
    assert out.shape == (batch, heads, seq, d_v) and out.dtype == dtype
    if dtype == torch.float32:
        torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))
    else:
        # Against fp32 attention on the same bf16 numbers: only our rounding to bf16 should differ.
        ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), attn_mask=mask)
        torch.testing.assert_close(out.float(), ref, atol=2e-2, rtol=2e-2)


def test_bf16_attention_forms_scores_in_fp32_not_bf16():
    # Logits of std 16 (q, k entries of std 4, head_dim 64), where rounding a score to bf16 moves
    # its weight by a visible fraction. Reference: the same bf16 numbers in float64.
    g = torch.Generator().manual_seed(10)
    q, k, v = (torch.randn(1, 2, 256, 64, generator=g) for _ in range(3))
    q, k, v = (4 * q).bfloat16(), (4 * k).bfloat16(), v.bfloat16()
    causal = torch.ones(256, 256, dtype=torch.bool).tril()
    reference = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), attn_mask=causal)

    def error(out: torch.Tensor) -> float:
        return ((out.double() - reference).norm() / reference.norm()).item()

    ours = error(scaled_dot_product_attention(q, k, v, causal))
    # Another route: the scores rounded to bf16 (a bf16 matmul), then torch's fp32 softmax.
    scores16 = (q @ k.mT).float() / math.sqrt(64)
    weights = scores16.masked_fill(~causal, float("-inf")).softmax(dim=-1).bfloat16()
    rounded = error(weights @ v)
    assert ours < rounded / 4, (ours, rounded)


def test_attention_with_more_keys_than_queries_and_no_batch_axes():
    torch.manual_seed(0)
    q, k, v = torch.randn(3, 4), torch.randn(7, 4), torch.randn(7, 2)
    mask = torch.rand(3, 7, generator=torch.Generator().manual_seed(2)) > 0.3
    mask[:, 0] = True
    torch.testing.assert_close(
        scaled_dot_product_attention(q, k, v, mask), F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    )


Q, K, V = torch.zeros(2, 5, 8), torch.zeros(2, 7, 8), torch.zeros(2, 7, 3)


# Shapes, dtypes and broadcasting are the annotations' job (tests/test_validation.py proves the
# rules once); these are the checks whose message says what no annotation can.
@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: Linear(3, 2)(torch.zeros(4, 5)), ValueError, "last dimension 3"),
        (lambda: scaled_dot_product_attention(Q, K.double(), V), TypeError, "one floating-point dtype"),
        (lambda: truncated_normal_(torch.zeros(3), std=0.1, cut=0.0), ValueError, "must be positive"),
    ],
)
def test_checks_the_annotations_cannot_state(call, error, match):
    with pytest.raises(error, match=match):
        call()
