"""transformer and two_layer against autograd, PyTorch's SDPA, FlopCounterMode and hand-computed values."""

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint, set_checkpoint_early_stop
from torch.utils.flop_counter import FlopCounterMode

from lecture_utils import nn_basics
from lecture_utils.figures.flops import draw_linear_layer_matmuls
from lecture_utils.flops import (
    attention_forward_flops,
    forward_flops_per_token,
    training_flops_per_token,
    two_layer_backward_flops,
    two_layer_forward_flops,
)
from lecture_utils.transformer import (
    TinyLM,
    TransformerBlock,
    TransformerConfig,
    block_matmul_params,
    causal_attention,
    init_weights_,
    matmul_params,
    merge_heads,
    parameter_groups,
    split_heads,
)
from lecture_utils.two_layer import two_layer_backward, two_layer_forward

SMALL = TransformerConfig(vocab_size=50, max_seq_len=12, d_model=16, n_layers=2, n_heads=4, d_ff=32)


def flops_of(fn) -> int:
    """FlopCounterMode's total, used directly so the tests do not depend on lecture_utils.flops."""
    with FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


def make_model(**kwargs) -> TinyLM:
    torch.manual_seed(0)
    return TinyLM(SMALL, **kwargs)


def batch_tokens(batch: int = 3, seq: int = 12) -> tuple[torch.Tensor, torch.Tensor]:
    tokens = torch.randint(SMALL.vocab_size, (batch, seq + 1), generator=torch.Generator().manual_seed(1))
    return tokens[:, :-1], tokens[:, 1:]


def train_step(model: TinyLM, inputs: torch.Tensor, targets: torch.Tensor) -> None:
    model.zero_grad(set_to_none=True)
    F.cross_entropy(model(inputs).flatten(0, 1), targets.flatten()).backward()


# --- two-layer net ------------------------------------------------------------------------------


def two_layer_tensors(batch=5, d=4, k=3):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(batch, d, generator=gen)
    w1 = torch.randn(d, d, generator=gen, requires_grad=True)
    w2 = torch.randn(d, k, generator=gen, requires_grad=True)
    return x, w1, w2


@pytest.mark.parametrize("input_grad", [False, True])
def test_manual_backward_matches_autograd(input_grad):
    x, w1, w2 = two_layer_tensors()
    x.requires_grad_(input_grad)
    h1, h2 = two_layer_forward(x, w1, w2)
    torch.testing.assert_close(h2, x @ w1 @ w2)
    grad_h2 = torch.randn(h2.shape, generator=torch.Generator().manual_seed(2))
    h2.backward(grad_h2)
    with torch.no_grad():
        grads = two_layer_backward(x, w1, w2, h1, grad_h2, input_grad=input_grad)
    torch.testing.assert_close(grads.w1, w1.grad)
    torch.testing.assert_close(grads.w2, w2.grad)
    if input_grad:
        torch.testing.assert_close(grads.x, x.grad)
    else:
        assert grads.x is None


def test_two_layer_flops_hand_computed():
    # B=2, D=3, K=4: forward 2*2*3*3 + 2*2*3*4 = 36 + 48; backward 2BDD + 4BDK = 36 + 96.
    assert two_layer_forward_flops(2, 3, 4) == 84
    assert two_layer_backward_flops(2, 3, 4) == 132
    assert two_layer_backward_flops(2, 3, 4, input_grad=True) == 168 == 2 * 84


@pytest.mark.parametrize("input_grad", [False, True])
def test_two_layer_flops_match_flop_counter(input_grad):
    batch, d, k = 5, 4, 3
    x, w1, w2 = two_layer_tensors(batch, d, k)
    x.requires_grad_(input_grad)
    assert flops_of(lambda: two_layer_forward(x, w1, w2)) == two_layer_forward_flops(batch, d, k)
    h1, h2 = two_layer_forward(x, w1, w2)
    loss = h2.square().sum()
    expected = two_layer_backward_flops(batch, d, k, input_grad=input_grad)
    assert flops_of(loss.backward) == expected
    with torch.no_grad():
        grad_h2 = 2 * h2
        assert flops_of(lambda: two_layer_backward(x, w1, w2, h1, grad_h2, input_grad=input_grad)) == expected


# --- heads and attention ------------------------------------------------------------------------


def test_split_and_merge_heads_match_view_and_transpose():
    x = torch.randn(2, 5, 12)
    heads = split_heads(x, 3)
    torch.testing.assert_close(heads, x.view(2, 5, 3, 4).transpose(1, 2))
    assert heads.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    torch.testing.assert_close(merge_heads(heads), x)


def test_heads_must_split_the_model_dimension_evenly():
    with pytest.raises(ValueError, match="d_model=12 does not split into n_heads=5"):
        split_heads(torch.randn(2, 5, 12), 5)
    with pytest.raises(ValueError, match="d_model=16 does not split into n_heads=5"):
        TransformerConfig(**{**vars(SMALL), "n_heads": 5})
    with pytest.raises(ValueError, match="d_model=16 does not split into n_heads=5"):
        TransformerBlock(16, 5, 32)


