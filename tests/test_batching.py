"""get_batch on a np.memmap: shapes, int64, the one-token shift, every start reachable, the device."""

import os
import tempfile

import numpy as np
import pytest
import torch

from lecture_utils.batching import get_batch


@pytest.fixture
def memmap_tokens():
    """np.arange(1000) as uint16 in a raw token file, opened read-only as a np.memmap."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "tokens.bin")
        writer = np.memmap(path, dtype=np.uint16, mode="w+", shape=(1000,))
        writer[:] = np.arange(1000)
        writer.flush()
        del writer
        tokens = np.memmap(path, dtype=np.uint16, mode="r")
        yield tokens
        del tokens


def test_shapes_dtype_shift_and_windows(memmap_tokens):
    torch.manual_seed(0)
    x, y = get_batch(memmap_tokens, batch_size=8, context_length=16, device="cpu")
    assert x.shape == y.shape == (8, 16)
    assert x.dtype == y.dtype == torch.int64 and x.device.type == "cpu"
    # The data is 0, 1, 2, ...: each row is a run of consecutive ids and its target is one ahead.
    assert torch.equal(x - x[:, :1], torch.arange(16).expand(8, 16))
    assert torch.equal(y, x + 1)
    assert torch.equal(y[:, :-1], x[:, 1:])


def test_every_start_is_drawn_and_the_last_token_can_be_a_target():
    data = np.arange(20, dtype=np.int32)
    torch.manual_seed(0)
    starts, last = set(), 0
    for _ in range(50):
        x, y = get_batch(data, batch_size=8, context_length=17, device="cpu")
        starts |= set(x[:, 0].tolist())
        last = max(last, y.max().item())
    assert starts == {0, 1, 2}  # 20 tokens hold 3 windows of 17 inputs + 1 target
    assert last == 19


def test_reproducible_from_the_global_seed_or_a_generator():
    data = np.arange(500, dtype=np.uint16)
    torch.manual_seed(3)
    first = get_batch(data, 4, 8, "cpu")
    torch.manual_seed(3)
    assert all(torch.equal(a, b) for a, b in zip(first, get_batch(data, 4, 8, "cpu"), strict=True))
    own = []
    for global_seed in (0, 99):  # the global stream moves between the two calls; the generator decides alone
        torch.manual_seed(global_seed)
        own.append(get_batch(data, 4, 8, "cpu", generator=torch.Generator().manual_seed(7)))
    assert all(torch.equal(a, b) for a, b in zip(*own, strict=True))
    other = get_batch(data, 4, 8, "cpu", generator=torch.Generator().manual_seed(8))
    assert not torch.equal(other[0], own[0][0])


@pytest.mark.parametrize(
    "device",
    [
        "cpu",
        torch.device("cpu"),
        pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")),
    ],
)
def test_batches_land_on_the_device(device):
    data = np.arange(100, dtype=np.int64)
    x, y = get_batch(data, 2, 5, device, generator=torch.Generator().manual_seed(1))
    assert x.device.type == y.device.type == torch.device(device).type
    assert torch.equal(y.cpu(), x.cpu() + 1)
    # The windows are drawn on the CPU generator, so every device gets the same batch.
    assert torch.equal(x.cpu(), get_batch(data, 2, 5, "cpu", generator=torch.Generator().manual_seed(1))[0])


def test_a_context_as_long_as_the_data_leaves_no_target():
    with pytest.raises(ValueError, match=r"needs 11 tokens \(inputs plus a target\); x has 10"):
        get_batch(np.arange(10), 2, 10, "cpu")
