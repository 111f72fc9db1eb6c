"""convtune.Context: a libconvtune context (ct_context) and the GPU calls.

convtune.open(db, device) binds a database and a GPU; convtune.open_arch(db,
arch) a database and an architecture without a GPU (explain, make_params and
every check of the calls below, no launch). The calls take CUDA tensors
that offer __cuda_array_interface__ or DLPack (torch, CuPy), check each
against the workload before anything is launched (shape, dtype, contiguity,
16-byte alignment, device), allocate the output from the data's library
when none is given, and run on the caller's current stream (torch's or
CuPy's) unless stream= names one.
"""

from __future__ import annotations

import ctypes
import json
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from . import _capi, _tensor
from ._errors import ConvtuneError, invalid_arg
from ._quant import Quant
from ._workload import NP_DTYPES, Workload

_SOURCES = {0: "exact", 1: "same_cc", 2: "nearest", 3: "default", 4: "chain"}
_INT8 = np.dtype(np.int8)


class _Plan:
    """What a call of a workload checks and calls, read from it once (the
    Workload keeps it): its properties go through ctypes each time."""

    __slots__ = ("nd", "quantized", "residual", "data_shape", "data_dtype", "weight_shape",
                 "out_shape", "out_dtype", "params_bytes", "fn")

    def __init__(self, w: Workload) -> None:
        self.nd = w.nd
        self.quantized = w.quantized
        self.residual = w.residual
        self.data_shape = w.data_shape
        self.data_dtype = np.dtype(NP_DTYPES[w.input_type])
        self.weight_shape = w.conv_weight_shape
        self.out_shape = w.output_shape
        self.out_dtype = np.dtype(NP_DTYPES[w.out_type])
        self.params_bytes = int(_capi.lib.ct_params_bytes(w._ptr()))
        lib = _capi.lib
        self.fn = ((lib.ct_conv2d, lib.ct_qconv2d) if self.nd == 2 else
                   (lib.ct_conv3d, lib.ct_qconv3d))[self.quantized]


def _plan(w: Workload) -> _Plan:
    pl = w._plan
    if pl is None:
        pl = w._plan = _Plan(w)
    return pl


@dataclass
class Explanation:
    """Which config a workload gets and why (ct_explanation)."""

    source: str  # "exact", "same_cc", "nearest", "default" or "chain"
    template: str
    config: dict
    tuned_key: str
    device: str
    measured_us: float
    reason: str


