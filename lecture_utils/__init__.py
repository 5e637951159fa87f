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
import einops  # noqa: F401
import matplotlib.pyplot  # noqa: F401
import numpy  # noqa: F401
import torch  # noqa: F401
from beartype import BeartypeConf, beartype
from jaxtyping import install_import_hook

# PEP 484's numeric tower: an int is accepted where a float is annotated (a count of 70e9 FLOPs
# and one of 70_000_000_000 are the same number).
typechecker = beartype(conf=BeartypeConf(is_pep484_tower=True))

# Before any submodule is imported: the hook only rewrites modules imported after it.
install_import_hook(__name__, "lecture_utils.typechecker")
