"""fp4: e2m1 rounding, NVFP4 and MXFP4 against torch's own fp4 reference code and a brute-force search."""

import ast
import importlib.util
import itertools
import math
import pathlib

import pytest
import torch

from lecture_utils.fp4 import (
    bits_per_value,
    e2m1_codes,
    e2m1_decode,
    e2m1_value,
    pack_e2m1,
    quantize_mxfp4,
    quantize_nvfp4,
    round_e2m1,
)
from lecture_utils.memory import tensor_bytes

SPEC_VALUES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]  # the OCP MX spec's e2m1 table
REFERENCE_NAMES = {
    "_n_ones", "_f32_to_floatx_unpacked", "_floatx_unpacked_to_f32", "to_mxfp", "pack_uint4", "down_size",
    "_bfloat16_to_float4_e2m1fn_x2",
}  # fmt: skip


@pytest.fixture(scope="module")
def torch_reference() -> dict:
    """torch's fp4 test helpers (copied there from torchao), read from its source without importing the
    test-only module (it needs packages the notes do not install)."""
    spec = importlib.util.find_spec("torch")
    source = pathlib.Path(spec.origin).parent / "testing" / "_internal" / "common_quantized.py"
    if not source.exists():
        pytest.skip("this torch ships without its test helpers")
    tree = ast.parse(source.read_text())
    names = {"torch": torch, "Tensor": torch.Tensor}
    for node in tree.body:
        wanted = isinstance(node, ast.FunctionDef) and node.name in REFERENCE_NAMES
        constant = isinstance(node, ast.Assign) and ast.unparse(node.targets[0]).replace(", ", "").isupper()
        if wanted or constant:
            exec(compile(ast.Module([node], []), str(source), "exec"), names)
    if not REFERENCE_NAMES <= names.keys():
        pytest.skip(f"torch's test helpers lack {sorted(REFERENCE_NAMES - names.keys())}")
    return names


def awkward_values(seed: int = 0) -> torch.Tensor:
    """Random values over e2m1's range and past it, plus every midpoint (ties), zeros of both signs."""
    gen = torch.Generator().manual_seed(seed)
    midpoints = [(a + b) / 2 for a, b in itertools.pairwise(SPEC_VALUES)]
    edges = torch.tensor([*midpoints, *SPEC_VALUES, 6.5, 7.0, 1e6, 0.0, -0.0, 1e-30])
    return torch.cat([torch.randn(20_000, generator=gen) * 3, edges, -edges])


def test_e2m1_values_from_the_bits_match_the_spec_and_torch(torch_reference):
    ours = [e2m1_value(code) for code in range(16)]
    assert ours[:8] == SPEC_VALUES and ours[8:] == [-v for v in SPEC_VALUES]
    assert math.copysign(1.0, ours[8]) == -1.0  # code 8 is -0
    assert e2m1_decode(torch.arange(16)).tolist() == ours  # the table agrees with the bit fields
    decoded = torch_reference["_floatx_unpacked_to_f32"](torch.arange(16, dtype=torch.uint8), 2, 1)
    assert decoded.tolist() == ours


def test_rounding_matches_torch_reference_including_ties_and_saturation(torch_reference):
    x = awkward_values()
    reference = torch_reference["_f32_to_floatx_unpacked"](x, 2, 1)
    assert torch.equal(e2m1_codes(x), reference.long())
    assert torch.equal(round_e2m1(x), torch_reference["_floatx_unpacked_to_f32"](reference, 2, 1))


def test_rounding_is_the_nearest_value_ties_to_even():
    x = awkward_values(seed=1)
    table = torch.tensor([e2m1_value(code) for code in range(16)])
    distance = (x[:, None] - table[None, :]).abs()
    nearest = distance == distance.min(dim=1, keepdim=True).values
    even = nearest & (torch.arange(16) % 2 == 0)  # the fraction bit is the code's last bit
    pick = torch.where(even.any(dim=1, keepdim=True), even, nearest).float().argmax(dim=1)
    assert torch.equal(round_e2m1(x), table[pick].where(x.abs() <= 6, 6 * x.sign()))


