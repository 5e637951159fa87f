"""Practice for notebook 09: ZeRO-1's bytes per GPU, the fewest GPUs for ZeRO-2, ZeRO-3's extra traffic in
time, ZeroRedundancyOptimizer's fullest rank, bf16 gathers. Each problem's numbers are set once, below, and
build its question and its worked answer; the notebook checks each against its sharded runs or another route.
"""

import math

from lecture_utils.accounting import RECIPES
from lecture_utils.hardware import ACCELERATORS
from lecture_utils.practice import Mistake, Problem, Worked
from lecture_utils.problems import unit_mixup
from lecture_utils.sharding import (
    STAGES,
    gpt2_small,
    per_gpu_bytes,
    predicted_traffic,
    ring_bytes_sent,
    zero1_partition,
)

FP32, MIXED = RECIPES["fp32"], RECIPES["bf16 + fp32 master"]
FP32_BYTES = FP32.bytes_per_param()["parameters"]  # fp32 weights, and as many bytes of gradients
ADAM_BYTES = FP32.bytes_per_param()["optimizer_state"]  # fp32 AdamW's m and v
MIXED_SIZES = MIXED.bytes_per_param()  # bf16 weights and gradients, fp32 master copy, m and v

# 1: ZeRO-1 with the mixed-precision recipe
Z1_PARAMS, Z1_GPUS = 13e9, 8
# 2: the fewest A100s that hold a model under ZeRO-2
FIT_PARAMS, FIT_STAGE, A100 = 28e9, 2, ACCELERATORS["a100-sxm-80gb"]
# 3: DDP against ZeRO-3, fp32, each GPU sending at a given rate
LINK_PARAMS, LINK_GPUS, LINK_BYTES_PER_S = 3e9, 8, 450e9
# 4: GPT-2 small under ZeroRedundancyOptimizer
IMBALANCE_RANKS = 16
# 5: FSDP2 as ZeRO-3 gathering bf16 weights, reducing fp32 gradients
BF16_PARAMS, BF16_GPUS = 13e9, 8


def _zero1_gb() -> Worked:
    p, g, k = MIXED.zero_split()
    held = per_gpu_bytes(Z1_PARAMS, Z1_GPUS, 1, MIXED)
    steps = (
        f"recipe '{MIXED.name}':",
        f"  {MIXED.formula()} B/param",
        f"  p = {p}, g = {g}, K = {k} (the fp32 master copy and m, v: all the optimizer keeps)",
        f"ZeRO-1 keeps p + g whole and shards K over {Z1_GPUS} GPUs:",
        f"  ({p} + {g}) x {Z1_PARAMS / 1e9:g}e9 + {k} x {Z1_PARAMS / 1e9:g}e9 / {Z1_GPUS} = {held:.4g} B",
    )
    return Worked(steps, held / 1e9, f"{held / 1e9:g} GB")


def _at_stage(stage: int) -> float:
    return per_gpu_bytes(Z1_PARAMS, Z1_GPUS, stage, MIXED) / 1e9


def _fewest_fit() -> Worked:
    p, g, k = MIXED.zero_split()
    fits = (n for n in range(1, 2**16) if per_gpu_bytes(FIT_PARAMS, n, FIT_STAGE, MIXED) <= A100.memory_bytes)
    needed = next(fits)  # the fewest GPUs that hold the training state
    whole, split = p * FIT_PARAMS / 1e9, (g + k) * FIT_PARAMS / 1e9  # GB
    left = A100.memory_bytes / 1e9 - whole
    at = {n: per_gpu_bytes(FIT_PARAMS, n, FIT_STAGE, MIXED) / 1e9 for n in (needed - 1, needed)}
    steps = (
        f"{STAGES[FIT_STAGE]} keeps the weights whole: {p} B x {FIT_PARAMS / 1e9:g}e9 = {whole:g} GB on every GPU",
        f"it splits gradients and optimizer state, ({g} + {k}) B x {FIT_PARAMS / 1e9:g}e9 = {split:g} GB,",
        f"  into the {A100.memory_bytes / 1e9:g} - {whole:g} = {left:g} GB left on each: N >= {split / left:.2f}",
        *(f"N = {n}: {gb:.2f} GB per GPU" for n, gb in at.items()),
    )
    return Worked(steps, needed, f"{needed} GPUs")


