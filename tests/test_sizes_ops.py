"""Size parsing and the analytic cost model, checked against values computed by hand."""

from pathlib import Path

import pytest

from gpuprof.errors import InputError
from gpuprof.model.sizes import format_bytes, parse_size
from gpuprof.workloads import ops


@pytest.mark.parametrize(
    "text, expected",
    [
        ("6MB", 6_000_000),
        ("6mb", 6_000_000),
        ("6MiB", 6 * 1048576),
        ("512KB", 512_000),
        ("1GB", 10**9),
        ("1GiB", 2**30),
        ("4096B", 4096),
        ("4096", 4096),
        ("1.5MB", 1_500_000),
        (" 2 KiB ", 2048),
    ],
)
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("6XB", "unknown unit 'XB'"),
        ("-1", "is not a size"),
        ("0", "not a positive size"),
        ("", "is not a size"),
        ("MB", "is not a size"),
        ("6 M B", "is not a size"),
        ("0.0001B", "not a positive"),
    ],
)
def test_parse_size_rejects(text, fragment):
    with pytest.raises(InputError) as caught:
        parse_size(text)
    assert fragment in str(caught.value)
    assert "\n" not in str(caught.value)


def test_format_bytes():
    assert format_bytes(5_998_188) == "6.00 MB"
    assert format_bytes(999) == "999 B"


def test_dot_6mb_shape_and_counts():
    # 6e6 B / (3 operands × 4 B) = 500000 elements each -> isqrt = 707
    shape = ops.shape_for_size("dot", 6_000_000, "float32")
    assert shape == (707, 707, 707)
    assert ops.footprint("dot", shape, "float32") == 3 * 707 * 707 * 4 == 5_998_188
    assert ops.flops("dot", shape) == 2 * 707**3 == 706_786_486


def test_rectangular_dot_counts():
    # C[2x4] = A[2x3] · B[3x4]: 8 outputs × 3 terms × 2 = 48 FLOPs; 6+12+8 = 26 elements
    shape = ops.parse_shape("dot", "2x3x4")
    assert ops.flops("dot", shape) == 48
    assert ops.bytes_moved("dot", shape, "float64") == 26 * 8


@pytest.mark.parametrize(
    "op, per_element, arrays",
    [
        ("add", 1, 3),
        ("mul", 1, 3),
        ("scalar", 1, 2),
        ("sigmoid", 4, 2),
        ("tanh", 5, 2),
    ],
)
def test_elementwise_counts(op, per_element, arrays):
    shape = ops.parse_shape(op, "100x30")
    assert ops.flops(op, shape) == 3000 * per_element
    assert ops.bytes_moved(op, shape, "float16") == 3000 * arrays * 2


def test_add_96mb_float32_is_square():
    # 96e6 / 12 = 8e6 -> isqrt = 2828
    assert ops.shape_for_size("add", 96_000_000, "float32") == (2828, 2828)
    assert ops.shape_for_size("sigmoid", 2_000_000, "float64") == (353, 353)


@pytest.mark.parametrize(
    "op, text, fragment",
    [
        ("dot", "10x10", "takes 3 dimensions"),
        ("add", "1x2x3", "takes 2 dimensions"),
        ("add", "axb", "is not a shape"),
        ("add", "0x4", "positive"),
    ],
)
def test_bad_shapes(op, text, fragment):
    with pytest.raises(InputError) as caught:
        ops.parse_shape(op, text)
    assert fragment in str(caught.value)


def test_unknown_op_and_dtype():
    with pytest.raises(InputError, match="unknown op 'conv'.*add, mul, dot"):
        ops.get_op("conv")
    with pytest.raises(InputError, match="unknown dtype 'int8'"):
        ops.itemsize("int8")


def test_size_too_small():
    with pytest.raises(InputError, match="too small"):
        ops.shape_for_size("add", 8, "float32")


def test_every_op_is_declared_once_with_its_cuda_kernel_and_numpy_matches_its_reference():
    """An op is one entry in ops.OPS plus its kernel in gpuprof_ops.cu: the NumPy engine runs the entry's
    code and agrees with the entry's float64 reference."""
    import numpy as np

    from gpuprof.workloads import numpy_engine
    from gpuprof.workloads.reference import SCALAR, make_inputs, reference

    source = (Path(ops.__file__).resolve().parent.parent / "kernels" / "gpuprof_ops.cu").read_text()
    for op in ops.OPS.values():
        assert f" gpuprof_{op.name}_##SUFFIX(" in source, f"no CUDA kernel for {op.name}"
        assert op.kernel in ("matmul", "binary", "scalar", "unary")
        shape = ops.parse_shape(op.name, "6x5x4" if op.name == "dot" else "6x5")
        inputs = make_inputs(op.name, shape, "float64", np.random.default_rng(0))
        out = np.empty((6, 4) if op.name == "dot" else shape)
        result = numpy_engine.prepare(op.name, inputs, SCALAR, out)()
        assert result is out
        np.testing.assert_allclose(out, reference(op.name, inputs), rtol=1e-12)
    assert ops.OPS["sigmoid"].reference(np, np.array([0.0]), None, SCALAR)[0] == 0.5
