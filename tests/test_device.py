import pytest
import torch

from lecture_utils.device import device_name, per_device, pick_device, synchronize, torch_threads


def test_pick_device_matches_what_torch_sees():
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert pick_device().type == expected


def test_sized_picks_by_device_type():
    assert per_device("cpu", cpu=256, cuda=8192) == 256
    assert per_device(torch.device("cuda", 0), cpu=256, cuda=8192) == 8192
    with pytest.raises(ValueError, match="device type 'meta' is not supported"):
        per_device("meta", cpu=1, cuda=2)


def test_synchronize_and_name_on_cpu():
    synchronize("cpu")  # a no-op that must not fail
    assert device_name("cpu") == "cpu"


def test_torch_threads_sets_the_count_and_restores_it_even_after_an_error():
    before = torch.get_num_threads()
    with pytest.raises(RuntimeError, match="inside"):
        with torch_threads(1):
            assert torch.get_num_threads() == 1
            raise RuntimeError("inside")
    assert torch.get_num_threads() == before
    with torch_threads(None):
        assert torch.get_num_threads() == before
