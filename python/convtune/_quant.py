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
    (residual_first) as convtune.h documents them. Fields a workload does not
    use are ignored.
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
    _keep: list = field(default_factory=list, repr=False, compare=False)

    def struct(self, k: int) -> _capi.QuantStruct:
        """The ct_quant, its arrays checked against K output channels. Its
        pointers borrow arrays this Quant keeps until its next struct() call."""
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
        return q

    def _array(self, values: Any, dtype: Any, ctype: Any, k: int, name: str, allow_one: bool = False) -> Any:
        if values is None:
            return None
        a = np.ascontiguousarray(np.asarray(values), dtype=dtype).reshape(-1)
        if a.size != k and not (allow_one and a.size == 1):
            want = f"{k} (one per output channel){' or 1' if allow_one else ''}"
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
