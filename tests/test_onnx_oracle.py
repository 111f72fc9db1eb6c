#!/usr/bin/env python3
"""test_onnx_oracle.py: ONNX Runtime (CPU) as the oracle of convtune's CPU reference.

Builds N seeded random single-node quantized models (QDQ Conv and QLinearConv;
conv2d and conv3d; uint8 and int8 data; per-tensor and per-channel weight
scales; with and without bias, a Relu or Clip after the conv, a residual Add
(QDQ Add or com.microsoft QLinearAdd, the residual first or second) and a
Relu after it), runs each in ONNX Runtime with int8 QDQ fusion allowed,
checks in the optimized graph that ORT ran its integer kernels (QLinearConv,
QLinearAdd; a case where it did not is an error, never skipped), runs the
driver (onnx_oracle: model_load without fusing convs + ct_reference_qconv) on
the same inputs, and compares the output bytes. After them, --grouped M cases (default 48) with
the conv's group > 1: grouped (1 to 4 channels per group) and depthwise
(group == C, channel multiplier 1 to 3), drawn the same way from the same
stream after the others, so that the first N cases stay as they were. Also checks a float32 emulation of ORT's arithmetic
written here, which names the culprit of a mismatch.

Usage: test_onnx_oracle.py DRIVER [--cases N] [--seed S] [--keep DIR]
       test_onnx_oracle.py --emulate-only [...]   (no driver: ORT vs the emulation)
Exit 0 all equal, 1 any mismatch or invalid case, 77 no onnxruntime (skipped).

ORT's arithmetic, found by probing ORT 1.32 on x86-64 (AVX2, FMA), with
rne rounding half to even and [lo, hi] the type's range:
  QLinearConv: s = f32(f32(x_s * w_s[k]) / y_s),
               y = zy + rne(clamp(f32(acc + bias) * s, lo - zy, hi - zy))
  QLinearAdd (MLAS qladd_avx2.cpp, compiled with FMA contraction):
               sA = f32(s_A / s_C), sB = f32(s_B / s_C), f = f32(zC) - fmaf(sA, zA, sB * zB),
               y = sat(rne(fmaf(A, sA, fmaf(B, sB, f)))), a sum >= 2^31 giving lo
  DQ -> Relu -> Q with equal params: max(t, z);
  DQ -> Clip(a, b) -> Q: clamp(t, Q(a), Q(b)), Q(a) = z + rne(clamp(a / s, lo - z, hi - z)).
On AVX2 without VNNI, ORT's uint8 x int8 kernels add pairs of products in
saturating int16 (vpmaddubsw): 255 * 127 * 2 becomes 32767. So uint8-data
models use 7-bit weights [-64, 63] (ORT's reduce_range), where ORT is exact
on every x86 CPU; int8 data is exact over the full range.
"""
import argparse
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:
    # Skipped when run by hand outside the venv; a failure inside it (CI).
    venv = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".venv-test")
    if os.path.realpath(sys.prefix) == os.path.realpath(venv):
        print(f"test_onnx_oracle: {e}: {venv} is incomplete: rerun scripts/setup")
        sys.exit(1)
    print(f"test_onnx_oracle: skipped: {e} (scripts/setup creates .venv-test)")
    sys.exit(77)

f32 = np.float32
DT = {"uint8": np.uint8, "int8": np.int8}
TP = {"uint8": TensorProto.UINT8, "int8": TensorProto.INT8}
# What may remain in ORT's optimized graph: the integer kernels, the
# Transposes of its NHWC layout pass (byte moves), and the DQ -> Relu / Clip
# -> Q of an activation that ORT keeps in float (exact: see activate()).
INT_OPS = {
    "QLinearConv",
    "QLinearAdd",
    "QuantizeLinear",
    "DequantizeLinear",
    "Relu",
    "Clip",
    "Transpose",
}


def trange(dt):
    return (0, 255) if dt == "uint8" else (-128, 127)


# ---- float32 arithmetic as ORT's kernels do it --------------------------------


