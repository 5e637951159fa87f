"""Which dtype each op returns under torch.autocast (notebook 08).

Autocast leaves the parameters in fp32 and picks a dtype per op from a per-device list:
matmul-like ops get the low-precision dtype, ops that need range or accurate sums may stay fp32.
"""

import torch
import torch.nn.functional as F


def autocast_dtypes(device: torch.device | str, dtype: torch.dtype = torch.bfloat16) -> dict[str, torch.dtype]:
    """The dtype each common op returns under torch.autocast on `device`, starting from fp32 tensors (notebook 08)."""
    device = torch.device(device)
    # torch itself only warns and switches autocast off for other dtypes: say what autocast is for.
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