def test_causal_attention_matches_sdpa():
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, 7, 5, generator=gen) for _ in range(3))
    torch.testing.assert_close(causal_attention(q, k, v), F.scaled_dot_product_attention(q, k, v, is_causal=True))
    # position 0 sees only itself
    torch.testing.assert_close(causal_attention(q, k, v)[..., 0, :], v[..., 0, :])


def _relative_error(out: torch.Tensor, exact: torch.Tensor) -> float:
    return ((out.double() - exact).norm() / exact.norm()).item()


def _attention_with_bf16_scores(q, k, v):
    """The route the package avoids: q k^T as a plain matmul (bf16 out), then an fp32 softmax."""
    seq = q.shape[-2]
    scores = (q @ k.mT).float() / math.sqrt(q.shape[-1])
    future = torch.ones(seq, seq, dtype=torch.bool).triu(1)
    return scores.masked_fill(future, float("-inf")).softmax(dim=-1).to(q.dtype) @ v


def _large_logit_qkv(seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(1, 2, 128, 16, generator=gen) for _ in range(3))
    return 4 * q, 4 * k, v  # logits of std 16: a bf16 score is off by up to about |z| 2^-8, 0.06 at one std


def test_a_score_rounded_to_bf16_is_off_by_up_to_about_2_to_the_minus_8_of_itself():
    # The bound the docstrings state, measured: fp32 values spread over many binades, rounded to bf16.
    gen = torch.Generator().manual_seed(0)
    z = torch.randn(1_000_000, generator=gen) * torch.exp2(torch.randint(-20, 20, (1_000_000,), generator=gen))
    relative = ((z.bfloat16().float() - z) / z).abs().max().item()
    # Round to nearest with 8 significant bits: at most half a step, 2^-8 of a value at the binade's bottom.
    assert 2**-9 < 0.99 * 2**-8 < relative <= 2**-8


def test_causal_attention_forms_its_scores_in_fp32_for_bf16_inputs():
    q, k, v = (t.bfloat16() for t in _large_logit_qkv(1))
    exact = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=True)
    out = causal_attention(q, k, v)
    assert out.dtype == torch.bfloat16
    # Only the weights' and the output's bf16 roundings remain, each under 2^-8 of the value.
    assert _relative_error(out, exact) < 2**-7
    assert _relative_error(out, exact) < _relative_error(_attention_with_bf16_scores(q, k, v), exact) / 4


def test_causal_attention_forms_its_scores_in_fp32_under_autocast():
    q, k, v = _large_logit_qkv(2)
    exact = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert (q @ k.mT).dtype == torch.bfloat16  # what autocast does to the score matmul unless told not to
        out = causal_attention(q, k, v)
        plain = _attention_with_bf16_scores(q, k, v)
        assert torch.is_autocast_enabled("cpu")  # switched off only inside, for the scores
    assert out.dtype == torch.bfloat16  # the second matmul still runs in bf16
    assert _relative_error(out, exact) < _relative_error(plain, exact) / 4


def test_causal_attention_never_narrows_float64():
    q, k, v = (t.double() for t in _large_logit_qkv(3))
    out = causal_attention(q, k, v)
    assert out.dtype == torch.float64
    exact = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(out, exact, rtol=1e-12, atol=1e-12)


def test_attention_forward_flops_matches_counter_and_hand_value():
    q, k, v = (torch.randn(2, 3, 7, 5) for _ in range(3))
    assert flops_of(lambda: causal_attention(q, k, v)) == attention_forward_flops(2, 3, 7, 5)
    assert attention_forward_flops(2, 3, 7, 5) == 4 * 2 * 3 * 7 * 7 * 5


# --- the model ----------------------------------------------------------------------------------


def test_a_sequence_longer_than_the_context_is_refused():
    model = make_model()
    assert model(torch.zeros(1, 12, dtype=torch.long)).shape == (1, 12, SMALL.vocab_size)
    with pytest.raises(ValueError, match="sequence of 13 tokens is longer than max_seq_len=12"):
        model(torch.zeros(1, 13, dtype=torch.long))


def test_parameter_groups_match_closed_forms():
    model = make_model()
    groups = parameter_groups(model)
    c = SMALL
    assert block_matmul_params(16, 32) == 4 * 16 * 16 + 2 * 16 * 32 == 2048
    assert groups["matmul"] == matmul_params(c) == 2 * 2048 + 16 * 50
    assert groups["embedding"] == (c.vocab_size + c.max_seq_len) * c.d_model
    assert groups["norm"] == (2 * c.n_layers + 1) * c.d_model
    assert groups["other"] == 0
    assert sum(groups.values()) == sum(p.numel() for p in model.parameters())


