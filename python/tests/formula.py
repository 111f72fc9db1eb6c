"""convtune.h's quantized formula in NumPy (int64, exact): what the package's
reference tests and bench/issue37_gpu.py check the library's results against.
Written from the header's text, not from the library's code."""

import numpy as np

import convtune

I32_MIN, I32_MAX = -(2**31), 2**31 - 1


def wrap32(v):
    """v taken modulo 2^32 into int32's range (int32 addition wraps)."""
    return ((v + 2**31) % 2**32) - 2**31


def srdhm(a, b):
    """gemmlowp's SaturatingRoundingDoublingHighMul."""
    ab = a * b
    r = (ab + (1 << 30)) >> 31
    return np.where((a == I32_MIN) & (b == I32_MIN), I32_MAX, r)


def rdbpot(x, e):
    """gemmlowp's RoundingDivideByPOT."""
    mask = (np.int64(1) << e) - 1
    rem = x & mask
    thr = (mask >> 1) + (x < 0)
    return (x >> e) + (rem > thr)


def rescale(x, m, shift):
    """TFLite's MultiplyByQuantizedMultiplier: x * m * 2^(shift - 31), rounded."""
    left = np.maximum(shift, 0)
    right = np.maximum(-shift, 0)
    xs = np.clip(x * (np.int64(1) << left), I32_MIN, I32_MAX)
    return rdbpot(srdhm(xs, m), right)


def requant(acc, w, q, residual=None):
    """The 8-bit output (or, for int32 output, v) of accumulators acc (int64,
    channels-first: N, K, spatial; the sum of (x - zx)(w - zw)) under quant q
    with gemmlowp rounding; residual channels-first too. Channels-first int64."""
    shape = (1, -1) + (1,) * w.nd
    v = acc
    if q is not None and q.bias is not None:
        v = v + np.asarray(q.bias, dtype=np.int64).reshape(shape)
    v = wrap32(v)
    if w.out_type == "int32":
        return v
    scales = np.float32(np.asarray(q.scale, dtype=np.float64)).reshape(-1)
    mults = [convtune.quantize_multiplier(s) for s in scales]
    m = np.array([a for a, _ in mults], dtype=np.int64).reshape(shape if len(mults) > 1 else ())
    sh = np.array([b for _, b in mults], dtype=np.int64).reshape(shape if len(mults) > 1 else ())
    y = q.out_zero_point + rescale(v, m, sh)
    if residual is not None:
        rm, rsh = convtune.quantize_multiplier(np.float32(q.residual_scale))
        y = y + rescale(residual.astype(np.int64) - q.residual_zero_point, np.int64(rm), np.int64(rsh))
    return np.clip(y, q.clamp_min, q.clamp_max)
