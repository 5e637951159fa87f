"""The assignment-1 helpers work when copied alone: each file, in a directory of its own, in a fresh interpreter.

Two checks. Statically, every import statement in each file (inside functions too) names only
torch, numpy, einops, jaxtyping or the standard library pieces listed below. Dynamically, a
subprocess imports each copied file from its own temporary directory and exercises it, with
lecture_utils made unimportable (it is installed in this environment, so an import of it would
otherwise succeed silently).

Run as a script, `python tests/test_copyable.py`, it makes both checks with that interpreter and
needs only torch, numpy, einops and jaxtyping: `make assignment-check` runs it so in assignment 1's
locked environment (torch 2.6.0), where lecture_utils itself cannot be installed.
"""

import ast
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "lecture_utils"  # not imported: the script runs without it
MODULES = ["nn_basics", "adamw", "schedule", "batching", "checkpointing"]
ALLOWED = {
    "collections",
    "io",
    "math",
    "os",
    "tempfile",
    "typing",
    "torch",
    "numpy",
    "einops",
    "jaxtyping",
}


def test_imports_only_torch_numpy_einops_jaxtyping_and_stdlib_basics():
    for name in MODULES:
        source = (PACKAGE / f"{name}.py").read_text()
        imported = set()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                assert node.level == 0, f"{name}.py has a relative import"
                imported.add(node.module.split(".")[0])
        assert imported <= ALLOWED, f"{name}.py imports {sorted(imported - ALLOWED)}"
        assert {"torch"} <= imported


# Run in the subprocess: each module alone on the path, then a short use of what it defines.
CHECKS = {
    "nn_basics": """
        x = torch.randn(2, 3, 4)
        assert m.Linear(4, 5)(x).shape == (2, 3, 5)
        assert torch.allclose(m.softmax(x, -1).sum(-1), torch.ones(2, 3))
        uniform = m.cross_entropy(torch.zeros(2, 3, 10), torch.zeros(2, 3, dtype=torch.long))
        assert abs(uniform.item() - math.log(10)) < 1e-6
        causal = torch.ones(3, 3, dtype=torch.bool).tril()
        assert m.scaled_dot_product_attention(x, x, x, causal).shape == (2, 3, 4)
    """,
    "adamw": """
        p = torch.nn.Parameter(torch.ones(3))
        p.grad = torch.ones(3)
        m.AdamW([p], lr=0.1, eps=0.0, weight_decay=0.0).step()
        assert torch.allclose(p, torch.full((3,), 0.9))  # the first step moves lr * sign(g)
    """,
    "schedule": """
        assert m.get_lr_cosine_schedule(0, 1.0, 0.1, 10, 30) == 0.0
        p = torch.nn.Parameter(torch.zeros(2))
        p.grad = torch.tensor([30.0, 40.0])
        assert m.gradient_clipping([p], 5.0).item() == 50.0
        assert abs(p.grad.norm().item() - 5.0) < 1e-4
    """,
    "batching": """
        x, y = m.get_batch(np.arange(50, dtype=np.uint16), 4, 8, "cpu")
        assert x.shape == (4, 8) and x.dtype == torch.int64 and torch.equal(y, x + 1)
    """,
    "checkpointing": """
        import io
        model = torch.nn.Linear(2, 2)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        buffer = io.BytesIO()
        m.save_checkpoint(model, optimizer, 7, buffer)
        buffer.seek(0)
        assert m.load_checkpoint(buffer, model, optimizer) == 7
    """,
}

RUNNER = """
import importlib, math, sys
import numpy as np
import torch
sys.modules["lecture_utils"] = None  # from here on, any import of lecture_utils raises ImportError
try:
    import lecture_utils.checks  # the control: this must fail, or the test below proves nothing
except ImportError:
    pass
else:
    raise AssertionError("lecture_utils is still importable")
for name, directory, check in CASES:
    sys.path.insert(0, directory)
    m = importlib.import_module(name)
    assert m.__file__.startswith(directory), m.__file__
    exec(check)
    sys.path.remove(directory)
    for other in [n for n, _, _ in CASES]:
        sys.modules.pop(other, None)  # the next module cannot lean on this one
print("copied modules ok")
"""


def test_each_module_runs_from_a_directory_of_its_own():
    with tempfile.TemporaryDirectory() as tmp:
        cases = []
        for name in MODULES:
            directory = Path(tmp) / name
            directory.mkdir()
            shutil.copy(PACKAGE / f"{name}.py", directory / f"{name}.py")
            cases.append((name, str(directory), textwrap.dedent(CHECKS[name])))
        script = f"CASES = {cases!r}\n{RUNNER}"
        # -I: ignore PYTHONPATH and the user site, and do not put the working directory on sys.path.
        result = subprocess.run(
            [sys.executable, "-I", "-W", "error", "-c", script], cwd=tmp, capture_output=True, text=True, timeout=120
        )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "copied modules ok"


if __name__ == "__main__":  # make assignment-check: both checks, in whatever environment runs this file
    import einops
    import jaxtyping
    import numpy
    import torch

    test_imports_only_torch_numpy_einops_jaxtyping_and_stdlib_basics()
    test_each_module_runs_from_a_directory_of_its_own()
    versions = f"torch {torch.__version__}, numpy {numpy.__version__}, einops {einops.__version__}"
    print(
        f"{len(MODULES)} copied files pass alone: Python {sys.version.split()[0]}, {versions}, "
        f"jaxtyping {jaxtyping.__version__}"
    )
