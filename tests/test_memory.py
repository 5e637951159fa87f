import pytest
import torch

from lecture_utils.memory import dtype_bytes, format_bytes, saved_tensor_bytes, storage_bytes, tensor_bytes


def test_tensor_bytes_is_numel_times_element_size():
    assert tensor_bytes(torch.zeros(4, 8)) == 4 * 8 * 4  # the lecture's 128 bytes
    assert tensor_bytes(torch.zeros(4, 8, dtype=torch.bfloat16)) == 64
    assert tensor_bytes(torch.zeros(0)) == 0


def test_a_view_is_charged_its_extent_but_shares_the_storage():
    x = torch.zeros(4, 8)
    row = x[0]
    assert tensor_bytes(row) == 32
    assert storage_bytes(row) == storage_bytes(x) == 128


def test_dtype_bytes():
    assert [dtype_bytes(d) for d in (torch.float32, torch.bfloat16, torch.float8_e4m3fn)] == [4, 2, 1]


@pytest.mark.parametrize(
    "n, binary, text",
    [
        (0, True, "0 B"),
        (1023, True, "1023 B"),
        (1024, True, "1.0 KiB"),
        (2_415_919_104, True, "2.2 GiB"),
        (2304 * 2**20, True, "2.2 GiB"),
        (80e9, False, "80.0 GB"),
        (3.35e12, False, "3.4 TB"),
        (2**70, True, "1048576.0 PiB"),
    ],
)
def test_format_bytes(n, binary, text):
    assert format_bytes(n, binary=binary) == text


def test_saved_tensor_bytes_counts_activations_once_and_skips_excluded():
    generator = torch.Generator().manual_seed(0)
    w1 = torch.randn(4, 4, generator=generator).requires_grad_()
    w2 = torch.randn(4, 3, generator=generator).requires_grad_()
    x = torch.randn(2, 4, generator=generator)

    def forward():
        return ((x @ w1).relu() @ w2).sum()

    # mm saves its two inputs; relu saves its output, which the second mm also saves (one storage).
    only_activations = saved_tensor_bytes(forward, exclude=[w1, w2, x])
    assert only_activations == 2 * 4 * 4  # the relu output, (2, 4) fp32
    # Autograd saves only what backward needs: x (for w1.grad) and w2 (for the relu output's
    # grad), but not w1, since x needs no gradient.
    everything = saved_tensor_bytes(forward)
    assert everything == only_activations + 4 * (x.numel() + w2.numel())


def test_saved_tensor_bytes_is_zero_without_autograd():
    x = torch.randn(3, 3)
    assert saved_tensor_bytes(lambda: (x @ x).sum()) == 0
