import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from lecture_utils.device import (
    device_name,
    has_fast_bf16,
    per_device,
    pick_device,
    synchronize,
    torch_threads,
)


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


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="oneDNN's ISA cap is an x86 setting")
def test_fast_bf16_follows_the_cpu_and_onednn():
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    capped = any(os.environ.get(name) for name in ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"))
    if not capped and ("avx512_bf16" in flags or "amx_bf16" in flags):  # native bf16 instructions
        assert has_fast_bf16("cpu")
    # oneDNN held to AVX2 (a fresh interpreter: the setting is read once) has no bf16 kernel.
    code = "from lecture_utils.device import has_fast_bf16; print(has_fast_bf16('cpu'))"
    env = {**os.environ, "ONEDNN_MAX_CPU_ISA": "AVX2"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "False", done.stderr