def _ring_sent(approach: str, params: float, gpus: int) -> float:
    """Bytes one GPU sends per step for an approach's collectives, as a ring, fp32 parameters."""
    traffic = predicted_traffic(approach, round(FP32_BYTES * params))
    return sum(ring_bytes_sent(op, size, gpus) for op, size in traffic.items())


def _link_ms(approach: str) -> float:
    return _ring_sent(approach, LINK_PARAMS, LINK_GPUS) / LINK_BYTES_PER_S * 1e3


def _zero3_extra_ms() -> Worked:
    sent = {name: _ring_sent(a, LINK_PARAMS, LINK_GPUS) for name, a in (("DDP", "ddp"), ("ZeRO-3", "fsdp2"))}
    ms = {name: b / LINK_BYTES_PER_S * 1e3 for name, b in sent.items()}
    grads, n, extra = FP32_BYTES * LINK_PARAMS / 1e9, LINK_GPUS, ms["ZeRO-3"] - ms["DDP"]
    steps = (
        f"fp32 gradients, and weights: {FP32_BYTES} B x {LINK_PARAMS / 1e9:g}e9 = {grads:g} GB each",
        f"DDP: one all-reduce, 2 x {n - 1}/{n} x {grads:g} GB = {sent['DDP'] / 1e9:g} GB sent",
        f"ZeRO-3: two all-gathers and a reduce-scatter, 3 x {n - 1}/{n} x {grads:g} GB"
        f" = {sent['ZeRO-3'] / 1e9:g} GB sent",
        f"at {LINK_BYTES_PER_S / 1e9:g} GB/s: DDP {ms['DDP']:.1f} ms, ZeRO-3 {ms['ZeRO-3']:.1f} ms",
        f"extra = {ms['ZeRO-3']:.1f} - {ms['DDP']:.1f} = {extra:.1f} ms per step",
    )
    return Worked(steps, extra, f"{extra:.1f} ms")


def _fullest_rank_mb() -> Worked:
    model = gpt2_small()  # on the meta device: shapes, no memory
    psi = sum(p.numel() for p in model.parameters())
    shares = zero1_partition(model, IMBALANCE_RANKS)
    largest = max(p.numel() for p in model.parameters())
    fullest = max(shares) * ADAM_BYTES
    average = psi * ADAM_BYTES / IMBALANCE_RANKS
    floor_from = next(n for n in range(1, IMBALANCE_RANKS + 1) if max(zero1_partition(model, n)) == largest)
    steps = (
        f"GPT-2 small: {psi:,} parameters; the largest tensor, the token embedding: {largest:,}",
        "ZeroRedundancyOptimizer gives whole tensors, largest first, to the rank holding fewest:",
        f"  rank 0 takes the embedding; the other {psi - largest:,} spread over {IMBALANCE_RANKS - 1} ranks",
        f"  at about {(psi - largest) / (IMBALANCE_RANKS - 1):,.0f} each, so nothing more reaches rank 0",
        f"fullest rank: {max(shares):,} x {ADAM_BYTES} B (m and v, fp32) = {fullest / 1e6:.1f} MB",
        f"the average, K Psi / N = {average / 1e6:.1f} MB: the fullest holds {fullest / average:.2f}x it",
        f"from {floor_from} ranks on, the fullest rank holds the embedding alone: more ranks do not shrink it",
    )
    return Worked(steps, fullest / 1e6, f"{fullest / 1e6:.1f} MB")


def _master_kept_whole_gb() -> float:
    """ZeRO-1 per GPU if the fp32 master copy were kept whole: only m and v split."""
    return (MIXED.total - MIXED_SIZES["optimizer_state"] * (1 - 1 / Z1_GPUS)) * Z1_PARAMS / 1e9


def _gpus_if(per_param_split: float, per_param_whole: float = 0.0, memory_scale: float = 1.0) -> int:
    """GPUs needed if `per_param_split` bytes a parameter split, `per_param_whole` stay whole, on memory_scale A100s."""
    return math.ceil(per_param_split * FIT_PARAMS / (A100.memory_bytes * memory_scale - per_param_whole * FIT_PARAMS))


