"""convtune.Workload: one convolution, as libconvtune describes it (ct_workload)."""

from __future__ import annotations

import ctypes
import json
from collections.abc import Mapping
from typing import Any, Optional

import numpy as np

from . import _capi
from ._errors import INTERNAL, PARSE, ConvtuneError, check

_DTYPES = {_capi.DTYPE_INT8: "int8", _capi.DTYPE_UINT8: "uint8", _capi.DTYPE_INT32: "int32"}
# a dtype's name (Workload.data_type, .out_type) as NumPy's
NP_DTYPES = {"int8": np.int8, "uint8": np.uint8, "int32": np.int32}


class Workload:
    """One convolution: op, shapes, data types, layout and epilogue; no schedule.

    Built from a canonical key, a JSON object (a dict, or its text) or keyword
    arguments with the JSON object's fields, exactly as `convtune workload`
    takes them: op, c, k, h, w (and d for conv3d), kernel; optional n, stride,
    pad, dilation, groups, layout, data_type, weight_type, out_type, the
    epilogue's fields (data_zero_point, weight_zero_point, bias, residual,
    scale, depth_to_space, d2s_mode, rounding) and pre, a pointwise
    convolution fused before this one (channels-last only): a dict with c
    (its input channels, what the data tensor holds), data_type and its own
    epilogue's data_zero_point, weight_zero_point, bias, scale, rounding. The
    library parses and validates it (ct_workload_parse); an unknown field, a
    key out of canonical form or an invalid workload raises ConvtuneError with
    its message.

    >>> w = Workload(op="conv2d", c=64, k=64, h=56, w=56, kernel=3, pad=1, layout="nhwc")
    >>> w.key
    'conv2d-nhwc-i8.i8.i32-n1-c64-k64-56x56-r3x3-s1x1-p1x1.1x1-d1x1'
    >>> Workload(op="conv2d", c=144, k=144, groups=144, h=56, w=56, kernel=3, pad=1,
    ...          layout="nhwc", out_type="int8", pre={"c": 24, "bias": True}).key
    'conv2d-nhwc-i8.i8.i8-n1-c144-k144-56x56-r3x3-s1x1-p1x1.1x1-d1x1-g144-pre24.i8.bias'
    """

    __slots__ = ("_s", "_key", "_plan")

    def __init__(self, spec: str | Mapping[str, Any] | None = None, /, **fields: Any) -> None:
        if spec is not None and fields:
            raise TypeError("Workload: a key or JSON object, or keyword arguments, not both")
        if spec is None:
            if not fields:
                raise TypeError("Workload: give a key, a JSON object or the fields as keywords")
            spec = fields
        if isinstance(spec, Mapping):
            text = json.dumps(dict(spec))
        elif isinstance(spec, str):
            text = spec
        else:
            raise TypeError(f"Workload: a key, a JSON object or a dict, not {type(spec).__name__}")
        s = _capi.WorkloadStruct()
        msg = ctypes.create_string_buffer(1024)
        st = _capi.lib.ct_workload_parse(text.encode(), ctypes.byref(s), msg, len(msg))
        check(st, msg.value.decode(errors="replace") or "ct_workload_parse failed")
        key = ctypes.create_string_buffer(_capi.KEY_MAX)
        check(_capi.lib.ct_workload_key(ctypes.byref(s), key, len(key)), key.value.decode())
        self._s = s
        self._key = key.value.decode()
        self._plan = None  # Context's call plan, made on its first call

    @classmethod
    def from_key(cls, key: str) -> "Workload":
        """The workload of a canonical key."""
        if key.lstrip().startswith("{"):
            raise ConvtuneError(PARSE, f"from_key: {key!r} is JSON, not a key")
        return cls(key)

    @classmethod
    def from_json(cls, obj: str | Mapping[str, Any]) -> "Workload":
        """The workload of a JSON object (a dict, or its text)."""
        if isinstance(obj, str) and not obj.lstrip().startswith("{"):
            raise ConvtuneError(PARSE, f"from_json: {obj!r} is not a JSON object")
        return cls(obj)

    # ---- what the library says about it -------------------------------
    @property
    def key(self) -> str:
        """The canonical key: the name its tuning records carry."""
        return self._key

    def to_json(self) -> dict[str, Any]:
        """The canonical JSON object (ct_workload_json), as a dict."""
        buf = ctypes.create_string_buffer(4096)
        check(_capi.lib.ct_workload_json(ctypes.byref(self._s), buf, len(buf)), buf.value.decode())
        return json.loads(buf.value.decode())

    @property
    def output_shape(self) -> tuple[int, ...]:
        """The output tensor's shape in the workload's layout (after depth_to_space)."""
        dims = (ctypes.c_int64 * 6)()
        n = _capi.lib.ct_workload_out_dims(ctypes.byref(self._s), dims)
        if n <= 0:  # a Workload is valid by construction
            raise ConvtuneError(INTERNAL, "ct_workload_out_dims refused a parsed workload")
        return tuple(int(d) for d in dims[:n])

    @property
    def ops(self) -> int:
        """2 (multiply and add) x N x K x output pixels x C / groups x kernel volume,
        plus the fused pointwise convolution's 2 x N x C x input pixels x pre_c."""
        return int(_capi.lib.ct_workload_ops(ctypes.byref(self._s)))

    # ---- the fields, read from the struct ----------------------------------
    @property
    def op(self) -> str:
        return "conv3d" if self._s.op == _capi.OP_CONV3D else "conv2d"

    @property
    def nd(self) -> int:
        """Spatial dimensions: 2 or 3."""
        return 3 if self._s.op == _capi.OP_CONV3D else 2

    @property
    def layout(self) -> str:
        """"nchw", "nchw4c" or "nhwc" (conv3d: "ncdhw", "ncdhw4c", "ndhwc")."""
        names = {
            _capi.LAYOUT_NCHW: ("nchw", "ncdhw"),
            _capi.LAYOUT_NCHW4C: ("nchw4c", "ncdhw4c"),
            _capi.LAYOUT_NHWC: ("nhwc", "ndhwc"),
        }
        return names[self._s.layout][self.nd - 2]

    @property
    def data_type(self) -> str:
        return _DTYPES[self._s.data_type]

    @property
    def out_type(self) -> str:
        return _DTYPES[self._s.out_type]

    @property
    def n(self) -> int:
        return self._s.n

    @property
    def c(self) -> int:
        return self._s.c

    @property
    def k(self) -> int:
        return self._s.k

    @property
    def groups(self) -> int:
        return max(self._s.groups, 1)

    @property
    def input_size(self) -> tuple[int, ...]:
        """Spatial input sizes, outermost first: (H, W) or (D, H, W)."""
        return tuple(self._s.in_[: self.nd])

    @property
    def kernel(self) -> tuple[int, ...]:
        return tuple(self._s.kernel[: self.nd])

    @property
    def residual(self) -> bool:
        return bool(self._s.epi.residual)

    # ---- a fused pointwise convolution (pre) --------------------------------
    @property
    def pre_c(self) -> int:
        """Input channels of the pointwise convolution fused before this one
        (what the data tensor holds); 0: none."""
        return self._s.pre_c

    @property
    def pre_data_type(self) -> Optional[str]:
        """The data tensor's type with a fused pointwise convolution ("int8" or
        "uint8"); None without one."""
        return _DTYPES[self._s.pre_data_type] if self._s.pre_c > 0 else None

    @property
    def pre_epilogue(self) -> Optional[dict[str, Any]]:
        """The fused pointwise convolution's epilogue as the JSON object's "pre"
        writes it (only what is not the default: data_zero_point,
        weight_zero_point, bias, scale, rounding); None without one."""
        if self._s.pre_c <= 0:
            return None
        pre = dict(self.to_json()["pre"])
        pre.pop("c", None)
        pre.pop("data_type", None)
        return pre

    @property
    def pre_weight_shape(self) -> Optional[tuple[int, int]]:
        """The fused pointwise convolution's weights, (C, pre_c) int8 (OHWI of a
        1x1), as Quant.pre_weights takes them; None without one."""
        return (self.c, self._s.pre_c) if self._s.pre_c > 0 else None

    @property
    def input_type(self) -> str:
        """The data tensor's type: pre_data_type with a fused pointwise
        convolution, else data_type."""
        return self.pre_data_type or self.data_type

    # ---- tensor shapes in the workload's layout ----------------------------
    @property
    def data_shape(self) -> tuple[int, ...]:
        """The data tensor's shape: NCHW, NCHW4c (N, ceil(C/4), H, W, 4) or NHWC; 3D adds D.
        With a fused pointwise convolution, its pre_c channels instead of C."""
        n, c, sp = self.n, self.pre_c or self.c, self.input_size
        if self._s.layout == _capi.LAYOUT_NHWC:
            return (n, *sp, c)
        if self._s.layout == _capi.LAYOUT_NCHW4C:
            return (n, (c + 3) // 4, *sp, 4)
        return (n, c, *sp)

    @property
    def plain_weight_shape(self) -> tuple[int, ...]:
        """The plain weights: OIHW, or OHWI for nhwc (3D: OIDHW, ODHWI); what
        make_params and pack_weights read."""
        k, cpg, ker = self.k, self.c // self.groups, self.kernel
        if self._s.layout == _capi.LAYOUT_NHWC:
            return (k, *ker, cpg)
        return (k, cpg, *ker)

    @property
    def packed_weight_shape(self) -> Optional[tuple[int, ...]]:
        """The packed weights (OIHW4o4i: ceil(K/4), ceil(C/G/4), R, S, 4, 4; 3D adds T)
        that the nchw and nchw4c layouts' convolutions take; None for nhwc."""
        if self._s.layout == _capi.LAYOUT_NHWC:
            return None
        cpg = self.c // self.groups
        return ((self.k + 3) // 4, (cpg + 3) // 4, *self.kernel, 4, 4)

    @property
    def weight_shape(self) -> tuple[int, ...]:
        """The weights as the CPU reference takes them: plain for nchw and nhwc,
        packed for nchw4c."""
        if self._s.layout == _capi.LAYOUT_NCHW4C:
            return self.packed_weight_shape  # type: ignore[return-value]
        return self.plain_weight_shape

    @property
    def conv_weight_shape(self) -> tuple[int, ...]:
        """The weights as the GPU calls take them: packed for nchw and nchw4c
        (Context.pack_weights), plain OHWI for nhwc."""
        packed = self.packed_weight_shape
        return packed if packed is not None else self.plain_weight_shape

    @property
    def quantized(self) -> bool:
        """Whether the GPU call is qconv (an epilogue, uint8 data, 8-bit output or a
        fused pointwise convolution, which requantizes)."""
        e = self._s.epi
        return bool(e.data_zero_point or e.weight_zero_point or e.bias or e.residual or
                    e.d2s_block or self._s.data_type != _capi.DTYPE_INT8 or
                    self._s.out_type != _capi.DTYPE_INT32 or self._s.pre_c > 0)

    @property
    def struct(self) -> _capi.WorkloadStruct:
        """A copy of the ct_workload, for calls into the C API."""
        s = _capi.WorkloadStruct()
        ctypes.pointer(s)[0] = self._s
        return s

    def _ptr(self) -> Any:
        return ctypes.byref(self._s)

    # ---- value semantics ----------------------------------------------------
    def __eq__(self, other: object) -> bool:
        return isinstance(other, Workload) and other._key == self._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        return f"Workload({self._key!r})"