def test_mxfp4_matches_torch_reference(torch_reference):
    # bf16 inputs: torch's reference rounds the scaled block to bf16 before fp4 (a double rounding);
    # a power-of-two scale leaves bf16 values exact, so both round the same numbers
    w = (torch.randn(64, 256, generator=torch.Generator().manual_seed(2)) * 0.02).bfloat16()
    scales, packed = torch_reference["to_mxfp"](w, 32, "mxfp4")
    nibbles = packed.view(torch.uint8)
    codes = torch.stack([nibbles & 0xF, nibbles >> 4], dim=-1).flatten(1)
    reference = torch_reference["_floatx_unpacked_to_f32"](codes, 2, 1).unflatten(1, (-1, 32))
    reference = (reference * torch.exp2(scales.view(torch.uint8).float() - 127)[..., None]).flatten(1)
    ours = quantize_mxfp4(w.float(), scale_rule="rceil")  # torch's reference rounds the scale up
    assert torch.equal(ours.codes, codes.long()) and torch.equal(ours.values, reference)
    assert torch.equal(pack_e2m1(ours.codes).view(torch.uint8), nibbles)


def test_mxfp4_ocp_scale_is_the_spec_rule_from_the_exponent_bits():
    # OCP MX spec v1.0, 6.3: scale 2^(floor(log2 amax) - emax), emax = 2 for e2m1; here log2 in fp64
    gen = torch.Generator().manual_seed(6)
    w = torch.randn(16, 256, generator=gen) * torch.rand(16, 1, generator=gen) * 10
    w[0, :32] = 0.0  # an all-zero block
    w[1, :32] = 4.0  # amax a power of two: 4 -> scale 1, exact
    w[2, 0] = torch.nextafter(torch.tensor(2.0), torch.tensor(0.0))  # below 2: floor(log2) = 0
    w[2, 1:32] = 0.0
    q = quantize_mxfp4(w)
    amax = w.reshape(16, -1, 32).abs().amax(dim=2)
    exponent = torch.where(amax > 0, amax.double().log2().floor() - 2, 0.0)
    expect_scale = torch.exp2(exponent).float()
    assert torch.equal(q.block_scales, expect_scale)
    scaled = w.reshape(16, -1, 32) / expect_scale[..., None]
    assert scaled.abs().amax() < 8 and (scaled.abs().amax(dim=2)[amax > 0] >= 4).all()  # [4, 8): may saturate
    table = torch.tensor(SPEC_VALUES)
    nearest = table[(scaled.abs().clamp(max=6)[..., None] - table).abs().argmin(dim=-1)]
    assert torch.allclose(q.values.abs(), (nearest * expect_scale[..., None]).flatten(1))
    assert torch.equal(q.values[1, :32], w[1, :32])
    rceil = quantize_mxfp4(w, scale_rule="rceil")  # never smaller than the spec's, nothing past 6
    assert (rceil.block_scales >= q.block_scales).all()
    assert (w.reshape(16, -1, 32).abs() / rceil.block_scales[..., None]).amax() <= 6