def _gpt2_average_mb() -> float:
    return sum(p.numel() for p in gpt2_small().parameters()) * ADAM_BYTES / IMBALANCE_RANKS / 1e6


def _bf16_sent_gb() -> Worked:
    traffic = predicted_traffic("fsdp2_bf16", round(FP32_BYTES * BF16_PARAMS))
    n = BF16_GPUS
    total = sum(ring_bytes_sent(op, size, n) for op, size in traffic.items())
    steps = (
        f"the all-gathers pass bf16 weights, twice (forward, backward): {traffic['all_gather_single'] / 1e9:g} GB",
        f"the reduce-scatter passes fp32 gradients: {traffic['reduce_scatter_single'] / 1e9:g} GB",
        f"a ring rank sends {n - 1}/{n} of each: {n - 1}/{n} x "
        f"{sum(traffic.values()) / 1e9:g} GB = {total / 1e9:g} GB per step",
    )
    return Worked(steps, total / 1e9, f"{total / 1e9:g} GB")


def _bf16_sent_if(gather_bytes: int, reduce_bytes: int) -> float:
    """GB one GPU sends if weights were gathered, and gradients reduced, in dtypes of these sizes."""
    share = (BF16_GPUS - 1) / BF16_GPUS
    return share * (2 * gather_bytes + reduce_bytes) * BF16_PARAMS / 1e9


_BF16_BYTES = (MIXED_SIZES["parameters"], MIXED_SIZES["gradients"])  # bf16 weights, bf16 gradients
_GB_UNITS = {"GiB": 2**30 / 1e9, "TB": 1e3, "MB": 1e-3, "B": 1e-9, "bytes": 1e-9}
_PASSED = "that counts the bytes passed to the collectives: a ring rank sends (N - 1)/N of each tensor."
_MASTER = "the fp32 master copy is optimizer state, sharded with m and v."
_ZERO3 = "that shards everything (ZeRO-3): ZeRO-1 keeps weights and gradients whole."
_POOLED = "that pools all the memory, as ZeRO-3 does: ZeRO-2 keeps a full copy of the weights on every GPU."
_GIB_GPUS = _gpus_if(MIXED.total - MIXED_SIZES["parameters"], MIXED_SIZES["parameters"], 2**30 / 1e9)
_NO_MASTER = _gpus_if(MIXED_SIZES["gradients"] + MIXED_SIZES["optimizer_state"], MIXED_SIZES["parameters"])


