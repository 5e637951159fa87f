"""Napkin calculators: training time from FLOPs, and the largest model that fits in memory."""

from __future__ import annotations

from lecture_utils.checks import check_positive

SECONDS_PER_DAY = 86_400


def check_mfu(mfu: float) -> None:
    """Raise unless `mfu` is a fraction of peak in (0, 1]."""
    check_positive(mfu=mfu)
    if mfu > 1:
        raise ValueError(f"mfu is a fraction of peak in (0, 1], got {mfu}")


def training_flops(params: float, tokens: float) -> float:
    """Dense-transformer training compute, 6 x N x D: 2ND forward plus 4ND backward."""
    check_positive(params=params, tokens=tokens)
    return 6 * params * tokens


def cluster_flops_per_day(num_gpus: int, peak_flops_per_gpu: float, mfu: float) -> float:
    """Useful FLOPs a cluster delivers in one day at a given model FLOPs utilization."""
    check_positive(num_gpus=num_gpus, peak_flops_per_gpu=peak_flops_per_gpu)
    check_mfu(mfu)
    return num_gpus * peak_flops_per_gpu * mfu * SECONDS_PER_DAY


def training_days(total_flops: float, num_gpus: int, peak_flops_per_gpu: float, mfu: float) -> float:
    """Days to spend `total_flops` on `num_gpus` GPUs of a given dense peak, at a given MFU."""
    check_positive(total_flops=total_flops)
    return total_flops / cluster_flops_per_day(num_gpus, peak_flops_per_gpu, mfu)


def largest_model_params(memory_bytes: float, bytes_per_param: float) -> float:
    """Parameters that fit when every parameter costs `bytes_per_param` (weights, grads, optimizer state).

    Activations, the CUDA context, temporary buffers and fragmentation are not counted, so the
    real largest model is smaller.
    """
    check_positive(memory_bytes=memory_bytes, bytes_per_param=bytes_per_param)
    return memory_bytes / bytes_per_param