class Context:
    """A libconvtune context. Use convtune.open or convtune.open_arch; close it,
    or use it as a context manager."""

    def __init__(self, handle: ctypes.c_void_p, device: Optional[int]) -> None:
        self._h = handle
        self.device = device  # None for an architecture's context

    # ---- lifetime --------------------------------------------------------------
    def close(self) -> None:
        """Release the context (work enqueued through it must have finished)."""
        if self._h:
            _capi.lib.ct_close(self._h)
            self._h = None

    def __enter__(self) -> "Context":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def _handle(self) -> ctypes.c_void_p:
        if not self._h:
            raise invalid_arg("the context is closed")
        return self._h

    def _check(self, status: int, what: str) -> None:
        if status != 0:
            msg = _capi.lib.ct_errmsg(self._h).decode(errors="replace") if self._h else ""
            raise ConvtuneError(status, msg or f"{what} failed")

    # ---- what the library says ----------------------------------------------------
    def explain(self, w: Workload) -> Explanation:
        """Which config w gets on this context's device, and why."""
        ex = _capi.ExplanationStruct()
        self._check(_capi.lib.ct_explain(self._handle(), w._ptr(), ctypes.byref(ex)), "ct_explain")
        cfg = ex.config.decode()
        return Explanation(_SOURCES.get(ex.source, str(ex.source)), ex.template_name.decode(),
                           json.loads(cfg) if cfg else {}, ex.tuned_key.decode(), ex.device.decode(),
                           float(ex.measured_us), ex.reason.decode())

    def make_params(self, w: Workload, quant: Quant, weights: Any) -> np.ndarray:
        """w's params block (ct_make_params) from quant and the plain weights (host,
        w.plain_weight_shape, int8), as bytes in a NumPy array: copy it to the
        device once and pass it to every qconv of w."""
        wt = np.asarray(weights)
        if wt.dtype != np.int8 or tuple(wt.shape) != w.plain_weight_shape:
            raise invalid_arg(f"weights: {wt.dtype} {tuple(wt.shape)}, {w.key} needs int8 "
                              f"{w.plain_weight_shape} (host, plain)")
        wt = np.ascontiguousarray(wt)
        q = quant.struct(w.k, w.pre_weight_shape)
        out = np.zeros(_capi.lib.ct_params_bytes(w._ptr()), dtype=np.uint8)
        st = _capi.lib.ct_make_params(self._handle(), w._ptr(), ctypes.byref(q), wt.ctypes.data,
                                      out.ctypes.data)
        self._check(st, "ct_make_params")
        return out

    # ---- the GPU calls -------------------------------------------------------------
    def _tensor(self, obj: Any, role: str, w: Workload, shape: tuple, dtype: Any) -> _tensor.Tensor:
        t = _tensor.describe(obj, role)
        _tensor.check(t, role, w.key, shape, dtype, w.layout, self.device)
        return t

    def _stream(self, stream: Any, like: _tensor.Tensor) -> int:
        return _tensor.current_stream(like) if stream is None else _tensor.stream_handle(stream)

    def pack_weights(self, w: Workload, weights: Any, out: Any = None, stream: Any = None) -> Any:
        """The packed weights (w.packed_weight_shape) of plain ones (device,
        w.plain_weight_shape, int8), for the nchw and nchw4c layouts."""
        if w.packed_weight_shape is None:
            raise invalid_arg(f"pack_weights: {w.key} is channels-last; its weights are used as they are")
        src = self._tensor(weights, "weights", w, w.plain_weight_shape, np.int8)
        if out is None:
            out = _tensor.empty_like_lib(src, w.packed_weight_shape, np.int8, "out")
        dst = self._tensor(out, "out", w, w.packed_weight_shape, np.int8)
        st = _capi.lib.ct_pack_weights(self._handle(), w._ptr(), src.ptr, dst.ptr,
                                       self._stream(stream, src))
        self._check(st, "ct_pack_weights")
        return out

    def _fast(self, w: Workload, pl: _Plan, data: Any, weights: Any, params: Any, residual: Any,
              out: Any, stream: Any) -> Any:
        """The call on torch tensors that pass every check, read from the tensors
        directly; None when any does not (the full path then says why)."""
        dev = self.device
        d = _tensor.fast_torch(data, pl.data_shape, pl.data_dtype, dev)
        if not d:
            return None
        k = _tensor.fast_torch(weights, pl.weight_shape, _INT8, dev)
        p = r = None
        if not k:
            return None
        if pl.quantized:
            if params is not None:
                p = _tensor.fast_torch_bytes(params, pl.params_bytes, dev)
                if not p:
                    return None
            if (residual is not None) != pl.residual:
                return None
            if residual is not None:
                r = _tensor.fast_torch(residual, pl.out_shape, pl.out_dtype, dev)
                if not r:
                    return None
        if out is None:
            out = _tensor.torch_empty(pl.out_shape, pl.out_dtype, data)
        o = _tensor.fast_torch(out, pl.out_shape, pl.out_dtype, dev)
        if not o:
            return None
        s = _tensor.torch_stream(data.device.index) if stream is None else _tensor.stream_handle(stream)
        self._launch(w, pl, d, k, p, r, o, s)
        return out

    def _launch(self, w: Workload, pl: _Plan, d: int, k: int, p: Optional[int], r: Optional[int],
                o: int, s: int) -> None:
        """The C call of a checked call, on device addresses."""
        h = self._handle()
        if pl.quantized:
            st = pl.fn(h, w._ptr(), d, k, p, r, o, s)
        else:
            st = pl.fn(h, w._ptr(), d, k, o, s)
        self._check(st, f"{'q' if pl.quantized else ''}conv{pl.nd}d")

    def _run(self, w: Workload, nd: int, quantized: bool, data: Any, weights: Any, params: Any,
             residual: Any, out: Any, stream: Any) -> Any:
        pl = _plan(w)
        if pl.nd != nd:
            raise invalid_arg(f"{w.key} is a {w.op}: call the conv{w.nd}d form")
        if quantized != pl.quantized:
            raise invalid_arg(f"{w.key} {'has an' if w.quantized else 'has no'} epilogue: call "
                              f"{'q' if w.quantized else ''}conv{nd}d")
        done = self._fast(w, pl, data, weights, params, residual, out, stream)
        if done is not None:
            return done
        d = self._tensor(data, "data", w, pl.data_shape, pl.data_dtype)
        k = self._tensor(weights, "weights", w, pl.weight_shape, _INT8)
        p = r = None
        if quantized:
            need = pl.params_bytes
            if params is not None:
                p = _tensor.describe(params, "params")
                if p.dtype.itemsize * int(np.prod(p.shape)) != need or not p.contiguous:
                    raise invalid_arg(f"params: {p.dtype.itemsize * int(np.prod(p.shape))} bytes, "
                                      f"{w.key} needs {need} contiguous (make_params, copied to the device)")
                if p.ptr % 16:
                    raise invalid_arg(f"params: address {p.ptr:#x} is not 16-byte aligned")
            if pl.residual:
                if residual is None:
                    raise invalid_arg(f"residual: {w.key} adds a residual; none was given")
                r = self._tensor(residual, "residual", w, pl.out_shape, pl.out_dtype)
            elif residual is not None:
                raise invalid_arg(f"residual: {w.key} has no residual; one was given")
        if out is None:
            out = _tensor.empty_like_lib(d, pl.out_shape, pl.out_dtype, "out")
        o = self._tensor(out, "out", w, pl.out_shape, pl.out_dtype)
        self._launch(w, pl, d.ptr, k.ptr, p.ptr if p else None, r.ptr if r else None, o.ptr,
                     self._stream(stream, d))
        return out

    def conv2d(self, w: Workload, data: Any, weights: Any, out: Any = None, stream: Any = None) -> Any:
        """out = conv(data, weights) as int32 (ct_conv2d), w without an epilogue."""
        return self._run(w, 2, False, data, weights, None, None, out, stream)

    def conv3d(self, w: Workload, data: Any, weights: Any, out: Any = None, stream: Any = None) -> Any:
        """conv2d's 3D form (ct_conv3d)."""
        return self._run(w, 3, False, data, weights, None, None, out, stream)

    def qconv2d(self, w: Workload, data: Any, weights: Any, params: Any = None, residual: Any = None,
                out: Any = None, stream: Any = None) -> Any:
        """The quantized convolution of w (ct_qconv2d): params is make_params' block on
        the device (None only without epilogue values), residual when w has one."""
        return self._run(w, 2, True, data, weights, params, residual, out, stream)

    def qconv3d(self, w: Workload, data: Any, weights: Any, params: Any = None, residual: Any = None,
                out: Any = None, stream: Any = None) -> Any:
        """qconv2d's 3D form (ct_qconv3d)."""
        return self._run(w, 3, True, data, weights, params, residual, out, stream)


