"""Mixed precision by experiment: autocast's dtypes, bytes per parameter per recipe, master weights, fp8 scaling.

The standard recipe keeps fp32 master weights and optimizer state, runs matmuls in bf16 and keeps
reductions (softmax, norms, the loss) in fp32. Each helper here backs one piece of that with a
measurement: which dtype autocast picks, what each recipe costs per parameter, what happens to an
update smaller than half a bf16 ulp, and how a per-tensor scale keeps values inside fp8's range.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from jaxtyping import Float
from torch import nn

from lecture_utils.checks import check_dims, check_int, check_positive
from lecture_utils.device import torch_threads
from lecture_utils.memory import dtype_bytes, tensor_bytes

# ---------------------------------------------------------------------------------------------
# autocast: which dtype each op produces
# ---------------------------------------------------------------------------------------------


def autocast_dtypes(device: torch.device | str, dtype: torch.dtype = torch.bfloat16) -> dict[str, torch.dtype]:
    """The dtype each common op returns under torch.autocast on `device`, starting from fp32 tensors."""
    device = torch.device(device)
    if device.type not in ("cpu", "cuda"):
        raise ValueError(f"autocast is shown for 'cpu' and 'cuda' devices, got {device.type!r}")
    if dtype not in (torch.bfloat16, torch.float16):
        raise ValueError(f"autocast lowers precision to torch.bfloat16 or torch.float16, got {dtype}")
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(8, 16, generator=generator).to(device)
    w = torch.randn(16, 16, generator=generator).to(device)
    target = torch.randint(0, 16, (8,), generator=generator).to(device)
    with torch.autocast(device.type, dtype=dtype):
        h = x @ w  # what flows on: every op below gets autocast's matmul output
        outputs = {
            "h = x @ w": h,
            "relu(h)": torch.relu(h),
            "softmax(h)": torch.softmax(h, dim=-1),
            "softmax(h, dtype=float32)": torch.softmax(h, dim=-1, dtype=torch.float32),
            "layer_norm(h)": F.layer_norm(h, (16,)),
            "h.sum()": h.sum(),
            "cross_entropy(h, target)": F.cross_entropy(h, target),
            "h + x": h + x,
        }
    return {name: out.dtype for name, out in outputs.items()}


# ---------------------------------------------------------------------------------------------
# Bytes per parameter: named recipes, and the same count read off real training tensors
# ---------------------------------------------------------------------------------------------

COMPONENTS = ("params", "grads", "grad_accum", "master", "adam_m", "adam_v")

# torch.optim state names -> the component they are in a recipe
_STATE_COMPONENTS = {"exp_avg": "adam_m", "exp_avg_sq": "adam_v"}


@dataclass(frozen=True)
class Recipe:
    """A training recipe's memory: the dtype of every tensor kept per parameter (weights, grads, state)."""

    name: str
    dtypes: Mapping[str, torch.dtype]
    why: str

    def __post_init__(self) -> None:
        if not self.dtypes:
            raise ValueError(f"recipe {self.name!r} keeps no tensors; give a dtype for at least 'params'")
        for component, dtype in self.dtypes.items():
            if component not in COMPONENTS:
                raise ValueError(
                    f"unknown component {component!r} in recipe {self.name!r}; expected one of {COMPONENTS}"
                )
            if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
                raise TypeError(f"{self.name!r}: {component} needs a floating torch.dtype, got {dtype!r}")

    @property
    def bytes_per_param(self) -> int:
        """Sum of the components' element sizes."""
        return sum(dtype_bytes(dtype) for dtype in self.dtypes.values())

    def formula(self) -> str:
        """The sum written out, e.g. 'params 2 + grads 2 + master 4 + adam_m 4 + adam_v 4 = 16'."""
        terms = " + ".join(f"{component} {dtype_bytes(dtype)}" for component, dtype in self.dtypes.items())
        return f"{terms} = {self.bytes_per_param}"


