"""Napkin calculators (notebook 00): training time from FLOPs, and the largest model that fits in memory."""

from lecture_utils.checks import Fraction, PositiveFloat, PositiveInt

SECONDS_PER_DAY = 86_400


def training_flops(params: PositiveFloat, tokens: PositiveFloat) -> float:
    """Dense-transformer training compute, 6ND: N parameters, D tokens; 2ND forward, 4ND backward (notebooks 00, 04)."""
    return 6 * params * tokens


def cluster_flops_per_day(num_gpus: PositiveInt, peak_flops_per_gpu: PositiveFloat, mfu: Fraction) -> float:
    """Useful FLOPs a cluster delivers in one day at a given model FLOPs utilization (notebooks 00, 04)."""
    return num_gpus * peak_flops_per_gpu * mfu * SECONDS_PER_DAY


def training_days(
    total_flops: PositiveFloat, num_gpus: PositiveInt, peak_flops_per_gpu: PositiveFloat, mfu: Fraction
) -> float:
    """Days to spend `total_flops` on `num_gpus` GPUs of a given dense peak, at a given MFU (notebooks 00, 04)."""
    return total_flops / cluster_flops_per_day(num_gpus, peak_flops_per_gpu, mfu)


def largest_model_params(memory_bytes: PositiveFloat, bytes_per_param: PositiveFloat) -> float:
    """Parameters that fit when each costs `bytes_per_param`: weights, grads, optimizer state (notebook 00).

    Activations, the CUDA context, temporary buffers and fragmentation are not counted, so the
    real largest model is smaller.
    """
    return memory_bytes / bytes_per_param