def fma32(a, b, c):
    """Correctly rounded float32 a * b + c, vectorised. a * b is exact in
    float64; TwoSum gives the exact sum s + e; rounding s to float32 is the
    correct rounding of s + e unless s is a float32 midpoint, where e's sign
    decides."""
    a = np.asarray(a, f32).astype(np.float64)
    b = np.asarray(b, f32).astype(np.float64)
    c = np.asarray(c, f32).astype(np.float64)
    p = a * b
    s = p + c
    bp = s - c
    e = (p - bp) + (c - (s - bp))
    r = s.astype(f32)
    r64 = r.astype(np.float64)
    other = np.where(s > r64, np.nextafter(r, f32(np.inf)), np.nextafter(r, f32(-np.inf)))
    o64 = other.astype(np.float64)
    mid = (s != r64) & ((r64 + o64) / 2 == s)
    flip = mid & (e != 0) & (np.sign(e) == np.sign(o64 - s))
    return np.where(flip, other, r).astype(f32)


def requant(v, scale, z, dt):
    """zy + rne(clamp(f32(v) * scale, lo - zy, hi - zy)): QLinearConv's output
    and QuantizeLinear's (v / s computed by the caller)."""
    lo, hi = trange(dt)
    p = np.asarray(v).astype(f32) * np.asarray(scale, f32)
    p = np.minimum(np.maximum(p, f32(lo - z)), f32(hi - z))
    return (np.rint(p).astype(np.int64) + z).astype(DT[dt])


def quantize(x, s, z, dt):
    """ONNX QuantizeLinear of float32 x as MLAS computes it: x / s in float32."""
    lo, hi = trange(dt)
    q = np.asarray(x, f32) / f32(s)
    q = np.minimum(np.maximum(q, f32(lo - z)), f32(hi - z))
    return (np.rint(q).astype(np.int64) + z).astype(DT[dt])


def qladd(a, sa, za, b, sb, zb, sc, zc, dt):
    lo, hi = trange(dt)
    sA = f32(sa) / f32(sc)
    sB = f32(sb) / f32(sc)
    f = f32(zc) - fma32(sA, f32(za), sB * f32(zb))
    acc = fma32(a.astype(f32), sA, fma32(b.astype(f32), sB, f))
    v = np.rint(acc.astype(np.float64))
    v = np.where(v >= 2.0**31, -(2.0**31), v)  # cvtps2dq: out of range is INT32_MIN
    return np.clip(v, lo, hi).astype(np.int64).astype(DT[dt])