_FP32, _BF16 = torch.float32, torch.bfloat16
_ADAM_FP32 = {"adam_m": _FP32, "adam_v": _FP32}

RECIPES: dict[str, Recipe] = {
    r.name: r
    for r in (
        Recipe("fp32", {"params": _FP32, "grads": _FP32, **_ADAM_FP32},
               "PyTorch's default: every tensor fp32"),
        Recipe("autocast bf16", {"params": _FP32, "grads": _FP32, **_ADAM_FP32},
               "torch.autocast: the fp32 params are the master weights; bf16 copies exist only while the "
               "forward and backward run, so they count as activations"),
        Recipe("bf16 + fp32 master", {"params": _BF16, "grads": _BF16, "master": _FP32, **_ADAM_FP32},
               "the standard recipe (2 + 2 + 12 in the ZeRO paper, Rajbhandari et al., 2019): a bf16 model, "
               "an fp32 copy that the optimizer updates"),
        Recipe("bf16 + fp32 grads", {"params": _BF16, "grads": _FP32, "master": _FP32, **_ADAM_FP32},
               "each weight gradient goes straight into an fp32 buffer and no bf16 copy is kept "
               "(Megatron-LM's main_grad; built below with a post-accumulate-grad hook)"),
        Recipe("bf16 + fp32 grad accumulation",
               {"params": _BF16, "grads": _BF16, "grad_accum": _FP32, "master": _FP32, **_ADAM_FP32},
               "bf16 gradients kept while an fp32 buffer sums them over micro-batches"),
        Recipe("bf16 + fp32 Adam state", {"params": _BF16, "grads": _BF16, **_ADAM_FP32},
               "no master copy: every update is rounded into bf16 weights"),
        Recipe("pure bf16", {"params": _BF16, "grads": _BF16, "adam_m": _BF16, "adam_v": _BF16},
               "model.bfloat16() and train: updates below half a bf16 ulp of the weight vanish"),
    )
}


def training_state_bytes(model: nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, int]:
    """Bytes of each per-parameter component training holds now: params, grads, master copies, Adam's m and v."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}")
    params = list(model.parameters())
    if not params:
        raise ValueError("the model has no parameters to account for")
    model_ids = {id(p) for p in params}
    counts = {
        "params": sum(tensor_bytes(p) for p in params),
        "grads": sum(tensor_bytes(p.grad) for p in params if p.grad is not None),
    }
    optimized = [p for group in optimizer.param_groups for p in group["params"]]
    # What the optimizer updates but the model does not hold is a master copy.
    master = [p for p in optimized if id(p) not in model_ids]
    if master:
        counts["master"] = sum(tensor_bytes(p) for p in master)
    for p in optimized:
        for key, value in optimizer.state.get(p, {}).items():
            # State not shaped like its parameter (Adam's scalar step) is no per-parameter cost.
            if isinstance(value, torch.Tensor) and value.shape == p.shape:
                component = _STATE_COMPONENTS.get(key, key)
                counts[component] = counts.get(component, 0) + tensor_bytes(value)
    return counts


class MasterWeights:
    """fp32 copies of a low-precision model's parameters: the optimizer updates them, the model gets them rounded."""

    def __init__(self, model: nn.Module, dtype: torch.dtype = torch.float32) -> None:
        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
            raise TypeError(f"dtype must be a floating torch.dtype, got {dtype!r}")
        self.model = model
        self.params = [p.detach().to(dtype, copy=True) for p in model.parameters()]
        if not self.params:
            raise ValueError("the model has no parameters to keep master copies of")

    @torch.no_grad()
    def step(self, optimizer: torch.optim.Optimizer) -> None:
        """Hand the model's gradients to the master copies, step the optimizer on them, copy the result back."""
        optimized = {id(p) for group in optimizer.param_groups for p in group["params"]}
        if optimized != {id(p) for p in self.params}:
            raise ValueError("the optimizer must update the master copies: build it over MasterWeights.params")
        for master, p in zip(self.params, self.model.parameters()):
            master.grad = None if p.grad is None else p.grad.to(master.dtype)
        optimizer.step()
        for master, p in zip(self.params, self.model.parameters()):
            p.copy_(master)  # rounds to the model's dtype; the master keeps the bits the rounding drops
            master.grad = None  # an fp32 gradient exists only during the step


