"""convtune.torch: libconvtune as PyTorch custom ops and modules.

Importing it registers two ops (torch.library.custom_op, PyTorch 2.4 or later):

    torch.ops.convtune.qconv2d(data, weight, params, residual, workload, db="") -> Tensor
    torch.ops.convtune.qconv3d(...)

data, weight, params and residual are CUDA tensors as Context.qconv2d takes
them (the workload's layouts; params from make_params, on the device; None
where the workload has none). workload is a canonical key or a JSON object;
in JSON, "n" and the input sizes ("h", "w" and, for conv3d, "d") may be left
out, and are then read from data's shape, so that one string serves every
batch and size. db is the tuning database's path ("" for none: every
workload gets the heuristic default); the op keeps one context per
(db, device) for the process. A workload without an epilogue gives the int32
accumulators (ct_conv2d).

Each op has a fake implementation (the output's shape and dtype from the
workload, no launch), so it runs in eager mode, under torch.compile without
a graph break, and inside torch.cuda.graph capture. Before a capture, call
each workload once eagerly: its first call loads (or compiles) its kernel,
which a capture must not contain; torch's own rule of warming up on a side
stream first covers it.

QConv2d and QConv3d wrap the ops as modules built from a float nn.Conv2d /
nn.Conv3d and scales (from_float): channels-last int8 or uint8 tensors in,
8-bit tensors out, shaped (N, C, H, W) as PyTorch's are.
"""

from __future__ import annotations

import atexit
import functools
import json
import threading
from collections.abc import Sequence
from typing import Any, Optional, Union

import torch
from torch import Tensor, nn

from . import _context
from ._errors import invalid_arg
from ._quant import Quant
from ._workload import Workload

if not hasattr(torch.library, "custom_op"):
    raise ImportError(f"convtune.torch needs PyTorch 2.4 or later (torch.library.custom_op); "
                      f"this is {torch.__version__}")

__all__ = ["QConv2d", "QConv3d", "close_contexts", "context", "dequantize", "quantize", "workload_for"]

TORCH_DTYPES = {"int8": torch.int8, "uint8": torch.uint8, "int32": torch.int32}
_CHANNELS_LAST = ("nhwc", "ndhwc")
_PACKED = ("nchw4c", "ncdhw4c")


# ---- the workload of a call --------------------------------------------------------
@functools.lru_cache(maxsize=4096)
def workload_for(spec: str, data_shape: tuple[int, ...]) -> Workload:
    """The Workload of spec for data of data_shape: a key as it is; a JSON object
    with "n" and the input sizes, where absent, from data_shape (in the object's
    layout). A mismatch between the two is refused by the call's checks."""
    text = spec.strip()
    if not text.startswith("{"):
        return Workload(text)
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise invalid_arg(f"workload: not a key and not a JSON object ({e})") from None
    if not isinstance(obj, dict):
        raise invalid_arg("workload: a key or a JSON object")
    nd = 3 if obj.get("op") == "conv3d" else 2
    layout = obj.get("layout", "nchw" if nd == 2 else "ncdhw")
    rank = nd + 2 + (1 if layout in _PACKED else 0)
    if len(data_shape) != rank:
        raise invalid_arg(f"data: {len(data_shape)} dimensions {tuple(data_shape)}; a {layout} "
                          f"{obj.get('op', 'conv2d')} takes {rank}")
    sizes = data_shape[1:1 + nd] if layout in _CHANNELS_LAST else data_shape[2:2 + nd]
    obj.setdefault("n", int(data_shape[0]))
    for name, size in zip(("d", "h", "w")[3 - nd:], sizes):
        obj.setdefault(name, int(size))
    return Workload(obj)


# ---- one context per (db, device) -------------------------------------------------
_lock = threading.Lock()
_contexts: dict[tuple[str, int], _context.Context] = {}


def context(db: str = "", device: Optional[int] = None) -> _context.Context:
    """The process's context on database db ("" for none) and CUDA device
    `device` (None: torch's current one), opened on first use."""
    dev = torch.cuda.current_device() if device is None else int(device)
    with _lock:
        ctx = _contexts.get((db, dev))
        if ctx is None:
            ctx = _context.open(db or None, dev)
            _contexts[(db, dev)] = ctx
        return ctx


