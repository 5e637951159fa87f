"""Practice for notebook 06: the std an init gives, Adam's first step, optimizer state, and training memory.

Each problem's numbers are set once, below, and both its question and its worked answer are built
from them, so the two cannot disagree. The worked answers use the package's own pieces (the cut
normal's std, the optimizers, the memory recipes, the napkin peak); the notebook checks each one
against real tensors: a measured std, torch.optim, the bytes measured after a step, track_step.
"""

import math

import torch

from lecture_utils.accounting import plain_recipe
from lecture_utils.adamw import AdamW as HandoutAdamW
from lecture_utils.hardware import ACCELERATORS
from lecture_utils.models import cruncher_activation_numel, cruncher_num_parameters, truncated_normal_std
from lecture_utils.optim import OPTIMIZERS, Adam
from lecture_utils.practice import Mistake, Problem, Worked
from lecture_utils.problems import unit_mixup
from lecture_utils.step_memory import napkin_peak

MIB = 2**20
H100 = ACCELERATORS["h100-sxm"]
ADAMW = OPTIMIZERS["adamw"]

# 1: a stack of layers initialized with a fixed std, cut at 3 std
WIDTH, DEPTH, INIT_STD, CUT = 1_024, 6, 0.02, 3.0
# 2: Adam's first step on a weight whose gradient is tiny
LR, EPS, TINY_GRAD = 1e-3, 1e-8, 3e-8
# 3: the optimizer state of a 7B model in fp32
STATE_PARAMS = 7_000_000_000
# 4: the deepest Cruncher one H100 can train
DEEP_DIM = 4_096
# 5: the peak of the second step of a Cruncher trained with AdamW
PEAK_DIM, PEAK_LAYERS, PEAK_BATCH = 128, 8, 1_024


def _layer_gain(cut: bool = True) -> float:
    """How much one layer multiplies the std: sqrt(fan_in) x the weights' std."""
    return math.sqrt(WIDTH) * INIT_STD * (truncated_normal_std(CUT) if cut else 1.0)


def _init_std() -> Worked:
    gain, kept = _layer_gain(), truncated_normal_std(CUT)
    out = gain**DEPTH
    steps = (
        f"each output of x @ W sums {WIDTH:,} products x_i w_i: variance {WIDTH:,} x 1 x std(w)^2",
        f"the cut at {CUT:g} std lowers the weights' std to {INIT_STD} x {kept:.4f} = {INIT_STD * kept:.5f}",
        f"one layer multiplies the std by sqrt({WIDTH:,}) x {INIT_STD * kept:.5f} = {gain:.4f}",
        f"after {DEPTH} layers: {gain:.4f}^{DEPTH} = {out:.4f}",
    )
    return Worked(steps, out, f"{out:.4f}")


def _first_step(optimizer_class: type[torch.optim.Optimizer], **settings: float) -> torch.optim.Optimizer:
    """One step from fresh state on a weight at 0 whose gradient is TINY_GRAD: the optimizer, after it."""
    weight = torch.nn.Parameter(torch.zeros(1, dtype=torch.float64))
    weight.grad = torch.full_like(weight, TINY_GRAD)
    optimizer = optimizer_class([weight], lr=LR, eps=EPS, **settings)
    optimizer.step()
    return optimizer


def _handout_adamw_step() -> float:
    """What the assignment's AdamW moves (eps before the bias correction): a slip for problem 2."""
    return -_first_step(HandoutAdamW, weight_decay=0.0).param_groups[0]["params"][0].item()


def _adam_first_step() -> Worked:
    optimizer = _first_step(Adam)
    weight = optimizer.param_groups[0]["params"][0]
    moved = -weight.item()
    m, v = (optimizer.state[weight][k].item() for k in ("exp_avg", "exp_avg_sq"))
    b1, b2 = optimizer.param_groups[0]["betas"]
    steps = (
        f"step 1 from m = v = 0: m = (1 - {b1}) g = {m:.3g}, v = (1 - {b2}) g^2 = {v:.3g}",
        f"bias-corrected: m_hat = m / (1 - {b1}) = {m / (1 - b1):.3g}, sqrt(v_hat) = {math.sqrt(v / (1 - b2)):.3g}",
        f"step = lr m_hat / (sqrt(v_hat) + eps) = {LR:g} x {m / (1 - b1):.3g} / ({math.sqrt(v / (1 - b2)):.3g}"
        f" + {EPS:g}) = {moved:.4g}, that is {moved / LR:.2f} lr",
    )
    return Worked(steps, moved, f"{moved:.2e}")