def test_the_assignments_linear_counts_and_initializes_as_a_matmul_layer():
    torch.manual_seed(0)
    model = torch.nn.Sequential(nn_basics.Linear(8, 16), torch.nn.Linear(16, 4), torch.nn.LayerNorm(4))
    assert parameter_groups(model) == {"matmul": 8 * 16 + 16 * 4 + 4, "embedding": 0, "norm": 2 * 4, "other": 0}
    init_weights_(model, torch.Generator().manual_seed(0), std=0.02)
    assert model[0].weight.abs().max().item() <= 0.06 and model[0].weight.std().item() < 0.03
    assert torch.equal(model[1].bias, torch.zeros(4))
    assert torch.equal(model[2].bias, torch.zeros(4)) and torch.equal(model[2].weight, torch.ones(4))


def test_flops_per_token_hand_computed():
    # N=10, L=2, H=3, Q=4, T=5: forward 20 + 4*2*3*4*5 = 500; training 3x.
    assert forward_flops_per_token(10, 2, 3, 4, 5) == 500
    assert training_flops_per_token(10, 2, 3, 4, 5) == 1500 == 6 * 10 + 12 * 2 * 3 * 4 * 5


def test_training_step_count_equals_6n_plus_attention():
    model = make_model()
    inputs, targets = batch_tokens()
    batch, seq = inputs.shape
    c = SMALL
    per_token = training_flops_per_token(matmul_params(c), c.n_layers, c.n_heads, c.head_dim, seq)
    assert flops_of(lambda: train_step(model, inputs, targets)) == batch * seq * per_token


def test_sdpa_model_matches_einsum_model_and_cpu_count_depends_on_the_release():
    """FlopCounterMode has no formula for the CPU's fused attention kernel before torch 2.15: a
    model that calls SDPA misses the attention term. torch 2.15 counts it as it counts the GPU's
    fused kernels, whose backward rebuilds the scores: 2BHT^2Q more per layer than the explicit
    path."""
    model, sdpa = make_model(), make_model(attention="sdpa")
    inputs, targets = batch_tokens()
    torch.testing.assert_close(sdpa(inputs), model(inputs))
    batch, seq = inputs.shape
    c = SMALL
    forward = attention_forward_flops(batch, c.n_heads, seq, c.head_dim)
    gen = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(batch, c.n_heads, seq, c.head_dim, generator=gen) for _ in range(3))
    fused_forward = flops_of(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
    explicit = flops_of(lambda: train_step(model, inputs, targets))
    fused = flops_of(lambda: train_step(sdpa, inputs, targets))
    counts_cpu_kernel = torch.torch_version.TorchVersion(torch.__version__) >= (2, 15)
    if counts_cpu_kernel:
        assert fused_forward == forward
        assert fused - explicit == c.n_layers * 2 * batch * c.n_heads * seq * seq * c.head_dim
    else:
        assert fused_forward == 0
        assert explicit - fused == 3 * c.n_layers * forward


def test_checkpointing_same_gradients_one_more_forward():
    model, ckpt = make_model(), make_model(checkpoint_blocks=True)
    inputs, targets = batch_tokens()
    batch, seq = inputs.shape
    c = SMALL
    plain = flops_of(lambda: train_step(model, inputs, targets))
    with set_checkpoint_early_stop(False):
        full = flops_of(lambda: train_step(ckpt, inputs, targets))
    for p, q in zip(model.parameters(), ckpt.parameters(), strict=True):
        torch.testing.assert_close(q.grad, p.grad)
    block_forward = 2 * batch * seq * block_matmul_params(c.d_model, c.d_ff)
    block_forward += attention_forward_flops(batch, c.n_heads, seq, c.head_dim)
    assert full == plain + c.n_layers * block_forward
    # By default recomputation stops once the tensors backward needs exist: the MLP's down
    # projection, the last matmul of each block, is not rerun.
    early = flops_of(lambda: train_step(ckpt, inputs, targets))
    assert early == full - c.n_layers * 2 * batch * seq * c.d_ff * c.d_model


def test_checkpointed_block_keeps_only_its_input():
    torch.manual_seed(0)
    block = TransformerBlock(16, 4, 32)
    x = torch.randn(2, 6, 16, requires_grad=True)
    seen: list[torch.Tensor] = []

    def pack(t):
        seen.append(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        checkpoint(block, x, use_reentrant=False)
    params = {p.untyped_storage().data_ptr() for p in block.parameters()}
    activations = [t for t in seen if t.untyped_storage().data_ptr() not in params]
    assert len(activations) == 1 and activations[0] is x


# --- figure -------------------------------------------------------------------------------------


def test_linear_layer_figure_draws_nine_matrices():
    fig = draw_linear_layer_matmuls()
    ax = fig.axes[0]
    texts = [t.get_text() for t in ax.texts]
    assert sum("2 B D K FLOPs" in t for t in texts) == 3
    assert sum(p.get_width() > 0 for p in ax.patches) == 9
    plt.close(fig)