# ---------------------------------------------------------------------------------------------
# The lost update: a small regression trained under four recipes
# ---------------------------------------------------------------------------------------------

TRAINING_RECIPES = ("fp32", "autocast bf16", "bf16 + fp32 master", "pure bf16")


@dataclass(frozen=True)
class RegressionRun:
    """One training run: the fp32 loss of the model's own weights after each step, and the share of updates lost."""

    recipe: str
    losses: list[float]
    lost_fraction: list[float]
    weight: Float[torch.Tensor, "1 dim"]


def regression_data(
    samples: int = 512, dim: int = 32, noise: float = 0.1, seed: int = 0
) -> tuple[Float[torch.Tensor, "samples dim"], Float[torch.Tensor, "samples 1"]]:
    """Inputs and targets of y = x w* + noise, drawn on the CPU from a seeded generator."""
    check_dims(samples=samples, dim=dim)
    check_int("seed", seed, 0)
    if isinstance(noise, bool) or not isinstance(noise, (int, float)):
        raise TypeError(f"noise must be a number, got {type(noise).__name__}")
    if not noise >= 0:
        raise ValueError(f"noise must be >= 0, got {noise}")
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(samples, dim, generator=generator)
    w_true = torch.randn(dim, 1, generator=generator)
    return x, x @ w_true + noise * torch.randn(samples, 1, generator=generator)


def train_regression(
    x: Float[torch.Tensor, "samples dim"],
    y: Float[torch.Tensor, "samples 1"],
    recipe: str,
    *,
    steps: int = 300,
    lr: float = 0.02,
) -> RegressionRun:
    """Full-batch SGD on a bias-free linear model from zero weights, under one of TRAINING_RECIPES."""
    if recipe not in TRAINING_RECIPES:
        raise ValueError(f"unknown recipe {recipe!r}; expected one of {TRAINING_RECIPES}")
    if x.dim() != 2 or y.shape != (x.shape[0], 1):
        raise ValueError(f"expected x of shape (samples, dim) and y of shape (samples, 1), got {tuple(x.shape)} "
                         f"and {tuple(y.shape)}")
    if x.device != y.device:
        raise ValueError(f"x and y must be on one device, got {x.device} and {y.device}")
    check_int("steps", steps)
    check_positive(lr=lr)
    # The ops here are tiny: on a CPU, OpenMP's fork and barrier per op cost more than the arithmetic
    # (a 512 x 32 bf16 matmul takes milliseconds on two busy cores, microseconds on one).
    with torch_threads(1 if x.device.type == "cpu" else None):
        return _train(x, y, recipe, steps, lr)


def _train(x: torch.Tensor, y: torch.Tensor, recipe: str, steps: int, lr: float) -> RegressionRun:
    model = nn.Linear(x.shape[1], 1, bias=False, device=x.device)
    nn.init.zeros_(model.weight)
    master = None
    if recipe in ("pure bf16", "bf16 + fp32 master"):
        model.to(torch.bfloat16)
    if recipe == "bf16 + fp32 master":
        master = MasterWeights(model)
        optimizer = torch.optim.SGD(master.params, lr=lr)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    held = master.params[0] if master else model.weight  # the weights the optimizer updates
    compute = model.weight.dtype
    losses, lost = [], []
    for _ in range(steps):
        model.zero_grad(set_to_none=True)
        with torch.autocast(x.device.type, dtype=torch.bfloat16, enabled=recipe == "autocast bf16"):
            loss = F.mse_loss(model(x.to(compute)), y.to(compute))
        loss.backward()
        wanted = model.weight.grad != 0
        before = held.detach().clone()
        if master:
            master.step(optimizer)
        else:
            optimizer.step()
        unchanged = (held.detach() == before) & wanted
        lost.append(unchanged.sum().item() / max(wanted.sum().item(), 1))
        # The loss of the model itself (with master weights: their bf16 rounding), so the recipes
        # compare the weights each one would ship, all scored in fp32.
        with torch.no_grad():
            losses.append(F.mse_loss(x @ model.weight.float().T, y).item())
    return RegressionRun(recipe, losses, lost, model.weight.detach().float().clone())


