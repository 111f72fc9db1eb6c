"""libconvtune's public C API (include/convtune/convtune.h) through ctypes.

ctypes, not cffi: the API is plain C (structs of ints, floats and fixed
char arrays, functions taking pointers), which ctypes describes from the
standard library alone, so the package needs no compiler at install time
and no second build step beside CMake's. cffi's ABI mode would describe the
same from the header's text, with no gain here; its API mode would compile
an extension module. The layouts below mirror convtune.h field for field;
python/tests/test_capi.py holds them to the header (every field's offset
and each struct's size, from a C program compiled against it) and to the
library (a fused workload's key and JSON through the struct).

The library is found, in order: the file named by CONVTUNE_LIBRARY (a
libconvtune installed system-wide, or a build folder's), the copy inside
this package (`pip install .`), then the system's (ctypes.util).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from pathlib import Path

c_int = ctypes.c_int
c_int32 = ctypes.c_int32
c_int64 = ctypes.c_int64
c_size_t = ctypes.c_size_t
c_char_p = ctypes.c_char_p
c_void_p = ctypes.c_void_p

MAX_SPATIAL = 3
KEY_MAX = 256  # ct_workload_key's buffer


class Epilogue(ctypes.Structure):
    """ct_epilogue."""

    _fields_ = [
        ("data_zero_point", c_int),
        ("weight_zero_point", c_int),
        ("bias", c_int),
        ("scale", c_int),  # ct_scale_mode
        ("residual", c_int),
        ("d2s_block", c_int),
        ("d2s_mode", c_int),  # ct_d2s_mode
        ("rounding", c_int),  # ct_rounding
    ]


class WorkloadStruct(ctypes.Structure):
    """ct_workload."""

    _fields_ = [
        ("op", c_int),  # ct_op: 2 conv2d, 3 conv3d
        ("layout", c_int),  # ct_layout: 0 nchw, 1 nchw4c, 2 nhwc
        ("data_type", c_int),  # ct_dtype: 0 int8, 1 uint8, 2 int32
        ("weight_type", c_int),
        ("out_type", c_int),
        ("n", c_int),
        ("c", c_int),
        ("k", c_int),
        ("groups", c_int),
        ("in_", c_int * MAX_SPATIAL),
        ("kernel", c_int * MAX_SPATIAL),
        ("stride", c_int * MAX_SPATIAL),
        ("pad_before", c_int * MAX_SPATIAL),
        ("pad_after", c_int * MAX_SPATIAL),
        ("dilation", c_int * MAX_SPATIAL),
        ("epi", Epilogue),
        # a pointwise convolution fused before this one (pre_c 0: none)
        ("pre_c", c_int),
        ("pre_data_type", c_int),  # ct_dtype: int8 or uint8
        ("pre_epi", Epilogue),
    ]


class QuantStruct(ctypes.Structure):
    """ct_quant: host pointers that must outlive the call that reads them."""


# after the class: pre points at a ct_quant of its own
QuantStruct._fields_ = [
    ("data_zero_point", c_int32),
    ("weight_zero_points", ctypes.POINTER(c_int32)),
    ("bias", ctypes.POINTER(c_int32)),
    ("scale", ctypes.POINTER(ctypes.c_float)),
    ("out_zero_point", c_int32),
    ("clamp_min", c_int32),
    ("clamp_max", c_int32),
    ("residual_scale", ctypes.c_float),
    ("residual_zero_point", c_int32),
    ("mid_zero_point", c_int32),
    ("mid_clamp_min", c_int32),
    ("mid_clamp_max", c_int32),
    ("mid_scale", ctypes.c_float),
    ("residual_first", c_int),
    # the fused pointwise convolution's values and its weights, c x pre_c
    ("pre", ctypes.POINTER(QuantStruct)),
    ("pre_weights", ctypes.POINTER(ctypes.c_int8)),
]


class ExplanationStruct(ctypes.Structure):
    """ct_explanation."""

    _fields_ = [
        ("source", c_int),  # ct_source
        ("template_name", ctypes.c_char * 48),
        ("config", ctypes.c_char * 1024),
        ("tuned_key", ctypes.c_char * 256),
        ("device", ctypes.c_char * 256),
        ("measured_us", ctypes.c_double),
        ("reason", ctypes.c_char * 256),
    ]


# ct_op, ct_layout and ct_dtype values, and the status names come from the library
OP_CONV2D, OP_CONV3D = 2, 3
LAYOUT_NCHW, LAYOUT_NCHW4C, LAYOUT_NHWC = 0, 1, 2
DTYPE_INT8, DTYPE_UINT8, DTYPE_INT32 = 0, 1, 2


def _candidates() -> list[str]:
    env = os.environ.get("CONVTUNE_LIBRARY")
    if env:
        return [env]  # named explicitly: that one or an error, never another
    out = []
    here = Path(__file__).resolve().parent
    for name in ("libconvtune.so", "libconvtune.so.0"):
        if (here / name).exists():
            out.append(str(here / name))
    found = ctypes.util.find_library("convtune")
    if found:
        out.append(found)
    return out


def _load() -> ctypes.CDLL:
    tried = []
    for path in _candidates():
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"{path}: {e}")
    where = "; ".join(tried) if tried else "none in the package, CONVTUNE_LIBRARY unset, none on the system"
    raise ImportError(
        "convtune: libconvtune was not found or did not load (" + where + "). Install the "
        "package with `pip install .` from the repository, or set CONVTUNE_LIBRARY to a "
        "libconvtune.so"
    )


lib = _load()


def _proto(name: str, restype, argtypes) -> None:
    fn = getattr(lib, name)
    fn.restype = restype
    fn.argtypes = argtypes


_W = ctypes.POINTER(WorkloadStruct)
_proto("ct_strerror", c_char_p, [c_int])
_proto("ct_status_name", c_char_p, [c_int])
_proto("ct_version", c_char_p, [])
_proto("ct_workload_init", None, [_W, c_int])
_proto("ct_workload_key", c_int, [_W, ctypes.c_char_p, c_size_t])
_proto("ct_workload_parse", c_int, [c_char_p, _W, ctypes.c_char_p, c_size_t])
_proto("ct_workload_json", c_int, [_W, ctypes.c_char_p, c_size_t])
_proto("ct_workload_out_dims", c_int, [_W, ctypes.POINTER(c_int64)])
_proto("ct_workload_ops", c_int64, [_W])
_proto("ct_params_bytes", c_size_t, [_W])
_proto("ct_quantize_multiplier", c_int, [ctypes.c_double, ctypes.POINTER(c_int32), ctypes.POINTER(c_int)])
_proto("ct_reference_conv", c_int, [_W, c_void_p, c_void_p, c_void_p])
_proto(
    "ct_reference_qconv",
    c_int,
    [_W, ctypes.POINTER(QuantStruct), c_void_p, c_void_p, c_void_p, c_void_p, ctypes.c_char_p, c_size_t],
)


_CTX = c_void_p
_proto("ct_open", c_int, [c_char_p, c_int, ctypes.POINTER(_CTX)])
_proto("ct_open_arch", c_int, [c_char_p, c_char_p, ctypes.POINTER(_CTX)])
_proto("ct_close", None, [_CTX])
_proto("ct_errmsg", c_char_p, [_CTX])
_proto("ct_explain", c_int, [_CTX, _W, ctypes.POINTER(ExplanationStruct)])
_proto("ct_make_params", c_int, [_CTX, _W, ctypes.POINTER(QuantStruct), c_void_p, c_void_p])
_proto("ct_packed_weights_bytes", c_size_t, [_W])
_proto("ct_pack_weights", c_int, [_CTX, _W, c_void_p, c_void_p, c_void_p])
for _name in ("ct_conv2d", "ct_conv3d"):
    _proto(_name, c_int, [_CTX, _W, c_void_p, c_void_p, c_void_p, c_void_p])
for _name in ("ct_qconv2d", "ct_qconv3d"):
    _proto(_name, c_int, [_CTX, _W, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p])


def status_name(status: int) -> str:
    """The status's enum name, e.g. "CT_ERR_INVALID_WORKLOAD"."""
    return lib.ct_status_name(status).decode()


def version() -> str:
    """The library's version, "MAJOR.MINOR.PATCH"."""
    return lib.ct_version().decode()