@atexit.register
def close_contexts() -> None:
    """Close the ops' contexts, after their devices' work has finished: the next
    call opens them again and reads the database anew (e.g. after tuning).
    CUDA graphs captured before hold their kernels: capture them again. Also
    at exit."""
    with _lock:
        for (_, dev), ctx in _contexts.items():
            try:
                torch.cuda.synchronize(dev)
            except RuntimeError:  # CUDA already torn down at exit
                pass
            ctx.close()
        _contexts.clear()


# ---- the ops ------------------------------------------------------------------
def _conv(nd: int, data: Tensor, weight: Tensor, params: Optional[Tensor], residual: Optional[Tensor],
          workload: str, db: str) -> Tensor:
    w = workload_for(workload, data.shape)
    pl = _context._plan(w)
    if pl.nd != nd:
        raise invalid_arg(f"{w.key} is a {w.op}: use convtune::qconv{w.nd}d")
    if not data.is_cuda:
        raise invalid_arg(f"data: on {data.device}; convtune::qconv{nd}d runs on CUDA tensors")
    if not pl.quantized and params is not None:
        raise invalid_arg(f"params: {w.key} has no epilogue; none is needed")
    ctx = context(db, data.device.index)
    return ctx._run(w, nd, pl.quantized, data, weight, params, residual, None, None)


def _fake(data: Tensor, workload: str) -> Tensor:
    w = workload_for(workload, tuple(int(s) for s in data.shape))
    return data.new_empty(w.output_shape, dtype=TORCH_DTYPES[w.out_type])


def _define(nd: int) -> Any:
    """convtune::qconv{nd}d: _conv as a custom op, with its fake implementation."""

    def op(data: Tensor, weight: Tensor, params: Optional[Tensor], residual: Optional[Tensor],
           workload: str, db: str = "") -> Tensor:
        return _conv(nd, data, weight, params, residual, workload, db)

    op.__name__ = op.__qualname__ = f"qconv{nd}d"
    op.__doc__ = f"The convolution of workload (a conv{nd}d) on data, by libconvtune."
    defined = torch.library.custom_op(f"convtune::qconv{nd}d", mutates_args=())(op)

    @defined.register_fake
    def _(data: Tensor, weight: Tensor, params: Optional[Tensor], residual: Optional[Tensor],
          workload: str, db: str = "") -> Tensor:
        return _fake(data, workload)

    return defined


qconv2d = _define(2)
qconv3d = _define(3)


# ---- quantizing tensors --------------------------------------------------------------
def quantize(x: Tensor, scale: float, zero_point: int = 0, dtype: torch.dtype = torch.int8) -> Tensor:
    """x (float) as dtype (int8 or uint8): clamp(round_half_even(x / scale) + zero_point)."""
    info = torch.iinfo(dtype)
    return torch.clamp(torch.round(x / scale) + zero_point, info.min, info.max).to(dtype)


def dequantize(q: Tensor, scale: float, zero_point: int = 0) -> Tensor:
    """q (int8, uint8 or int32) as float32: (q - zero_point) * scale."""
    return (q.to(torch.float32) - zero_point) * scale


# ---- the modules ------------------------------------------------------------------
def _tuple(v: Union[int, Sequence[int]], nd: int, what: str) -> tuple[int, ...]:
    t = (int(v),) * nd if isinstance(v, int) else tuple(int(x) for x in v)
    if len(t) != nd:
        raise invalid_arg(f"{what}: {len(t)} values, a {nd}D convolution takes 1 or {nd}")
    return t


_HOST = None


def _host_context() -> _context.Context:
    """An architecture's context, for make_params (which needs no GPU)."""
    global _HOST
    with _lock:
        if _HOST is None:
            _HOST = _context.open_arch(None, "sm_90")
        return _HOST


# (N, C, spatial...) <-> (N, spatial..., C)
_TO_LAST = {2: (0, 2, 3, 1), 3: (0, 2, 3, 4, 1)}
_TO_FIRST = {2: (0, 3, 1, 2), 3: (0, 4, 1, 2, 3)}