def conv_acc(x, w, zx, zw, stride, pads, dil, group=1):
    """Exact int64 accumulators of sum (x - zx) * (w - zw); padding reads zx.
    With group G, output channel k reads input channels g * C/G .. of its
    group g = k // (K/G), and w holds K x C/G."""
    if group > 1:
        cg, kg = x.shape[1] // group, w.shape[0] // group
        return np.concatenate(
            [
                conv_acc(x[:, g * cg : (g + 1) * cg], w[g * kg : (g + 1) * kg], zx, zw, stride,
                         pads, dil)
                for g in range(group)
            ],
            axis=1,
        )
    nd = x.ndim - 2
    x = x.astype(np.int64) - zx
    w = w.astype(np.int64) - zw
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pads[i], pads[i + nd]) for i in range(nd)])
    ks = w.shape[2:]
    out = [(xp.shape[2 + i] - dil[i] * (ks[i] - 1) - 1) // stride[i] + 1 for i in range(nd)]
    acc = np.zeros((x.shape[0], w.shape[0]) + tuple(out), np.int64)
    for idx in np.ndindex(*ks):
        sl = tuple(
            slice(idx[i] * dil[i], idx[i] * dil[i] + stride[i] * (out[i] - 1) + 1, stride[i])
            for i in range(nd)
        )
        acc += np.einsum(
            "nc...,kc->nk...",
            xp[(slice(None), slice(None)) + sl],
            w[(slice(None), slice(None)) + idx],
        )
    return acc


def emulate(p, x, r):
    """ORT's output for case p, from the formulas above."""
    t = emulate_conv(p, x)
    if p["residual"] is None:
        return t
    dt = p["dt"]
    if p["residual"] == "second":
        y = qladd(t, p["ts"], p["zt"], r, p["rs"], p["zr"], p["ys"], p["zy"], dt)
    else:
        y = qladd(r, p["rs"], p["zr"], t, p["ts"], p["zt"], p["ys"], p["zy"], dt)
    return activate(y, p["post"], p["ys"], p["zy"], dt)


def emulate_conv(p, x):
    """The conv's own quantized output t (after its activation)."""
    dt = p["dt"]
    K = p["k"]
    bshape = (1, K) + (1,) * p["nd"]
    acc = conv_acc(x, p["w"], p["zx"], p["zw"], p["stride"], p["pads"], p["dil"], p["group"])
    v = acc + (np.asarray(p["bias"], np.int64).reshape(bshape) if p["bias"] is not None else 0)
    v = ((v + 2**31) % 2**32 - 2**31).astype(np.int32)
    ws = np.asarray(p["ws"], f32).reshape(-1)
    scale = ((f32(p["xs"]) * ws) / f32(p["ts"])).astype(f32)
    scale = np.broadcast_to(scale, (K,)).reshape(bshape)
    lo, hi = trange(dt)
    prod = v.astype(f32) * scale
    p["saturated"] = bool((prod > hi - p["zt"]).any() or (prod < lo - p["zt"]).any())
    t = requant(v, scale, p["zt"], dt)
    return activate(t, p["act"], p["ts"], p["zt"], dt)


def activate(t, act, s, z, dt):
    if act is None:
        return t
    if act == "relu":
        return np.maximum(t, DT[dt](z))
    a, b = act[1], act[2]  # ("clip", a, b)
    lo = quantize(np.array([a], f32), s, z, dt)[0]
    hi = quantize(np.array([b], f32), s, z, dt)[0]
    return np.minimum(np.maximum(t, lo), hi)


# ---- random cases -----------------------------------------------------------


def pow2(rng, lo, hi):
    return f32(2.0 ** -int(rng.integers(lo, hi + 1)))


def make_case(rng, i, grouped=False):
    """Case i: categorical factors cycle so that every combination of form x
    data type x rank x weight-scale granularity comes up every 16 cases; the
    rest is drawn from rng. grouped: the conv has group > 1 (C and K set
    from the group's channels)."""
    p = {"index": i}
    p["form"] = ("qdq", "qlinear")[i % 2]
    p["dt"] = ("uint8", "int8")[(i // 2) % 2]
    p["nd"] = (2, 3)[(i // 4) % 2]
    p["per_channel"] = bool((i // 8) % 2)
    dt, nd = p["dt"], p["nd"]
    lo, hi = trange(dt)
    p["n"] = int(rng.choice([1, 1, 2, 3]))
    p["c"] = int(rng.choice([1, 2, 3, 4, 5, 7, 8, 12]))
    p["k"] = int(rng.choice([1, 2, 3, 4, 5, 6, 8, 13]))
    p["group"] = 1
    if grouped:
        if rng.random() < 0.5:  # depthwise: one channel per group, a multiplier
            G, cpg = int(rng.choice([2, 3, 4, 8, 12, 16])), 1
        else:
            G, cpg = int(rng.choice([2, 3, 4, 8])), int(rng.choice([1, 2, 3, 4]))
        p["group"], p["c"], p["k"] = G, G * cpg, G * int(rng.choice([1, 1, 2, 3]))
    if nd == 2:
        kern = [[1, 1], [3, 3], [5, 5], [1, 3], [3, 1], [2, 2], [3, 5], [5, 3], [1, 1], [3, 3]][
            int(rng.integers(10))
        ]
    else:
        kern = [
            [1, 1, 1],
            [3, 3, 3],
            [1, 3, 3],
            [3, 1, 1],
            [2, 2, 2],
            [3, 3, 1],
            [1, 1, 1],
            [3, 3, 3],
        ][int(rng.integers(8))]
    p["kernel"] = kern
    p["stride"] = [int(rng.choice([1, 1, 2])) for _ in range(nd)]
    p["dil"] = [int(rng.choice([1, 1, 1, 1, 2])) if kern[d] > 1 else 1 for d in range(nd)]
    p["pads"] = [
        int(rng.integers(0, kern[d % nd])) if kern[d % nd] > 1 else 0 for d in range(2 * nd)
    ]
    ext = [p["dil"][d] * (kern[d] - 1) + 1 for d in range(nd)]
    # Every sixth case is a rounding probe: larger, its scales chosen to put
    # many values next to a half-integer (near_tie_scale), always near ties.
    p["probe"] = i % 6 == 5
    span = (9 if nd == 2 else 5) * (3 if p["probe"] else 1)
    p["in"] = [
        max(1, ext[d] - p["pads"][d] - p["pads"][d + nd] + int(rng.integers(span // 3, span)))
        for d in range(nd)
    ]
    # Weights: int8 over the full range for int8 data; 7-bit for uint8 data
    # (ORT's AVX2 u8 x s8 kernels saturate pairs of products in int16).
    wlo, whi = (-128, 127) if dt == "int8" else (-64, 63)
    size = [p["k"], p["c"] // p["group"]] + kern  # K x C/G x kernel
    p["w"] = rng.integers(wlo, whi + 1, size=size).astype(np.int8)
    # ORT takes one weight zero point for all channels; 0 is the common case.
    p["zw"] = 0 if rng.random() < 0.7 else int(rng.integers(-10, 11))
    p["zx"] = zp(rng, lo, hi)
    ties = rng.random() < 0.25 and not p["probe"]
    p["ties"] = ties
    K = p["k"]
    if ties:  # powers of two: products land exactly on .5
        p["xs"] = pow2(rng, 1, 4)
        p["ws"] = np.array([pow2(rng, 1, 3) for _ in range(K if p["per_channel"] else 1)], f32)
    else:
        p["xs"] = f32(rng.uniform(0.5, 2) * 10 ** rng.uniform(-3, -1))
        p["ws"] = (
            rng.uniform(0.3, 1.5, K if p["per_channel"] else 1) * 10 ** rng.uniform(-3, -1.5)
        ).astype(f32)
    p["bias"] = None
    if rng.random() < 0.6:
        kvol = p["c"] // p["group"] * int(np.prod(kern))
        bmax = int(rng.choice([50, 2000, 40000])) * max(1, kvol // 9)
        p["bias"] = rng.integers(-bmax, bmax + 1, K).astype(np.int32)
    # The conv output's own scale: aimed so that the outputs use the range,
    # some saturating; ties keep everything a power of two.
    x = rng.integers(lo, hi + 1, size=[p["n"], p["c"]] + p["in"]).astype(DT[dt])
    acc = conv_acc(x, p["w"], p["zx"], p["zw"], p["stride"], p["pads"], p["dil"], p["group"])
    if acc.size == 0:
        return make_case(rng, i, grouped)
    v = acc + (
        p["bias"].astype(np.int64).reshape((1, K) + (1,) * nd) if p["bias"] is not None else 0
    )
    spread = float(np.sqrt(np.mean(v.astype(np.float64) ** 2))) + 1.0
    target = 10 ** rng.uniform(0.5, 2.1)
    if ties:  # the power of two nearest the aim, so that xs * ws / ts is one too
        p["ts"] = f32(2.0 ** round(np.log2(float(p["xs"] * np.max(p["ws"])) * spread / target)))
    else:
        p["ts"] = f32(p["xs"] * float(np.mean(p["ws"])) * spread / target)
    p["zt"] = zp(rng, lo, hi)
    p["near_ties"] = p["probe"] or (not ties and rng.random() < 0.4)
    if p["near_ties"]:
        p["ts"] = near_tie_scale(
            rng,
            p["ts"],
            v
            * np.broadcast_to(f32(p["xs"]) * p["ws"].astype(np.float64), (K,)).reshape(
                (1, K) + (1,) * nd
            ),
            lo - p["zt"],
            hi - p["zt"],
            0.0,
        )
    roll = rng.random()
    if roll < 0.3:
        p["act"] = "relu"
    elif roll < 0.4:  # Relu6-like and arbitrary bounds, around the zero point
        s = float(p["ts"])
        a = f32(-s * rng.uniform(0, 40)) if rng.random() < 0.3 else f32(0)
        b = f32(s * rng.uniform(1, 120))
        p["act"] = ("clip", float(a), float(b))
    else:
        p["act"] = None
    p["residual"] = None
    p["post"] = None
    if rng.random() < (0.7 if p["probe"] else 0.45):
        p["residual"] = "second" if rng.random() < 0.5 else "first"
        if ties:
            p["rs"] = f32(p["ts"] * 2.0 ** int(rng.integers(-2, 3)))
            p["ys"] = f32(p["ts"] * 2.0 ** int(rng.integers(-1, 3)))
        else:
            p["rs"] = f32(p["ts"] * 10 ** rng.uniform(-0.7, 0.7))
            p["ys"] = f32(p["ts"] * 10 ** rng.uniform(-0.4, 0.6))
        p["zr"] = zp(rng, lo, hi)
        p["zy"] = zp(rng, lo, hi)
        roll = rng.random()
        if roll < 0.25:
            p["post"] = "relu"
        elif roll < 0.35:
            s = float(p["ys"])
            p["post"] = (
                "clip",
                float(f32(-s * rng.uniform(0, 40))) if rng.random() < 0.3 else 0.0,
                float(f32(s * rng.uniform(1, 120))),
            )
    p["out_shape"] = list(acc.shape)
    r = None
    if p["residual"]:
        r = rng.integers(lo, hi + 1, size=p["out_shape"]).astype(DT[dt])
        p["near_ties_add"] = p["probe"] or (not ties and rng.random() < 0.4)
        if p["near_ties_add"]:
            t = emulate_conv(p, x)
            r = near_tie_residual(p, t)
            num = (t.astype(np.float64) - p["zt"]) * float(p["ts"]) + (
                r.astype(np.float64) - p["zr"]
            ) * float(p["rs"])
            p["ys"] = near_tie_scale(rng, p["ys"], num, lo - p["zy"], hi - p["zy"], p["zy"])
    return p, x, r


def near_tie_scale(rng, s, num, lo, hi, offset):
    """Of 1000 scales near s, the one that puts the most of num / scale + offset
    (real numbers, within [lo, hi]) within 2^-23 (relative) of a half-integer:
    the values where the order of the float operations and the rounding
    decide the result. Knows nothing of the formulas it tests."""
    num = np.asarray(num, np.float64).reshape(-1)
    best, best_n = s, -1
    for c in s * (1 + rng.uniform(-0.05, 0.05, 1000)):
        real = num / float(f32(c)) + offset
        ok = (real >= lo) & (real <= hi)
        near = np.abs(real - np.floor(real) - 0.5) < np.abs(real) * 2.0**-23
        n = int(np.count_nonzero(near & ok))
        if n > best_n:
            best, best_n = f32(c), n
    return best


def near_tie_residual(p, t):
    """Per element, the residual value that puts the Add's real result nearest
    a half-integer: where QLinearAdd's order of fused multiply-adds shows."""
    lo, hi = trange(p["dt"])
    cand = np.arange(lo, hi + 1, dtype=np.float64)
    tt = (t.astype(np.float64) - p["zt"]) * (float(p["ts"]) / float(p["ys"]))
    real = tt[..., None] + (cand - p["zr"]) * (float(p["rs"]) / float(p["ys"])) + p["zy"]
    dist = np.abs(real - np.floor(real) - 0.5)
    return (np.argmin(dist, axis=-1) + lo).astype(DT[p["dt"]])


def zp(rng, lo, hi):
    """A zero point: mostly anywhere in the type, sometimes its ends or middle."""
    u = rng.random()
    if u < 0.12:
        return lo
    if u < 0.24:
        return (lo + hi + 1) // 2
    if u < 0.28:
        return hi
    if u < 0.4:
        return int(rng.integers(lo, hi + 1))
    return int(rng.integers(lo + 64, hi - 63))


# ---- ONNX graphs --------------------------------------------------------------


class Graph:
    def __init__(self):
        self.nodes, self.inits, self.n = [], [], 0

    def const(self, arr, name=None):
        self.n += 1
        name = name or f"c{self.n}"
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def node(self, op, ins, domain=None, **attrs):
        self.n += 1
        out = f"t{self.n}"
        kw = {"domain": domain} if domain else {}
        self.nodes.append(helper.make_node(op, ins, [out], name=f"{op}_{self.n}", **kw, **attrs))
        return out

    def q(self, t, s, z, dt):
        return self.node("QuantizeLinear", [t, self.const(f32(s)), self.const(DT[dt](z))])

    def dq(self, t, s, z, dt):
        return self.node("DequantizeLinear", [t, self.const(f32(s)), self.const(DT[dt](z))])

    def act(self, t, act, s, z, dt):
        """DQ -> Relu / Clip -> Q with the same params: how a quantized graph
        wraps a float activation."""
        if act is None:
            return t
        f = self.dq(t, s, z, dt)
        if act == "relu":
            f = self.node("Relu", [f])
        else:
            f = self.node("Clip", [f, self.const(f32(act[1])), self.const(f32(act[2]))])
        return self.q(f, s, z, dt)


def build_model(p):
    dt = p["dt"]
    g = Graph()
    K = p["k"]
    out_dims = list(p["out_shape"])
    ws = p["ws"] if p["per_channel"] else p["ws"].reshape(())
    zw = np.full(ws.shape, p["zw"], np.int8)
    attrs = dict(kernel_shape=p["kernel"], strides=p["stride"], pads=p["pads"], dilations=p["dil"])
    if p["group"] > 1:
        attrs["group"] = p["group"]
    if p["form"] == "qdq":
        xf = g.dq("x", p["xs"], p["zx"], dt)
        wq = g.const(p["w"])
        wd = g.node(
            "DequantizeLinear",
            [wq, g.const(ws), g.const(zw)],
            **({"axis": 0} if p["per_channel"] else {}),
        )
        ins = [xf, wd]
        if p["bias"] is not None:
            bs = (f32(p["xs"]) * ws).astype(f32)  # the bias scale ORT's fusion assumes
            bd = g.node(
                "DequantizeLinear",
                [g.const(p["bias"]), g.const(bs), g.const(np.zeros(bs.shape, np.int32))],
                **({"axis": 0} if p["per_channel"] else {}),
            )
            ins.append(bd)
        y = g.node("Conv", ins, **attrs)
        t = g.q(y, p["ts"], p["zt"], dt)
    else:
        ins = [
            "x",
            g.const(f32(p["xs"])),
            g.const(DT[dt](p["zx"])),
            g.const(p["w"]),
            g.const(ws),
            g.const(zw),
            g.const(f32(p["ts"])),
            g.const(DT[dt](p["zt"])),
        ]
        if p["bias"] is not None:
            ins.append(g.const(p["bias"]))
        t = g.node("QLinearConv", ins, **attrs)
    t = g.act(t, p["act"], p["ts"], p["zt"], dt)
    if p["residual"] is not None:
        if p["form"] == "qdq":
            a = g.dq(t, p["ts"], p["zt"], dt)
            b = g.dq("r", p["rs"], p["zr"], dt)
            s = g.node("Add", [a, b] if p["residual"] == "second" else [b, a])
            t = g.q(s, p["ys"], p["zy"], dt)
        else:
            ta = [t, g.const(f32(p["ts"])), g.const(DT[dt](p["zt"]))]
            ra = ["r", g.const(f32(p["rs"])), g.const(DT[dt](p["zr"]))]
            ab = ta + ra if p["residual"] == "second" else ra + ta
            t = g.node(
                "QLinearAdd",
                ab + [g.const(f32(p["ys"])), g.const(DT[dt](p["zy"]))],
                domain="com.microsoft",
            )
        t = g.act(t, p["post"], p["ys"], p["zy"], dt)
    assert g.nodes[-1].output[0] == t
    g.nodes[-1].output[0] = "y"  # the graph's output is the last node's
    inputs = [helper.make_tensor_value_info("x", TP[dt], [p["n"], p["c"]] + p["in"])]
    if p["residual"] is not None:
        inputs.append(helper.make_tensor_value_info("r", TP[dt], list(p["out_shape"])))
    graph = helper.make_graph(
        g.nodes,
        f"oracle{p['index']}",
        inputs,
        [helper.make_tensor_value_info("y", TP[dt], out_dims)],
        g.inits,
    )
    opsets = [helper.make_opsetid("", 19), helper.make_opsetid("com.microsoft", 1)]
    m = helper.make_model(graph, opset_imports=opsets, producer_name="test_onnx_oracle")
    m.ir_version = 9
    onnx.checker.check_model(m)
    return m


def run_ort(model, feeds, opt_path):
    """ORT's output, and the op types of the graph it optimized and ran."""
    so = ort.SessionOptions()
    so.add_session_config_entry("session.qdqisint8allowed", "1")  # fuse int8 QDQ on x86 too
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.optimized_model_filepath = opt_path
    so.log_severity_level = 3  # not the warning that the optimized model is machine specific
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    y = sess.run(None, feeds)[0]
    ops = [n.op_type for n in onnx.load(opt_path).graph.node]
    return y, ops


def check_integer(p, ops):
    """'' when ORT ran the conv (and the Add) with its integer kernels, else why not."""
    if ops.count("QLinearConv") != 1:
        return f"optimized graph has {ops.count('QLinearConv')} QLinearConv: {ops}"
    if p["residual"] is not None and ops.count("QLinearAdd") != 1:
        return f"residual Add was not fused into QLinearAdd: {ops}"
    other = sorted(set(ops) - INT_OPS)
    if other:
        return f"float ops left in the optimized graph: {other}: {ops}"
    return ""


def describe(p):
    keys = "form dt nd n c k group in kernel stride pads dil per_channel zx zw xs ws ts zt act".split()
    keys += "ties near_ties probe".split()
    d = {k: p[k] for k in keys}
    d["ws"] = [float(v) for v in p["ws"]]
    d["bias"] = None if p["bias"] is None else [int(v) for v in p["bias"]]
    if p["residual"]:
        d.update(
            residual=p["residual"],
            rs=p["rs"],
            zr=p["zr"],
            ys=p["ys"],
            zy=p["zy"],
            post=p["post"],
            near_ties_add=p["near_ties_add"],
        )
    return ", ".join(f"{k}={float(v) if isinstance(v, np.floating) else v}" for k, v in d.items())


def first_diffs(got, want, emu, limit=6, name="convtune"):
    idx = np.argwhere(got != want)
    lines = []
    for pos in idx[:limit]:
        pos = tuple(int(v) for v in pos)
        lines.append(
            f"    at {pos}: {name} {int(got[pos])}, ORT {int(want[pos])}, emulation {int(emu[pos])}"
        )
    return f"  {len(idx)} of {want.size} elements differ\n" + "\n".join(lines)


def run_driver(driver, base, model, x, r):
    """The driver's output for a case, or (None, why)."""
    onnx.save(model, base + ".onnx")
    x.tofile(base + ".x.bin")
    cmd = [driver, base + ".onnx", base + ".x.bin"]
    if r is not None:
        r.tofile(base + ".r.bin")
        cmd.append(base + ".r.bin")
    cmd.append(base + ".out.bin")
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        return None, f"driver exited {res.returncode}: {(res.stderr or res.stdout).strip()}"
    return np.fromfile(base + ".out.bin", dtype=x.dtype), res.stdout.strip()


def driver_rejects(driver, base, has_residual):
    """The driver refuses inputs that do not fit the model (case 0's files):
    a short data file, a missing or extra residual, a bad command line.
    Returns the failures, one line each."""
    bad = []
    data = open(base + ".x.bin", "rb").read()
    with open(base + ".short.bin", "wb") as f:
        f.write(data[:-1])
    model, x, out = base + ".onnx", base + ".x.bin", base + ".rej.bin"
    res = [base + ".r.bin"] if has_residual else []
    for args, want in [
        ([model, base + ".short.bin"] + res + [out], "bytes"),
        ([model, x, out] if has_residual else [model, x, x, out], "residual"),
        ([model], "usage"),
    ]:
        run = subprocess.run([driver] + args, capture_output=True, text=True)
        if run.returncode == 0 or want not in run.stderr:
            bad.append(f"driver {args[1:]}: exit {run.returncode}, stderr {run.stderr.strip()!r}")
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("driver", nargs="?", help="the onnx_oracle driver")
    ap.add_argument("--cases", type=int, default=240)
    ap.add_argument("--seed", type=int, default=32)
    ap.add_argument("--grouped", type=int, default=48, help="cases with group > 1, after them")
    ap.add_argument("--keep", help="write every case's model and inputs under this directory")
    ap.add_argument("--emulate-only", action="store_true", help="ORT against the emulation only")
    args = ap.parse_args()
    if not args.driver and not args.emulate_only:
        ap.error("the driver is required (or --emulate-only)")
    print(
        f"oracle: onnxruntime {ort.__version__}, onnx {onnx.__version__}, numpy {np.__version__}; "
        f"seed {args.seed}, {args.cases} cases and {args.grouped} grouped"
    )
    rng = np.random.default_rng(args.seed)
    tmp = tempfile.TemporaryDirectory(prefix="ct_oracle_")
    work = args.keep or tmp.name
    os.makedirs(work, exist_ok=True)
    passed = failed = invalid = emu_bad = 0
    coverage = {}
    shown = 0

    def report(kind, i, p, detail, diffs=""):
        nonlocal shown
        if shown < 5:
            shown += 1
            print(f"{kind} case {i} (seed {args.seed}): {detail}\n  {describe(p)}")
            if diffs:
                print(diffs)

    first_has_residual = False
    for i in range(args.cases + args.grouped):
        p, x, r = make_case(rng, i, grouped=i >= args.cases)
        if i == 0:
            first_has_residual = r is not None
        model = build_model(p)
        base = os.path.join(work, f"case{i:04d}")
        want, ops = run_ort(model, {"x": x} if r is None else {"x": x, "r": r}, base + ".opt.onnx")
        why = check_integer(p, ops)
        if why:  # never skipped: the case would test nothing
            invalid += 1
            report("INVALID", i, p, f"ORT did not run integer kernels: {why}")
            continue
        emu = emulate(p, x, r)
        for feat in features(p):
            coverage[feat] = coverage.get(feat, 0) + 1
        if not np.array_equal(emu, want):
            emu_bad += 1
            report(
                "EMULATION",
                i,
                p,
                "the float32 emulation differs from ORT",
                first_diffs(emu, want, emu, name="emulation"),
            )
        if args.emulate_only:
            passed += np.array_equal(emu, want)
            failed += not np.array_equal(emu, want)
            continue
        got, line = run_driver(args.driver, base, model, x, r)
        if got is None or got.size != want.size:
            failed += 1
            report(
                "FAIL",
                i,
                p,
                line
                if got is None
                else f"driver wrote {got.size} elements, ORT {want.size} {list(want.shape)}",
            )
        elif np.array_equal(got.reshape(want.shape), want):
            passed += 1
        else:
            failed += 1
            report("FAIL", i, p, line, first_diffs(got.reshape(want.shape), want, emu))
    print("oracle: coverage: " + ", ".join(f"{k} {v}" for k, v in sorted(coverage.items())))
    wanted = [f for f in ALL_FEATURES if args.grouped >= 16 or f not in ("grouped", "depthwise")]
    missing = [f for f in wanted if coverage.get(f, 0) == 0] if args.cases >= 200 else []
    if missing:
        print(f"oracle: features never exercised: {missing}")
    rejects = []
    if not args.emulate_only:
        rejects = driver_rejects(args.driver, os.path.join(work, "case0000"), first_has_residual)
    for line in rejects:
        print(f"oracle: {line}")
    print(
        f"oracle: {passed} passed, {failed} failed"
        + (f", {invalid} invalid" if invalid else "")
        + (f" (emulation differs from ORT on {emu_bad})" if emu_bad else "")
    )
    ok = not (failed or invalid or emu_bad or missing or rejects) and passed > 0
    if not ok:
        print(
            f"oracle: rerun with --seed {args.seed} --cases {args.cases} --grouped {args.grouped} "
            "--keep DIR for the files"
        )
    return 0 if ok else 1


ALL_FEATURES = (
    "qdq qlinear uint8 int8 conv2d conv3d per-tensor per-channel bias no-bias relu clip "
    "residual-first residual-second post-relu post-clip ties near-ties near-ties-add batch>1 "
    "stride2 padding dilation weight-zp saturated grouped depthwise"
).split()


def features(p):
    f = [
        p["form"],
        p["dt"],
        f"conv{p['nd']}d",
        "per-channel" if p["per_channel"] else "per-tensor",
        "bias" if p["bias"] is not None else "no-bias",
    ]
    if p["act"] == "relu":
        f.append("relu")
    elif p["act"] is not None:
        f.append("clip")
    if p["residual"]:
        f.append("residual-" + p["residual"])
    if p["post"] == "relu":
        f.append("post-relu")
    elif p["post"]:
        f.append("post-clip")
    if p["ties"]:
        f.append("ties")
    if p["near_ties"]:
        f.append("near-ties")
    if p["residual"] and p["near_ties_add"]:
        f.append("near-ties-add")
    if p["n"] > 1:
        f.append("batch>1")
    if max(p["stride"]) > 1:
        f.append("stride2")
    if max(p["pads"]) > 0:
        f.append("padding")
    if max(p["dil"]) > 1:
        f.append("dilation")
    if p["zw"] != 0:
        f.append("weight-zp")
    if p["saturated"]:
        f.append("saturated")
    if p["group"] > 1:
        f.append("depthwise" if p["group"] == p["c"] else "grouped")
    return f


if __name__ == "__main__":
    sys.exit(main())