PROBLEMS: dict[int, Problem] = {
    1: Problem(
        1,
        "ZeRO-1 with the mixed recipe",
        f"A {Z1_PARAMS / 1e9:.0f}B model trains on {Z1_GPUS} GPUs with bf16 weights and gradients, an fp32 master "
        "copy and fp32 Adam state, sharded with ZeRO-1 as the paper counts it (the optimizer's part split evenly). "
        "Leaving activations out, how many GB does each GPU hold? Answer in GB (1 GB = 1e9 bytes).",
        "GB",
        _zero1_gb,
        "Sort the bytes of a parameter into weights, gradients and what the optimizer keeps; ZeRO-1 splits only one.",
        units=_GB_UNITS,
        mistakes=(
            Mistake(lambda _: _master_kept_whole_gb(), _MASTER),
            Mistake(lambda _: _at_stage(0), "that copies everything to every GPU: ZeRO-1 shards the optimizer's part."),
            Mistake(lambda _: _at_stage(2), "that shards the gradients too (ZeRO-2): ZeRO-1 keeps them whole."),
            Mistake(lambda _: _at_stage(3), _ZERO3),
            unit_mixup("GiB", "GB"),
        ),
    ),
    2: Problem(
        2,
        "the fewest GPUs for ZeRO-2",
        f"A {FIT_PARAMS / 1e9:.0f}B model trains with the same mixed recipe (bf16 weights and gradients, fp32 "
        f"master copy and Adam state) and {STAGES[FIT_STAGE]}, on {A100.name} GPUs "
        f"({A100.memory_bytes / 1e9:.0f} GB each, 1 GB = 1e9 bytes). Leaving activations out, what is the fewest "
        "GPUs that hold it? Answer with a whole number of GPUs.",
        "GPUs",
        _fewest_fit,
        "Take off the bytes every GPU keeps whole; then find how many GPUs the split part needs so that it fits.",
        rel_tol=0.0,
        close_tol=0.05,  # no close band around a small whole number: a neighbour would be one run away
        mistakes=(
            Mistake(lambda _: _gpus_if(MIXED.total), _POOLED),
            Mistake(lambda _: _NO_MASTER, "the fp32 master copy is split too, and counts."),
            Mistake(lambda _: _GIB_GPUS, "that counts the cards' 80 GB as GiB (2^30 B each): here 1 GB is 1e9 B."),
        ),
    ),
    3: Problem(
        3,
        "what ZeRO-3's extra traffic costs",
        f"A {LINK_PARAMS / 1e9:.0f}B model trains in fp32 on {LINK_GPUS} GPUs, either with DDP or with FSDP2 as "
        f"ZeRO-3 (no mixed-precision policy). Take each GPU's link as sending {LINK_BYTES_PER_S / 1e9:.0f} GB/s "
        "(1 GB = 1e9 bytes), collectives as rings, and nothing overlapped with compute. How many milliseconds "
        "more per step does a GPU spend sending under ZeRO-3 than under DDP? Answer in ms.",
        "ms",
        _zero3_extra_ms,
        "List each approach's collectives and the tensor each is passed; a ring rank sends (N - 1)/N of it per pass.",
        units={"s": 1e3, "us": 1e-3, "µs": 1e-3},
        mistakes=(
            Mistake(lambda _: _link_ms("fsdp2"), "that is ZeRO-3's whole sending time: subtract DDP's."),
            Mistake(lambda _: _link_ms("ddp"), "that is DDP's sending time: the question asks for ZeRO-3's extra."),
            Mistake(lambda ms: ms / 2, "the link rate is what one GPU sends: do not split it in two."),
            Mistake(lambda _: 2 * FP32_BYTES * LINK_PARAMS / LINK_BYTES_PER_S * 1e3, _PASSED),
        ),
    ),
    4: Problem(
        4,
        "ZeroRedundancyOptimizer's fullest rank",
        "GPT-2 small, the model `gpt2_small()` above builds, trains in fp32 with AdamW wrapped in "
        f"ZeroRedundancyOptimizer on {IMBALANCE_RANKS} ranks. How many MB of Adam's m and v does the fullest "
        "rank hold? Answer in MB (1 MB = 1e6 bytes).",
        "MB",
        _fullest_rank_mb,
        "The engine never splits a tensor: find where the largest one goes, and what else can join it there.",
        units={"GB": 1e3, "MiB": 2**20 / 1e6, "kB": 1e-3, "B": 1e-6, "bytes": 1e-6},
        mistakes=(
            Mistake(lambda _: _gpt2_average_mb(), "that is the average, K Psi / N: whole tensors do not split evenly."),
            Mistake(lambda mb: mb / 2, "Adam keeps two tensors per parameter, m and v."),
            unit_mixup("MiB", "MB"),
        ),
    ),
    5: Problem(
        5,
        "gathering in bf16",
        f"A {BF16_PARAMS / 1e9:.0f}B model trains on {BF16_GPUS} GPUs with FSDP2 as ZeRO-3 and "
        "`MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)`: fp32 shards, weights "
        "gathered in bf16, gradients reduce-scattered in fp32. With ring collectives, how many GB does each "
        "GPU send per step? Answer in GB (1 GB = 1e9 bytes).",
        "GB",
        _bf16_sent_gb,
        "Count each collective's tensor in the dtype it travels in, then a ring rank's share of it.",
        units=_GB_UNITS,
        mistakes=(
            Mistake(
                lambda _: _bf16_sent_if(FP32_BYTES, FP32_BYTES), "that gathers fp32 weights: the policy gathers bf16."
            ),
            Mistake(lambda _: _bf16_sent_if(*_BF16_BYTES), "reduce_dtype keeps the gradients fp32 on the wire."),
            Mistake(lambda gb: gb * BF16_GPUS / (BF16_GPUS - 1), _PASSED),
            unit_mixup("GiB", "GB"),
        ),
    ),
}
