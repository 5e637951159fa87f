"""The package's one validation policy: every helper is checked against its annotations at call time.

lecture_utils/__init__.py installs jaxtyping's import hook, so each rule is proved here once, on one
real helper, instead of once per function in each module's tests.
"""

import functools
import importlib
import importlib.util
import inspect
import math
import pkgutil

import jaxtyping._decorator
import pytest
import torch
from jaxtyping import TypeCheckError

import lecture_utils
from lecture_utils.dtypes import float_bits, ulp
from lecture_utils.memory import dtype_bytes, format_bytes
from lecture_utils.napkin import cluster_flops_per_day, training_days, training_flops
from lecture_utils.quantization import dequantize_per_channel, qmax
from lecture_utils.strides import storage_index

MODULES = sorted(m.name for m in pkgutil.walk_packages(lecture_utils.__path__, "lecture_utils."))


def is_checked(fn: object) -> bool:
    """Whether fn, or a function it wraps, is the wrapper that jaxtyping.jaxtyped puts around a function."""
    while fn is not None:
        code = getattr(fn, "__code__", None)
        if code is not None and code.co_filename == jaxtyping._decorator.__file__:
            return True
        fn = getattr(fn, "__wrapped__", None)
    return False


def public_callables(module: object) -> dict[str, object]:
    """Functions and methods (properties included) that `module` defines and that do not start with _."""
    found = {}
    for name, obj in vars(module).items():
        if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
            continue
        if inspect.isfunction(obj):
            found[name] = obj
        elif inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if isinstance(member, staticmethod | classmethod):
                    member = member.__func__
                elif isinstance(member, property):
                    member = member.fget
                if inspect.isfunction(member) and (attr == "__init__" or not attr.startswith("_")):
                    found[f"{name}.{attr}"] = member
    return found


@pytest.mark.parametrize("module_name", MODULES)
def test_the_import_hook_checks_every_public_function(module_name):
    module = importlib.import_module(module_name)
    unchecked = [name for name, fn in public_callables(module).items() if not is_checked(fn)]
    assert not unchecked, f"{module_name}: not checked at call time: {unchecked}"


def test_the_walk_reaches_the_topic_and_copyable_modules_and_the_marker_can_fail():
    assert {"lecture_utils.napkin", "lecture_utils.figures.memory", "lecture_utils.adamw"} <= set(MODULES)
    assert is_checked(training_flops) and not is_checked(training_flops.__wrapped__)  # the function under the hook


def test_a_wrong_type_is_rejected_naming_the_parameter():
    with pytest.raises(TypeCheckError, match="parameter 'dtype'"):
        dtype_bytes("float32")


def test_named_axes_must_agree_across_arguments():
    codes = torch.zeros(4, 3, dtype=torch.int8)
    dequantize_per_channel(codes, torch.ones(4, 1))  # "out" is 4 in both
    with pytest.raises(TypeCheckError, match="parameter 'scale'"):
        dequantize_per_channel(codes, torch.ones(5, 1))


def test_a_float_tensor_annotation_rejects_an_int_tensor():
    with pytest.raises(TypeCheckError, match="parameter 'x'"):
        ulp(torch.tensor([1, 2]), torch.float16)


def test_positive_int_rejects_zero():
    with pytest.raises(TypeCheckError, match="parameter 'num_gpus'"):
        cluster_flops_per_day(0, 1e15, 0.5)


def test_non_negative_int_accepts_zero_and_rejects_minus_one():
    assert storage_index((1,), (4,), offset=0) == 4
    with pytest.raises(TypeCheckError, match="parameter 'offset'"):
        storage_index((1,), (4,), offset=-1)


@pytest.mark.parametrize("params", [0, -1, math.inf, math.nan])
def test_positive_float_rejects_zero_negative_and_non_finite(params):
    with pytest.raises(TypeCheckError, match="parameter 'params'"):
        training_flops(params, 1e12)


def test_non_negative_float_accepts_zero_and_rejects_minus_one():
    assert format_bytes(0) == "0 B"
    with pytest.raises(TypeCheckError, match="parameter 'n'"):
        format_bytes(-1)


@pytest.mark.parametrize("mfu", [0, 1.5, -0.1])
def test_fraction_is_above_zero_and_at_most_one(mfu):
    assert training_days(86_400e15, 1, 1e15, 1.0) == pytest.approx(1.0)  # 1 itself is a fraction
    with pytest.raises(TypeCheckError, match="parameter 'mfu'"):
        training_days(1e24, 8, 1e15, mfu)


def test_a_literal_rejects_a_value_outside_it():
    assert qmax(8) == 127
    with pytest.raises(TypeCheckError, match="parameter 'bits'"):
        qmax(3)


def test_an_int_is_accepted_where_a_float_is_annotated():
    # PEP 484's numeric tower: 70_000_000_000 parameters are as good as 70e9.
    assert training_flops(70_000_000_000, 15 * 10**12) == pytest.approx(6.3e24)
    assert float_bits(1, torch.float32).exponent == 127


def test_the_hook_renames_only_this_packages_bytecode():
    # A library first imported inside a package module keeps its cached bytecode (lecture_utils/__init__.py).
    from jaxtyping import _import_hook

    name_for = functools.partial(_import_hook._optimized_cache_from_source, "hash")
    assert name_for(torch.__file__) == importlib.util.cache_from_source(torch.__file__)
    assert "jaxtyping" in name_for(inspect.getfile(training_flops.__wrapped__))