class _QConvNd(nn.Module):
    _nd = 2

    def __init__(self, weight: Tensor, scale: Union[float, Sequence[float]], *,
                 bias: Optional[Tensor] = None, stride: Union[int, Sequence[int]] = 1,
                 padding: Union[int, Sequence[int]] = 0, dilation: Union[int, Sequence[int]] = 1,
                 groups: int = 1, data_type: str = "int8", data_zero_point: int = 0,
                 out_type: str = "int8", out_zero_point: int = 0, relu: bool = False,
                 residual_scale: Optional[float] = None, residual_zero_point: int = 0,
                 input_size: Optional[Sequence[int]] = None, db: Optional[str] = None) -> None:
        """A quantized convolution from its integer parts (from_float makes them
        from a float one). weight: int8 (K, C/groups, kernel...); scale: one or
        K values s_in s_w[k] / s_out; bias: K int32 values or None; data_type
        and data_zero_point: the input's; out_type ("int8", "uint8") and
        out_zero_point: the output's; relu clamps at the output zero point;
        residual_scale (s_residual / s_out) and residual_zero_point make forward
        add a residual; input_size fixes the spatial size (needed with a data
        zero point and padding, whose params depend on it); db: the tuning
        database the op reads (None: the heuristic default for every workload).
        Raises ConvtuneError, with the library's message, for what it cannot run."""
        super().__init__()
        nd = self._nd
        wq = torch.as_tensor(weight).detach().cpu()
        if wq.dtype != torch.int8 or wq.dim() != nd + 2:
            raise invalid_arg(f"weight: {wq.dtype} {tuple(wq.shape)}; the quantized weights are int8 "
                              f"(K, C/groups, {', '.join('DHW'[3 - nd:])})")
        k, cpg, kernel = wq.shape[0], wq.shape[1], tuple(wq.shape[2:])
        if out_type not in ("int8", "uint8"):
            raise invalid_arg(f"out_type: {out_type!r}; the module's output is int8 or uint8")
        scales = [float(scale)] if isinstance(scale, (int, float)) else [float(s) for s in scale]
        if len(scales) not in (1, k):
            raise invalid_arg(f"scale: {len(scales)} values; 1 or {k} (one per output channel)")
        info = torch.iinfo(TORCH_DTYPES[out_type])
        self._fields: dict[str, Any] = dict(
            op=f"conv{nd}d", c=cpg * groups, k=k, kernel=list(kernel),
            stride=list(_tuple(stride, nd, "stride")), pad=list(_tuple(padding, nd, "padding")),
            dilation=list(_tuple(dilation, nd, "dilation")), groups=groups,
            layout=_CHANNELS_LAST[nd - 2], data_type=data_type, out_type=out_type,
            data_zero_point=data_zero_point != 0, bias=bias is not None,
            scale="channel" if len(scales) > 1 else "tensor", residual=residual_scale is not None)
        self.quant = Quant(data_zero_point=data_zero_point,
                           bias=None if bias is None else torch.as_tensor(bias).to(torch.int32).tolist(),
                           scale=scales, out_zero_point=out_zero_point,
                           clamp_min=max(out_zero_point, info.min) if relu else info.min,
                           clamp_max=info.max,
                           residual_scale=1.0 if residual_scale is None else float(residual_scale),
                           residual_zero_point=residual_zero_point)
        # params depend on the input's size only with a data zero point and padding
        # (the border classes' corrections, core/zpad.cuh)
        sized = data_zero_point != 0 and any(self._fields["pad"])
        if input_size is not None:
            self._fields.update(zip(("d", "h", "w")[3 - nd:], _tuple(input_size, nd, "input_size")))
        elif sized:
            raise invalid_arg("input_size: needed with a data zero point and padding (the params "
                              "block then depends on the input's size)")
        else:  # any valid size: params are the same for all
            for name, r, dl in zip(("d", "h", "w")[3 - nd:], kernel, self._fields["dilation"]):
                self._fields[name] = (r - 1) * dl + 1
        self._db = db or ""
        w = Workload(self._fields)
        # the plain weights (OHWI / ODHWI) that channels-last convolutions take
        plain = wq.permute(0, *range(2, nd + 2), 1).contiguous()
        self.weight_plain = plain.numpy().copy()
        self.register_buffer("weight", plain)
        self.register_buffer("params", torch.from_numpy(
            _host_context().make_params(w, self.quant, self.weight_plain)))
        if input_size is None:
            for name in ("d", "h", "w")[3 - nd:]:
                del self._fields[name]
        self._spec = json.dumps(self._fields, separators=(",", ":"))

    @classmethod
    def from_float(cls, conv: nn.Module, input_scale: float, output_scale: float, *,
                   input_zero_point: int = 0, output_zero_point: int = 0, data_type: str = "int8",
                   out_type: str = "int8", relu: bool = False, residual_scale: Optional[float] = None,
                   residual_zero_point: int = 0, input_size: Optional[Sequence[int]] = None,
                   db: Optional[str] = None) -> "_QConvNd":
        """The quantized form of a float convolution: weights per output channel,
        symmetric int8 (s_w[k] = max|w_k| / 127); bias as int32 round(b / (s_in s_w[k]));
        scale[k] = s_in s_w[k] / s_out. relu clamps at the output zero point;
        residual_scale (s_residual / s_out) makes forward add a residual."""
        nd = cls._nd
        want = nn.Conv2d if nd == 2 else nn.Conv3d
        if not isinstance(conv, want):
            raise invalid_arg(f"from_float: a {want.__name__}, not {type(conv).__name__}")
        if conv.padding_mode != "zeros":
            raise invalid_arg(f"from_float: padding_mode {conv.padding_mode!r}; only 'zeros'")
        padding = conv.padding
        if isinstance(padding, str):
            if padding != "valid":
                raise invalid_arg(f"from_float: padding {padding!r}; give it as numbers")
            padding = 0
        wf = conv.weight.detach().to(torch.float64).cpu()
        amax = wf.abs().reshape(wf.shape[0], -1).amax(dim=1)
        sw = torch.where(amax > 0, amax / 127, torch.ones_like(amax))
        wq = torch.clamp(torch.round(wf / sw.reshape((-1,) + (1,) * (nd + 1))), -127, 127).to(torch.int8)
        bias = None
        if conv.bias is not None:
            bq = torch.round(conv.bias.detach().to(torch.float64).cpu() / (input_scale * sw))
            bias = torch.clamp(bq, -(2**31), 2**31 - 1).to(torch.int32)
        scale = (input_scale * sw / output_scale).tolist()
        m = cls(wq, scale, bias=bias, stride=conv.stride, padding=padding, dilation=conv.dilation,
                groups=conv.groups, data_type=data_type, data_zero_point=input_zero_point,
                out_type=out_type, out_zero_point=output_zero_point, relu=relu,
                residual_scale=residual_scale, residual_zero_point=residual_zero_point,
                input_size=input_size, db=db)
        m.weight_scale = sw.to(torch.float32)
        return m

    @property
    def spec(self) -> str:
        """The workload string the op receives (JSON; sizes from the data unless fixed)."""
        return self._spec

    def workload(self, x: Tensor) -> Workload:
        """The workload of a call on x (N, C, spatial...)."""
        return workload_for(self._spec, self._last(x).shape)

    def _last(self, x: Tensor) -> Tensor:
        return x.permute(_TO_LAST[self._nd])

    def forward(self, x: Tensor, residual: Optional[Tensor] = None) -> Tensor:
        """x: (N, C, spatial...) int8/uint8, best in channels-last memory format
        (otherwise copied into it); returns (N, K, spatial...) in channels-last.

        Traced (torch.compile, export, fake tensors) it is the op
        convtune::qconv2d / qconv3d; called eagerly on plain tensors it runs the
        op's body directly, the same work without the dispatcher's time (about
        12 us a call, bench/results/h200-issue37)."""
        nd, b = self._nd, self._buffers
        xs = x.permute(_TO_LAST[nd]).contiguous()
        rs = None if residual is None else residual.permute(_TO_LAST[nd]).contiguous()
        if not torch.compiler.is_compiling() and type(xs) is Tensor:
            y = _conv(nd, xs, b["weight"], b["params"], rs, self._spec, self._db)
        else:
            op = torch.ops.convtune.qconv2d if nd == 2 else torch.ops.convtune.qconv3d
            y = op(xs, b["weight"], b["params"], rs, self._spec, self._db)
        return y.permute(_TO_FIRST[nd])

    def extra_repr(self) -> str:
        f = self._fields
        return (f"{f['c']}, {f['k']}, kernel={tuple(f['kernel'])}, stride={tuple(f['stride'])}, "
                f"pad={tuple(f['pad'])}, {f['data_type']}->{f['out_type']}"
                f"{', residual' if f['residual'] else ''}")


class QConv2d(_QConvNd):
    """A quantized 2D convolution through convtune::qconv2d (channels-last)."""

    _nd = 2


class QConv3d(_QConvNd):
    """A quantized 3D convolution through convtune::qconv3d (channels-last)."""

    _nd = 3

