"""convtune.Quant: the values behind a workload's epilogue (ct_quant)."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import numpy as np

from . import _capi
from ._errors import check, invalid_arg


@dataclass
class Quant:
    """Zero points, bias, scales and clamps of a quantized convolution (ct_quant).

    scale: 8-bit output only, one value (per tensor) or K (per channel), each
    s_data * s_weight[k] / s_out. The residual's fields (residual_scale =
    s_residual / s_out, residual_zero_point) and, with ONNX rounding, the
    conv's own QuantizeLinear (mid_*) and the Add's operand order
    (residual_first) as convtune.h documents them. With a fused pointwise
    convolution (Workload.pre_c), pre holds its own values (a Quant: its data
    zero point, weight zero points, bias, scale per tensor or per channel of
    its C outputs, output zero point and clamp; no residual) and pre_weights
    its weights, C x pre_c int8 (Workload.pre_weight_shape). Fields a
    workload does not use are ignored.
    """

    data_zero_point: int = 0
    weight_zero_points: Optional[Sequence[int]] = None
    bias: Optional[Sequence[int]] = None
    scale: Optional[Sequence[float]] = None
    out_zero_point: int = 0
    clamp_min: int = -128
    clamp_max: int = 127
    residual_scale: float = 1.0
    residual_zero_point: int = 0
    mid_zero_point: int = 0
    mid_clamp_min: int = -128
    mid_clamp_max: int = 127
    mid_scale: float = 1.0
    residual_first: bool = False
    pre: Optional["Quant"] = None
    pre_weights: Any = None
    _keep: list = field(default_factory=list, repr=False, compare=False)

    def struct(self, k: int, pre_shape: Optional[tuple[int, int]] = None) -> _capi.QuantStruct:
        """The ct_quant, its arrays checked against K output channels; with
        pre_shape (C, pre_c) of a fused pointwise convolution, pre's values
        against its C channels and pre_weights against C x pre_c. Its pointers
        borrow arrays this Quant (and pre) keeps until its next struct() call."""
        self._keep.clear()
        q = _capi.QuantStruct()
        q.data_zero_point = int(self.data_zero_point)
        q.weight_zero_points = self._array(
            self.weight_zero_points, np.int32, ctypes.c_int32, k, "weight_zero_points"
        )
        q.bias = self._array(self.bias, np.int32, ctypes.c_int32, k, "bias")
        q.scale = self._array(self.scale, np.float32, ctypes.c_float, k, "scale", allow_one=True)
        q.out_zero_point = int(self.out_zero_point)
        q.clamp_min = int(self.clamp_min)
        q.clamp_max = int(self.clamp_max)
        q.residual_scale = float(self.residual_scale)
        q.residual_zero_point = int(self.residual_zero_point)
        q.mid_zero_point = int(self.mid_zero_point)
        q.mid_clamp_min = int(self.mid_clamp_min)
        q.mid_clamp_max = int(self.mid_clamp_max)
        q.mid_scale = float(self.mid_scale)
        q.residual_first = 1 if self.residual_first else 0
        if pre_shape is not None:
            c, pre_c = pre_shape
            if self.pre is None or self.pre_weights is None:
                raise invalid_arg(f"Quant.{'pre' if self.pre is None else 'pre_weights'}: the "
                                  f"workload fuses a pointwise convolution of {pre_c} channels "
                                  f"into {c}; give its values (pre=Quant(...)) and its {c} x "
                                  f"{pre_c} int8 weights (pre_weights)")
            if self.pre is self:
                raise invalid_arg("Quant.pre: the pointwise convolution's values are a Quant of their own")
            ps = self.pre.struct(c)
            self._keep.append(ps)
            q.pre = ctypes.pointer(ps)
            q.pre_weights = self._array(self.pre_weights, np.int8, ctypes.c_int8, c * pre_c,
                                        "pre_weights", what=f"{c} x {pre_c} ({c} channels of {pre_c})")
        return q

    def _array(self, values: Any, dtype: Any, ctype: Any, k: int, name: str, allow_one: bool = False,
               what: Optional[str] = None) -> Any:
        if values is None:
            return None
        a = np.asarray(values)
        if dtype is np.int8 and a.dtype.kind in "iu" and a.size and (a.min() < -128 or a.max() > 127):
            raise invalid_arg(f"Quant.{name}: values from {a.min()} to {a.max()}; int8 takes -128 to 127")
        a = np.ascontiguousarray(a, dtype=dtype).reshape(-1)
        if a.size != k and not (allow_one and a.size == 1):
            want = what or f"{k} (one per output channel){' or 1' if allow_one else ''}"
            raise invalid_arg(f"Quant.{name}: {a.size} values, the workload needs {want}")
        self._keep.append(a)
        return a.ctypes.data_as(ctypes.POINTER(ctype))


def quantize_multiplier(scale: float) -> tuple[int, int]:
    """TFLite's QuantizeMultiplier (ct_quantize_multiplier): (multiplier, shift) with
    scale = multiplier * 2^(shift - 31), multiplier in [2^30, 2^31)."""
    m = ctypes.c_int32()
    sh = ctypes.c_int()
    st = _capi.lib.ct_quantize_multiplier(float(scale), ctypes.byref(m), ctypes.byref(sh))
    check(st, f"quantize_multiplier: {scale!r} is not a finite positive scale below 2^30")
    return m.value, sh.value