def _state_gb(name: str) -> float:
    return plain_recipe(OPTIMIZERS[name]).predict(STATE_PARAMS).component_bytes().get("optimizer_state", 0) / 1e9


def _state_freed() -> Worked:
    adamw, momentum = _state_gb("adamw"), _state_gb("momentum")
    steps = (
        f"AdamW keeps {ADAMW.state_tensors} fp32 tensors per parameter: {STATE_PARAMS:,} x"
        f" {ADAMW.state_tensors} x 4 B = {adamw:g} GB",
        f"momentum SGD keeps {OPTIMIZERS['momentum'].state_tensors}: {momentum:g} GB",
        f"freed: {adamw:g} - {momentum:g} = {adamw - momentum:g} GB",
    )
    return Worked(steps, adamw - momentum, f"{adamw - momentum:g} GB")


def _deepest(bytes_per_param: int, memory_bytes: float = H100.memory_bytes) -> int:
    """The most D x D layers whose parameters fit in `memory_bytes` at this many bytes each."""
    return math.floor((memory_bytes / bytes_per_param - DEEP_DIM) / DEEP_DIM**2)


def _deepest_cruncher() -> Worked:
    recipe = plain_recipe(ADAMW)
    fits = H100.memory_bytes / recipe.total
    layers = _deepest(recipe.total)
    used = cruncher_num_parameters(DEEP_DIM, layers)
    steps = (
        f"fp32 AdamW: {recipe.formula()} B per parameter",
        f"{H100.memory_bytes:.3g} B / {recipe.total} B = {fits:.4g} parameters fit",
        f"D^2 L + D <= {fits:.4g}  ->  L <= ({fits:.4g} - {DEEP_DIM:,}) / {DEEP_DIM:,}^2"
        f" = {(fits - DEEP_DIM) / DEEP_DIM**2:.2f}",
        f"L = {layers}: {used:,} parameters, {used * recipe.total / 1e9:.2f} GB",
    )
    return Worked(steps, layers, f"{layers} layers")


def _peak_budget():
    n_params = cruncher_num_parameters(PEAK_DIM, PEAK_LAYERS)
    return plain_recipe(ADAMW).predict(n_params, cruncher_activation_numel(PEAK_DIM, PEAK_LAYERS, PEAK_BATCH))


def _step_peak() -> Worked:
    budget = _peak_budget()
    held = budget.component_bytes()
    peak = napkin_peak(budget)
    parts = ", ".join(f"{name} {size / MIB:.2f} MiB" for name, size in held.items())
    larger = max(("activations", "gradients"), key=held.__getitem__)
    steps = (
        f"{parts}",
        "held throughout the second step: parameters and optimizer state",
        f"activations are freed before the last gradient lands: add the larger of the two, {larger}",
        f"peak = {held['parameters'] / MIB:.2f} + {held['optimizer_state'] / MIB:.2f} + {held[larger] / MIB:.2f}"
        f" = {peak / MIB:.2f} MiB ({peak:,} B)",
    )
    return Worked(steps, peak / MIB, f"{peak / MIB:.2f} MiB")


_GB = {"GiB": 2**30 / 1e9, "MB": 1e-3, "TB": 1e3, "B": 1e-9, "bytes": 1e-9}

