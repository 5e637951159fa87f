import itertools

import matplotlib.pyplot as plt
import pytest
import torch

from lecture_utils.figures.memory import draw_strides
from lecture_utils.strides import (
    contiguous_strides,
    element_via_storage,
    new_bytes,
    shares_storage,
    storage_elements,
    storage_index,
)


@pytest.mark.parametrize("shape", [(7,), (4, 4), (2, 3, 5), (1, 6, 1, 2), (3, 1, 4, 2, 2)])
def test_contiguous_strides_match_torch(shape):
    assert contiguous_strides(shape) == torch.empty(shape).stride()


def test_storage_index_hand_computed():
    assert storage_index((1, 2), (4, 1)) == 6  # the lecture's 4x4 example
    assert storage_index((1, 2), (1, 4), offset=3) == 3 + 1 + 8
    assert storage_index((), ()) == 0


def _views(x: torch.Tensor) -> list[torch.Tensor]:
    """Views with offsets, permuted strides, steps and zero strides."""
    views = [x, x.transpose(0, -1), x.flip(0).contiguous()[1:], x.narrow(-1, 1, x.shape[-1] - 1)]
    views.append(x[..., ::2])
    views.append(x.unsqueeze(0).expand(3, *x.shape))
    if x.dim() >= 2:
        views.append(x.permute(*range(x.dim() - 1, -1, -1))[1:, ::3])
    return [v for v in views if v.numel() > 0]


def test_element_via_storage_agrees_with_torch_indexing_on_random_shapes_and_views():
    gen = torch.Generator().manual_seed(0)
    checked = 0
    for _ in range(20):
        shape = torch.randint(2, 5, (int(torch.randint(1, 5, (1,), generator=gen)),), generator=gen).tolist()
        x = torch.randn(shape, generator=gen)
        for view in _views(x):
            for index in itertools.product(*(range(n) for n in view.shape)):
                assert element_via_storage(view, index).item() == view[index].item()
                checked += 1
    assert checked > 1000


def test_storage_elements_is_the_whole_storage_without_a_copy():
    x = torch.arange(12.0).view(3, 4)
    row = x[2]
    flat = storage_elements(row)
    assert flat.tolist() == list(range(12))
    assert shares_storage(flat, x)
    flat[5] = -1.0
    assert x[1, 1].item() == -1.0


def test_shares_storage():
    x = torch.zeros(2, 3)
    assert shares_storage(x, x.T) and shares_storage(x, x[1]) and shares_storage(x, x.view(6))
    assert not shares_storage(x, x.clone())
    assert not shares_storage(x, x.T.contiguous())


def _devices() -> list[str]:
    return ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]


@pytest.mark.parametrize("device", _devices())
def test_new_bytes_a_view_allocates_nothing_a_copy_its_elements(device):
    # Sizes in multiples of 512 B, the smallest block a GPU's caching allocator hands out.
    a = torch.zeros(48, 64, device=device)
    for view in (lambda: a.T, lambda: a[1:, ::2], lambda: a.view(-1), lambda: a.unsqueeze(0).expand(3, 48, 64)):
        assert new_bytes(view, a) == 0
    assert new_bytes(lambda: a.T.contiguous(), a) == 48 * 64 * 4
    assert new_bytes(lambda: a[torch.tensor([0, 2], device=device)], a) == 2 * 64 * 4  # advanced indexing copies
    assert new_bytes(lambda: a.to(torch.bfloat16), a) == 48 * 64 * 2
    assert new_bytes(lambda: a.contiguous(), a) == 0  # already contiguous: a itself


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU's allocation counter")
def test_new_bytes_on_a_gpu_counts_what_the_allocator_hands_out():
    # 4 fp32 elements need 16 B; the caching allocator hands out blocks of at least 512 B.
    a = torch.zeros(4, device="cuda")
    assert new_bytes(lambda: a * 2, a) == 512


def test_empty_and_meta_tensors_share_nothing():
    # Their storages all report data pointer 0, which must not read as "the same storage".
    assert not shares_storage(torch.empty(0), torch.empty(0))
    assert not shares_storage(torch.empty(3, device="meta"), torch.empty(3, device="meta"))


def test_storage_index_wants_one_stride_per_dim():
    with pytest.raises(ValueError, match="one index per dimension"):
        storage_index((1, 2), (4,))


@pytest.mark.parametrize("index", [(0, 3), (2, 0), (-1, 0), (0,), (0, 0, 0)])
def test_an_index_outside_the_shape_is_rejected(index):
    # The formula alone would read another element (or past the storage): only the shape says no.
    with pytest.raises(ValueError, match=r"out of range for shape \(2, 3\)"):
        element_via_storage(torch.zeros(2, 3), index)


def test_stride_figure_places_each_storage_element_by_the_formula():
    fig = draw_strides(3, 4)
    texts = fig.axes[0].texts
    assert "stride (4, 1)" in " ".join(t.get_text() for t in texts)
    assert "stride (1, 4)" in " ".join(t.get_text() for t in texts)
    # Cell values are the bold digits, drawn storage first, then each grid row by row.
    cells = [int(t.get_text()) for t in texts if t.get_text().isdigit() and t.get_fontweight() == "bold"]
    storage = torch.arange(12)
    assert cells == storage.tolist() + storage.view(3, 4).flatten().tolist() + storage.view(3, 4).T.flatten().tolist()
    plt.close(fig)


def test_stride_figure_draws_a_single_element():
    fig = draw_strides(1, 1)
    assert "stride (1, 1)" in " ".join(t.get_text() for t in fig.axes[0].texts)
    plt.close(fig)