def _opened(status: int, h: ctypes.c_void_p, what: str, device: Optional[int]) -> Context:
    """The Context of handle h, or (the context closed: ct_open sets it even on
    failure) the ConvtuneError with its message."""
    if status != 0:
        msg = _capi.lib.ct_errmsg(h).decode(errors="replace") if h else ""
        if h:
            _capi.lib.ct_close(h)
        raise ConvtuneError(status, msg or f"{what} failed")
    return Context(h, device)


def open(db: Optional[str] = None, device: int = 0) -> Context:  # noqa: A001 (the C API's name)
    """A context on the database at db (None: none, every workload gets the
    heuristic default) and CUDA device `device` (ct_open)."""
    h = ctypes.c_void_p()
    st = _capi.lib.ct_open(db.encode() if db else None, int(device), ctypes.byref(h))
    return _opened(st, h, "ct_open", int(device))


def open_arch(db: Optional[str] = None, arch: str = "sm_90") -> Context:
    """A context without a GPU, for a named architecture (ct_open_arch): explain,
    make_params and the calls' checks; no launch."""
    h = ctypes.c_void_p()
    st = _capi.lib.ct_open_arch(db.encode() if db else None, arch.encode(), ctypes.byref(h))
    return _opened(st, h, "ct_open_arch", None)