PROBLEMS: dict[int, Problem] = {
    1: Problem(
        1,
        "the std after a stack of layers",
        f"x has width {WIDTH:,}, every entry drawn from N(0, 1). It goes through {DEPTH} layers `x = x @ W`, each W "
        f"of shape ({WIDTH:,}, {WIDTH:,}) filled by `truncated_normal_(W, std={INIT_STD})` (N(0, {INIT_STD}^2) cut "
        f"at {CUT:g} std, no 1/sqrt(fan_in) scaling). What is the std of the output? Answer with the number.",
        "",
        _init_std,
        "Find the factor one layer multiplies the std by, then apply it once per layer.",
        mistakes=(
            Mistake(
                lambda _: _layer_gain(cut=False) ** DEPTH, "the cut lowers the weights' std a little: it compounds."
            ),
            Mistake(lambda _: _layer_gain(), "that is one layer's factor: the input passes through all of them."),
        ),
    ),
    2: Problem(
        2,
        "Adam's first step on a tiny gradient",
        f"A weight's gradient on the first step is {TINY_GRAD:g}. `torch.optim.Adam` (lr = {LR:g}, betas (0.9, "
        f"0.999), eps = {EPS:g}, no weight decay) takes that step in fp32 from fresh state. By how much does the "
        'weight move? Answer with the size of the change, a positive number (or in units of lr, e.g. "0.5 lr"). '
        "Take torch's update, not the assignment's AdamW, which adds eps elsewhere.",
        "",
        _adam_first_step,
        "Bias correction undoes the zero start exactly on step 1; then compare sqrt(v_hat) with eps.",
        units={"lr": LR},
        mistakes=(
            Mistake(lambda _: LR, "eps is added to sqrt(v_hat), and here the two are about the same size."),
            Mistake(lambda _: LR * TINY_GRAD, "Adam divides by the gradient's size: the step is not lr x g."),
            Mistake(
                lambda _: _handout_adamw_step(),
                "that is the assignment's AdamW, which adds eps before the bias correction: take torch's Adam.",
            ),
        ),
    ),
    3: Problem(
        3,
        "swapping AdamW for momentum",
        f"A {STATE_PARAMS / 1e9:.0f}B-parameter model trains in fp32 with AdamW. Switching to SGD with momentum, "
        "how many GB of optimizer state are freed? Answer in GB (1 GB = 1e9 bytes).",
        "GB",
        _state_freed,
        "Count the tensors shaped like the parameters each optimizer keeps, at 4 bytes a number.",
        units=_GB,
        mistakes=(
            Mistake(lambda gb: 2 * gb, "momentum keeps a tensor per parameter too: only one of AdamW's goes."),
            Mistake(lambda gb: gb / 2, "every tensor is fp32 here: 4 bytes a number."),
            unit_mixup("GiB", "GB"),
        ),
    ),
    4: Problem(
        4,
        "the deepest Cruncher on one H100",
        f"A Cruncher of width D = {DEEP_DIM:,} (L layers of D x D and a D -> 1 head) trains in fp32 with AdamW on "
        f"one H100 SXM, taken as {H100.memory_bytes / 1e9:.0f} GB with 1 GB = 1e9 bytes, the notes' convention. "
        "Leaving activations out, how many layers L can it have at most? Answer with a whole number of layers.",
        "layers",
        _deepest_cruncher,
        "Bytes per parameter of the recipe first; then solve D^2 L + D <= what fits, and round so it still fits.",
        rel_tol=0.0,
        close_tol=0.02,
        mistakes=(
            Mistake(lambda _: _deepest(12), "the gradients take 4 bytes per parameter as well."),
            Mistake(lambda _: _deepest(4), "training holds gradients and AdamW's state beside the weights."),
            Mistake(
                lambda _: _deepest(16, H100.memory_bytes * 2**30 / 1e9),
                "that treats the memory as GiB (2^30 bytes each): the question takes 1 GB = 1e9 bytes.",
            ),
        ),
    ),
    5: Problem(
        5,
        "the peak of one step",
        f"A Cruncher with D = {PEAK_DIM}, L = {PEAK_LAYERS} trains in fp32 with AdamW on batches of B = {PEAK_BATCH:,}"
        " (loss: the sum of its outputs). Its activations are B D L numbers. Gradients are freed after each step "
        "(`zero_grad(set_to_none=True)`). Counting parameters, gradients, optimizer state and activations (not "
        "the input batch), what is the peak of live bytes during its second step? Answer in MiB (2^20 bytes).",
        "MiB",
        _step_peak,
        "What is held all step long? Then ask whether activations and gradients are ever alive in full together.",
        units={"MB": 1e6 / MIB, "GiB": 1024, "KiB": 1 / 1024, "B": 1 / MIB, "bytes": 1 / MIB},
        mistakes=(
            Mistake(
                lambda _: _peak_budget().total / MIB,
                "the four parts never live at once: activations are freed before the last gradient lands.",
            ),
            Mistake(
                lambda _: napkin_peak(_peak_budget(), first_step=True) / MIB,
                "that is the first step, where the state appears only at the step.",
            ),
            unit_mixup("MB", "MiB"),
        ),
    ),
}
