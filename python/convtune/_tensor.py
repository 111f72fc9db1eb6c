"""What a CUDA tensor handed to a Context is: its pointer, shape, dtype and
layout in memory, read from __cuda_array_interface__ (torch and CuPy offer
it) or, for an object that offers only DLPack, through torch's or CuPy's
from_dlpack. No device memory is touched here, so the checks run (and are
tested) on objects that only carry the metadata."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ._errors import invalid_arg


@dataclass
class Tensor:
    obj: Any
    ptr: int
    shape: tuple
    dtype: np.dtype
    contiguous: bool
    kind: str  # "torch", "cupy" or "cuda_array_interface"
    device: Optional[int]


def _kind(obj: Any) -> str:
    mod = type(obj).__module__ or ""
    if mod.startswith("torch"):
        return "torch"
    if mod.startswith("cupy"):
        return "cupy"
    return "cuda_array_interface"


def _from_dlpack(obj: Any) -> Any:
    """A CUDA object that offers only DLPack, as a torch tensor or CuPy array."""
    try:
        import torch  # type: ignore

        return torch.from_dlpack(obj)
    except ImportError:
        pass
    try:
        import cupy  # type: ignore

        return cupy.from_dlpack(obj)
    except ImportError:
        pass
    raise invalid_arg("an object that offers only DLPack needs torch or CuPy to read it")


def _torch_dtype(dt: Any) -> np.dtype:
    """A torch dtype as NumPy's (the integer and float ones); others as an opaque
    dtype that no check accepts."""
    known = _TORCH_NP.get(dt)
    if known is not None:
        return known
    if not _TORCH_NP:
        import torch  # type: ignore

        _TORCH_NP.update({torch.int8: np.dtype(np.int8), torch.uint8: np.dtype(np.uint8),
                          torch.int32: np.dtype(np.int32)})
        if dt in _TORCH_NP:
            return _TORCH_NP[dt]
    name = str(dt).replace("torch.", "")
    try:
        return np.dtype(name)
    except TypeError:
        return np.dtype([(name, "V1")])


# torch's integer dtypes as NumPy's, filled on the first torch tensor seen
_TORCH_NP: dict = {}


def fast_torch(obj: Any, shape: tuple, dtype: np.dtype, device: Optional[int]) -> int:
    """obj's address when obj is a torch CUDA tensor that passes every check of
    check() (shape, dtype, contiguity, alignment, device); 0 otherwise, and the
    caller takes the full path (describe, check), which says what is wrong.
    A call's hot path: a few attribute reads instead of describe's work."""
    try:
        if not (obj.is_cuda and obj.shape == shape and _TORCH_NP.get(obj.dtype) == dtype
                and obj.is_contiguous()):
            return 0
        return _placed(obj, device)
    except (AttributeError, TypeError):
        return 0


def fast_torch_bytes(obj: Any, nbytes: int, device: Optional[int]) -> int:
    """fast_torch for a params block: nbytes in a contiguous torch CUDA tensor."""
    try:
        if not (obj.is_cuda and obj.numel() * obj.element_size() == nbytes and obj.is_contiguous()):
            return 0
        return _placed(obj, device)
    except (AttributeError, TypeError):
        return 0


def _placed(obj: Any, device: Optional[int]) -> int:
    """A torch CUDA tensor's address when 16-byte aligned and on device; else 0."""
    ptr = obj.data_ptr()
    if ptr % 16 or (device is not None and obj.device.index != device):
        return 0
    return ptr


def torch_empty(shape: tuple, dtype: np.dtype, like: Any) -> Any:
    """torch.empty of a NumPy integer dtype on like's device."""
    import torch  # type: ignore

    tdt = next(t for t, n in _TORCH_NP.items() if n == dtype)
    return torch.empty(shape, dtype=tdt, device=like.device)


def torch_stream(device_index: Optional[int]) -> int:
    """torch's current stream on a device, as a cudaStream_t value."""
    import torch  # type: ignore

    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # what Triton's launcher calls
    idx = torch.cuda.current_device() if device_index is None else device_index
    if raw is not None:
        return int(raw(idx))
    return int(torch.cuda.current_stream(idx).cuda_stream)


def _describe_torch(obj: Any, role: str) -> Tensor:
    """A torch tensor's metadata read from the tensor itself: quicker than its
    __cuda_array_interface__, which also refuses tensors that require grad."""
    if not obj.is_cuda:
        raise invalid_arg(f"{role}: a torch tensor on {obj.device}; the convolution reads CUDA "
                          "device memory (.cuda())")
    return Tensor(obj, int(obj.data_ptr()), tuple(obj.shape), _torch_dtype(obj.dtype),
                  bool(obj.is_contiguous()), "torch", obj.device.index)