def test_mxfp4_rceil_scale_is_exact_next_to_six_times_a_power_of_two():
    # The smallest 2^k with amax <= 6 x 2^k, checked by exact comparisons in fp64. The probes sit on
    # 6 x 2^k and one to four fp32 ulps either side, where ceil(log2(amax / 6)) in fp32 misses.
    up, down = torch.tensor(math.inf), torch.tensor(0.0)
    probes = []
    for k in range(-100, 101, 3):
        above = below = torch.tensor(6 * 2.0**k)
        probes.append(above)
        for _ in range(4):
            above, below = torch.nextafter(above, up), torch.nextafter(below, down)
            probes += [above, below]
    amax = torch.stack(probes)
    w = torch.zeros(len(probes), 32)
    w[:, 5] = -amax  # the sign must not matter
    scales = quantize_mxfp4(w, scale_rule="rceil").block_scales[:, 0].double()
    exact = amax.double()
    assert (exact <= 6 * scales).all() and (exact > 3 * scales).all()  # 6 x (scale / 2) falls short
    assert torch.equal(scales.log2(), scales.log2().round())  # powers of two
    fp32_log = torch.exp2(torch.log2(amax / 6).ceil()).double()
    assert (fp32_log < scales).sum() > len(probes) // 4  # the rounded-log rule misses many of them


def test_nvfp4_matches_a_brute_force_search():
    gen = torch.Generator().manual_seed(3)
    w = torch.randn(32, 128, generator=gen) * torch.rand(32, 1, generator=gen)  # rows of unequal size
    w[0, :16] = 0.0  # an all-zero block
    q = quantize_nvfp4(w)
    table = torch.tensor(SPEC_VALUES, dtype=torch.float64)
    amax = w.abs().max().item()
    tensor_scale = amax / (6 * 448)
    for row, start in itertools.product(range(32), range(0, 128, 16)):
        block = w[row, start : start + 16].double()
        stored = (block.abs().max() / 6 / tensor_scale).float().to(torch.float8_e4m3fn).double()
        scale = stored * tensor_scale
        grid = torch.cat([-table.flip(0), table]) * scale
        expect = grid[(block[:, None] - grid[None, :]).abs().argmin(dim=1)] if scale > 0 else block * 0
        torch.testing.assert_close(q.values[row, start : start + 16].double(), expect, rtol=1e-6, atol=0)
    assert q.block_scales.max().item() == pytest.approx(448 * tensor_scale)
    assert q.values.abs().max().item() == pytest.approx(amax, rel=1e-6)  # the largest value is exact


def test_bits_per_value_equal_the_bytes_of_the_stored_tensors():
    w = torch.randn(64, 256, generator=torch.Generator().manual_seed(4))
    q = quantize_nvfp4(w)
    stored = [pack_e2m1(q.codes), q.block_scales.to(torch.float8_e4m3fn), torch.tensor(q.tensor_scale)]
    assert 8 * sum(tensor_bytes(t) for t in stored) / w.numel() == bits_per_value(16, 8, w.numel(), 32)
    assert bits_per_value(16, 8) == 4.5 and bits_per_value(32, 8) == 4.25


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_a_gpu_tensor_gives_the_cpu_result_on_the_gpu():
    w = torch.randn(64, 256, generator=torch.Generator().manual_seed(5))
    for quantize in (quantize_nvfp4, quantize_mxfp4):
        on_cpu, on_gpu = quantize(w), quantize(w.cuda())
        assert on_gpu.codes.is_cuda and torch.equal(on_gpu.codes.cpu(), on_cpu.codes)
        assert torch.equal(on_gpu.values.cpu(), on_cpu.values)


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="blocks of 16"):
        quantize_nvfp4(torch.ones(2, 24))
    with pytest.raises(ValueError, match="blocks of 32"):
        quantize_mxfp4(torch.ones(2, 48))
    with pytest.raises((TypeError, ValueError), match="scale_rule"):  # the type check may catch it first
        quantize_mxfp4(torch.ones(2, 32), scale_rule="floor")
    with pytest.raises(ValueError, match="finite"):
        quantize_nvfp4(torch.tensor([[math.inf] * 16]))
    with pytest.raises(ValueError, match="0 to 15"):
        e2m1_value(16)
    with pytest.raises(ValueError, match="0 to 15"):
        pack_e2m1(torch.tensor([1, 16]))
    with pytest.raises(ValueError, match="numel"):
        bits_per_value(16, 8, tensor_bits=32)
