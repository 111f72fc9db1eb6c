"""convtune: tuned int8 convolution kernels for NVIDIA GPUs, from Python.

The package binds libconvtune's public C API (ctypes: convtune._capi) and
runs the `convtune` command for tuning and benchmarking:

    import convtune
    w = convtune.Workload(op="conv2d", c=64, k=64, h=56, w=56, kernel=3, pad=1,
                          layout="nhwc", out_type="int8", bias=True, scale="channel")
    w.key, w.output_shape, w.ops
    convtune.reference_qconv(w, data, weights, convtune.Quant(...))  # NumPy, CPU
    convtune.tune(w, db="convtune.db", trials=200)                   # the command's JSON

Errors raise convtune.ConvtuneError, which carries the library's message.
"""

from ._capi import version
from ._context import Context, Explanation, open, open_arch
from ._cli import bench, command, tune, workload_info
from ._errors import ConvtuneError
from ._quant import Quant, quantize_multiplier
from ._reference import reference_conv, reference_qconv
from ._workload import Workload

__version__ = "0.1.0"

__all__ = [
    "Context",
    "ConvtuneError",
    "Explanation",
    "Quant",
    "Workload",
    "bench",
    "command",
    "open",
    "open_arch",
    "quantize_multiplier",
    "reference_conv",
    "reference_qconv",
    "tune",
    "version",
    "workload_info",
]