def describe(obj: Any, role: str) -> Tensor:
    """obj's metadata, or a ConvtuneError naming role and what is wrong."""
    if _kind(obj) == "torch" and hasattr(obj, "data_ptr"):
        return _describe_torch(obj, role)
    if isinstance(obj, np.ndarray):
        raise invalid_arg(f"{role}: a host array (numpy.ndarray); the convolution reads CUDA device "
                          "memory: pass a torch or CuPy CUDA tensor")
    cai = None
    try:
        cai = obj.__cuda_array_interface__
    except (AttributeError, RuntimeError, TypeError):
        cai = None
    if cai is None and hasattr(obj, "__dlpack_device__"):
        dev_type, _ = obj.__dlpack_device__()
        if int(dev_type) != 2:  # kDLCUDA
            raise invalid_arg(f"{role}: a DLPack tensor on device type {int(dev_type)}, not CUDA (2)")
        obj = _from_dlpack(obj)
        cai = obj.__cuda_array_interface__
    if cai is None:
        where = "a CPU tensor" if hasattr(obj, "is_cuda") else type(obj).__name__
        raise invalid_arg(f"{role}: {where} offers neither __cuda_array_interface__ nor CUDA "
                          "DLPack: pass a torch or CuPy CUDA tensor")
    shape = tuple(int(d) for d in cai["shape"])
    dtype = np.dtype(cai["typestr"])
    ptr = int(cai["data"][0]) if cai.get("data") else 0
    strides = cai.get("strides")
    contiguous = True
    if strides is not None:
        want, step = [], dtype.itemsize
        for d in reversed(shape):
            want.append(step)
            step *= d
        want.reverse()
        contiguous = all(s == w for s, w, d in zip(strides, want, shape) if d != 1)
    kind = _kind(obj)
    device = None
    if kind == "torch":
        device = obj.device.index
    elif kind == "cupy":
        device = obj.device.id
    return Tensor(obj, ptr, shape, dtype, contiguous, kind, device)


def check(t: Tensor, role: str, key: str, shape: tuple, dtype: Any, layout: str,
          device: Optional[int]) -> None:
    """Refuse t unless it has shape, dtype, C-contiguity, 16-byte alignment and device."""
    if t.dtype != np.dtype(dtype):
        got = t.dtype.names[0] if t.dtype.names else t.dtype.name  # _torch_dtype's opaque form
        raise invalid_arg(f"{role}: dtype {got}, {key} needs {np.dtype(dtype).name}")
    if t.shape != tuple(shape):
        raise invalid_arg(f"{role}: shape {t.shape}, {key} needs {tuple(shape)} ({layout})")
    if not t.contiguous:
        raise invalid_arg(f"{role}: not contiguous; pass a contiguous tensor (torch: .contiguous(), "
                          "CuPy: cupy.ascontiguousarray)")
    if t.ptr % 16:
        raise invalid_arg(f"{role}: address {t.ptr:#x} is not 16-byte aligned (cudaMalloc's are)")
    if device is not None and t.device is not None and t.device != device:
        raise invalid_arg(f"{role}: on cuda:{t.device}, the context runs on cuda:{device}")


def empty_like_lib(t: Tensor, shape: tuple, dtype: Any, role: str) -> Any:
    """A new array of shape and dtype on t's device, from t's library."""
    if t.kind == "torch":
        return torch_empty(shape, np.dtype(dtype), t.obj)
    if t.kind == "cupy":
        import cupy  # type: ignore

        with t.obj.device:
            return cupy.empty(shape, dtype=dtype)
    raise invalid_arg(f"{role}: give one (out=): data comes from neither torch nor CuPy, which "
                      "would allocate it")


def current_stream(t: Tensor) -> int:
    """The caller's current stream on t's device: torch's or CuPy's; else 0 (the default)."""
    if t.kind == "torch":
        return torch_stream(t.obj.device.index)
    if t.kind == "cupy":
        import cupy  # type: ignore

        with t.obj.device:
            return int(cupy.cuda.get_current_stream().ptr)
    return 0


def stream_handle(stream: Any) -> int:
    """A stream argument as a cudaStream_t value: an int, torch's Stream (.cuda_stream) or
    CuPy's (.ptr)."""
    if isinstance(stream, int):
        return stream
    for attr in ("cuda_stream", "ptr"):
        if hasattr(stream, attr):
            return int(getattr(stream, attr))
    raise TypeError(f"stream: an int handle, a torch or a CuPy stream, not {type(stream).__name__}")
