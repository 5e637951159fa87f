"""Helpers shared by the CS336 Lecture 2 notebooks: one topic a module.

Every annotation in the package is enforced. Importing the package installs jaxtyping's import
hook, which decorates each function and dataclass of every `lecture_utils` module with
`jaxtyped(typechecker=typechecker)`: beartype checks each argument and return value against its
annotation, and jaxtyping checks that named axes ("batch seq") agree across all of them. So a
wrong type, a wrong shape or a value outside an annotated range (lecture_utils.checks) fails at
the call, with the parameter's name. Notebook 03 shows the same checks on one function.
"""

# The libraries nearly every module uses, imported before the hook. While the hook runs a module of
# the package, Python looks up the bytecode of any library that module imports first under the
# hook's tag: the first time (or always, where PYTHONDONTWRITEBYTECODE is set, as here) the library
# is compiled from source. Measured here: 3.5 s instead of 1.4 s for a notebook's first imports.
# _tag_only_this_package (below) spares the libraries a module imports later.
import importlib.util
import logging
import os

import einops  # noqa: F401
import matplotlib.pyplot  # noqa: F401
import numpy  # noqa: F401
import torch
from beartype import BeartypeConf, beartype
from jaxtyping import _import_hook as _jaxtyping_hook
from jaxtyping import install_import_hook

# The oldest torch the notes run on (README, "Torch versions"): they rely on fp8 casts that saturate
# (notebook 01), and on FSDP2's public `fully_shard` and the collectives it calls (notebook 09).
# pyproject.toml declares the range the whole suite has been run on. Failing here names the release
# needed, instead of an error deep inside some notebook.
OLDEST_TORCH = "2.13"
if torch.torch_version.TorchVersion(torch.__version__) < OLDEST_TORCH:
    raise ImportError(
        f"lecture_utils needs torch {OLDEST_TORCH} or newer; this environment has torch {torch.__version__}. "
        f'Install a supported release (pip install "torch>={OLDEST_TORCH},<2.16"), or run `make setup`, '
        "which installs the release the committed outputs were recorded with."
    )


class _NoCudaRuntimeNotice(logging.Filter):
    """Drops the notice a CUDA build of torch logs when the CUDA toolkit is installed but no GPU is visible.

    torch.utils.cpp_extension logs it once, at import, to stderr (torch.utils.benchmark imports it,
    and lecture_utils.timing imports that). It is what a GPU workstation prints while its GPU is
    hidden, as `make test` hides it: a red box in the first cell of every notebook that times
    something, although the notes print the device they picked anyway.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("No CUDA runtime is found")


logging.getLogger("torch.utils.cpp_extension").addFilter(_NoCudaRuntimeNotice())

# PEP 484's numeric tower: an int is accepted where a float is annotated (a count of 70e9 FLOPs
# and one of 70_000_000_000 are the same number).
typechecker = beartype(conf=BeartypeConf(is_pep484_tower=True))

# Before any submodule is imported: the hook only rewrites modules imported after it.
install_import_hook(__name__, "lecture_utils.typechecker")


def _tag_only_this_package(typechecker_hash: str, /, path: str, debug_override: object = None) -> str:
    """The bytecode file name for `path`: the hook's own tag for this package, the usual one elsewhere.

    While the hook runs one of this package's modules it renames every bytecode file Python looks up,
    so a library that module imports first (torch._dynamo, which FSDP2 needs) misses its cached
    bytecode and is compiled from source: 4.7 s instead of 1.5 s for notebook 09's engines here.
    """
    if os.path.abspath(path).startswith(_PACKAGE_DIR + os.sep):
        return _tagged_cache_from_source(typechecker_hash, path, debug_override)
    return importlib.util.cache_from_source(path, debug_override)


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
# A private function of jaxtyping's hook: where a release renames it, imports are only slower.
_tagged_cache_from_source = getattr(_jaxtyping_hook, "_optimized_cache_from_source", None)
if _tagged_cache_from_source is not None:
    _jaxtyping_hook._optimized_cache_from_source = _tag_only_this_package
