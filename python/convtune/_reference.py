"""The library's CPU reference (ct_reference_conv, ct_reference_qconv) on NumPy arrays."""

from __future__ import annotations

import ctypes
from typing import Any, Optional

import numpy as np

from . import _capi
from ._errors import check, invalid_arg
from ._quant import Quant
from ._workload import NP_DTYPES, Workload


def _host(a: Any, shape: tuple[int, ...], dtype: Any, role: str, w: Workload) -> np.ndarray:
    """a as a C-contiguous NumPy array of shape and dtype, or a clear refusal."""
    if not isinstance(a, np.ndarray):
        if hasattr(a, "__cuda_array_interface__"):
            raise invalid_arg(f"{role}: a device array; the reference runs on host (NumPy) arrays")
        a = np.asarray(a)
    if a.dtype != np.dtype(dtype):
        raise invalid_arg(f"{role}: dtype {a.dtype}, {w.key} needs {np.dtype(dtype).name}")
    if tuple(a.shape) != tuple(shape):
        raise invalid_arg(f"{role}: shape {tuple(a.shape)}, {w.key} needs {tuple(shape)} ({w.layout})")
    return np.ascontiguousarray(a)


def reference_conv(w: Workload, data: Any, weights: Any) -> np.ndarray:
    """conv(data, weights) as int32, by the library's CPU reference, for a workload
    without epilogue values (int8 data and output int32). data and weights in
    w's layouts (w.data_shape, w.weight_shape); returns w.output_shape."""
    if w.data_type != "int8" or w.out_type != "int32" or w.pre_c:
        raise invalid_arg(f"reference_conv: {w.key} has an epilogue, uint8 data or a fused pointwise "
                          "convolution: use reference_qconv")
    d = _host(data, w.data_shape, np.int8, "data", w)
    k = _host(weights, w.weight_shape, np.int8, "weights", w)
    out = np.empty(w.output_shape, dtype=np.int32)
    st = _capi.lib.ct_reference_conv(w._ptr(), d.ctypes.data, k.ctypes.data, out.ctypes.data)
    check(st, f"ct_reference_conv refused {w.key}")
    return out


def reference_qconv(
    w: Workload, data: Any, weights: Any, quant: Optional[Quant] = None, residual: Any = None
) -> np.ndarray:
    """The quantized convolution of w (convtune.h's ct_epilogue formula) by the
    library's CPU reference: data (w.input_type, w.data_shape), weights
    (int8), residual (w's output shape and type, when w has one) in w's
    layouts; quant as ct_make_params takes it (None only when w has no
    epilogue values; with a fused pointwise convolution, its values in
    quant.pre and its weights in quant.pre_weights)."""
    d = _host(data, w.data_shape, NP_DTYPES[w.input_type], "data", w)
    k = _host(weights, w.weight_shape, np.int8, "weights", w)
    r = None
    if w.residual:
        if residual is None:
            raise invalid_arg(f"residual: {w.key} adds a residual; none was given")
        r = _host(residual, w.output_shape, NP_DTYPES[w.out_type], "residual", w)
    elif residual is not None:
        raise invalid_arg(f"residual: {w.key} has no residual; one was given")
    q = quant.struct(w.k, w.pre_weight_shape) if quant is not None else None
    out = np.empty(w.output_shape, dtype=NP_DTYPES[w.out_type])
    err = ctypes.create_string_buffer(512)
    st = _capi.lib.ct_reference_qconv(
        w._ptr(),
        ctypes.byref(q) if q is not None else None,
        d.ctypes.data,
        k.ctypes.data,
        r.ctypes.data if r is not None else None,
        out.ctypes.data,
        err,
        len(err),
    )
    check(st, err.value.decode(errors="replace") or f"ct_reference_qconv refused {w.key}")
    return out