# ---------------------------------------------------------------------------------------------
# fp8: per-tensor scaling, and a scaled matmul on hardware that has one
# ---------------------------------------------------------------------------------------------

FP8_DTYPES = (torch.float8_e4m3fn, torch.float8_e5m2)


def quantize_fp8(
    x: Float[torch.Tensor, "*shape"], dtype: torch.dtype = torch.float8_e4m3fn
) -> tuple[torch.Tensor, Float[torch.Tensor, ""]]:
    """Round x to fp8 after scaling its largest magnitude to the format's max: x ~ q.float() * scale."""
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        raise TypeError(f"expected a floating-point tensor, got {type(x).__name__}")
    if dtype not in FP8_DTYPES:
        raise ValueError(f"expected an fp8 dtype {FP8_DTYPES}, got {dtype}")
    if x.numel() == 0 or not torch.isfinite(x).all():
        raise ValueError("x must be non-empty and finite: inf or NaN would make the scale meaningless")
    fmax = torch.finfo(dtype).max
    amax = x.detach().abs().amax().float()
    scale = torch.where(amax > 0, amax / fmax, torch.ones_like(amax))
    # The clamp guards the top value against rounding just past max (e4m3fn has no inf to absorb it).
    q = (x.float() / scale).clamp(-fmax, fmax).to(dtype)
    return q, scale


def dequantize_fp8(q: torch.Tensor, scale: Float[torch.Tensor, ""]) -> Float[torch.Tensor, "*shape"]:
    """Back to fp32: q.float() * scale."""
    if not isinstance(q, torch.Tensor) or q.dtype not in FP8_DTYPES:
        raise TypeError(f"expected an fp8 tensor {FP8_DTYPES}, got {getattr(q, 'dtype', type(q).__name__)}")
    return q.float() * scale


def fp8_matmul_available(device: torch.device | str) -> bool:
    """True on a CUDA GPU with fp8 tensor cores: compute capability 8.9 (Ada) or later (Hopper, Blackwell)."""
    device = torch.device(device)
    return device.type == "cuda" and torch.cuda.get_device_capability(device) >= (8, 9)


def scaled_fp8_matmul(
    a: Float[torch.Tensor, "m k"], b: Float[torch.Tensor, "k n"], out_dtype: torch.dtype = torch.bfloat16
) -> Float[torch.Tensor, "m n"]:
    """a @ b with both quantized to e4m3 under per-tensor scales, multiplied by torch._scaled_mm."""
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        raise TypeError(f"expected two tensors, got {type(a).__name__} and {type(b).__name__}")
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"expected (m, k) @ (k, n), got {tuple(a.shape)} @ {tuple(b.shape)}")
    # cuBLASLt's fp8 kernels want sizes in multiples of 16, a row-major and b column-major.
    if any(size % 16 for size in (*a.shape, b.shape[1])):
        raise ValueError(f"fp8 matmul needs every dimension a multiple of 16, got {tuple(a.shape)} @ {tuple(b.shape)}")
    qa, scale_a = quantize_fp8(a)
    qb, scale_b = quantize_fp8(b)
    # The scales multiply the fp32 accumulator, so the product comes back at the operands' real size.
    return torch._scaled_mm(qa.contiguous(), qb.t().contiguous().t(), scale_a=scale_a, scale_b=scale_b,
                            out_dtype=out_dtype)
