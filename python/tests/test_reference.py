"""The library's CPU reference through the package, against NumPy formulas."""

import itertools

import numpy as np
import pytest

import convtune
from convtune import ConvtuneError, Quant, Workload
from formula import requant, wrap32


def np_conv(x, wt, w, zx=0, zw=None):
    """sum over the window of (x - zx) * (w - zw[k]) in int64, NCHW / OIHW
    (any nd, groups); padding reads zx."""
    nd = w.nd
    g = w.groups
    s = w.struct
    stride, dil = s.stride[:nd], s.dilation[:nd]
    pb, pa = s.pad_before[:nd], s.pad_after[:nd]
    xs = x.astype(np.int64) - zx  # padding reads zx: 0 after the shift
    xp = np.pad(xs, [(0, 0), (0, 0)] + list(zip(pb, pa)))
    wk = wt.astype(np.int64)
    if zw is not None:
        wk = wk - np.asarray(zw, dtype=np.int64).reshape((-1,) + (1,) * (wk.ndim - 1))
    ker = wt.shape[2:]
    out_sp = [(x.shape[2 + i] + pb[i] + pa[i] - dil[i] * (ker[i] - 1) - 1) // stride[i] + 1
              for i in range(nd)]
    n, c, k = x.shape[0], x.shape[1], wt.shape[0]
    out = np.zeros((n, k, *out_sp), dtype=np.int64)
    cpg, kpg = c // g, k // g
    for tap in itertools.product(*[range(r) for r in ker]):
        sl = tuple(slice(t * d, t * d + (o - 1) * st + 1, st)
                   for t, d, o, st in zip(tap, dil, out_sp, stride))
        win = xp[(slice(None), slice(None)) + sl]
        for gi in range(g):
            taps = wk[gi * kpg:(gi + 1) * kpg][(slice(None), slice(None)) + tap]
            out[:, gi * kpg:(gi + 1) * kpg] += np.einsum(
                "nc...,kc->nk...", win[:, gi * cpg:(gi + 1) * cpg], taps)
    return out


def to_first(a, w):
    """A channels-last tensor (NHWC / OHWI) as channels-first."""
    return np.moveaxis(a, -1, 1) if w.layout in ("nhwc", "ndhwc") else a


def to_layout(a, w):
    return np.moveaxis(a, 1, -1) if w.layout in ("nhwc", "ndhwc") else a


SHAPES = [
    dict(op="conv2d", n=2, c=8, k=12, h=9, w=7, kernel=3, pad=1),
    dict(op="conv2d", n=1, c=6, k=4, h=11, w=10, kernel=[3, 2], stride=2, pad=[1, 0, 2, 1], dilation=[1, 2]),
    dict(op="conv2d", n=2, c=8, k=8, h=8, w=8, kernel=3, pad=1, groups=4),
    dict(op="conv3d", n=1, c=4, k=8, d=5, h=6, w=6, kernel=3, stride=[1, 2, 2], pad=1),
]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
def test_reference_conv_is_the_formula(shape, layout, rng):
    if shape["op"] == "conv3d":
        layout = {"nchw": "ncdhw", "nhwc": "ndhwc"}[layout]
    w = Workload(dict(shape, layout=layout))
    x = rng.integers(-128, 128, size=w.data_shape, dtype=np.int8)
    k = rng.integers(-128, 128, size=w.weight_shape, dtype=np.int8)
    got = convtune.reference_conv(w, x, k)
    want = to_layout(np_conv(to_first(x, w), to_first(k, w), w), w)
    assert got.dtype == np.int32 and got.shape == w.output_shape
    np.testing.assert_array_equal(got, wrap32(want))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("residual", [False, True])
def test_reference_qconv_gemmlowp_is_the_formula(shape, residual, rng):
    layout = "ndhwc" if shape["op"] == "conv3d" else "nhwc"
    w = Workload(dict(shape, layout=layout, data_type="uint8", out_type="int8", data_zero_point=True,
                      weight_zero_point=True, bias=True, scale="channel", residual=residual))
    x = rng.integers(0, 256, size=w.data_shape, dtype=np.uint8)
    k = rng.integers(-128, 128, size=w.weight_shape, dtype=np.int8)
    q = Quant(data_zero_point=int(rng.integers(0, 256)),
              weight_zero_points=rng.integers(-128, 128, size=w.k).tolist(),
              bias=rng.integers(-5000, 5000, size=w.k).tolist(),
              scale=(rng.uniform(0.2, 2.0, size=w.k) / 256).tolist(),
              out_zero_point=3, clamp_min=-100, clamp_max=120,
              residual_scale=0.75, residual_zero_point=-7)
    r = rng.integers(-128, 128, size=w.output_shape, dtype=np.int8) if residual else None
    got = convtune.reference_qconv(w, x, k, q, r)
    acc = np_conv(to_first(x, w), to_first(k, w), w, zx=q.data_zero_point, zw=q.weight_zero_points)
    rf = to_first(r, w) if residual else None
    want = to_layout(requant(acc, w, q, rf), w)
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, want)


def test_reference_qconv_onnx_rounding_is_the_float_formula(rng):
    w = Workload(op="conv2d", n=2, c=16, k=8, h=7, w=7, kernel=3, pad=1, layout="nhwc",
                 out_type="uint8", bias=True, scale="channel", rounding="onnx")
    # small values, so that v * 0.5 stays in range and ends in .5 for odd v: ties
    x = rng.integers(-3, 4, size=w.data_shape, dtype=np.int8)
    k = rng.integers(-3, 4, size=w.weight_shape, dtype=np.int8)
    scale = np.float32(rng.uniform(0.1, 1.0, size=w.k))
    scale[0] = np.float32(0.5)
    q = Quant(bias=rng.integers(-20, 20, size=w.k).tolist(), scale=scale.tolist(),
              out_zero_point=128, clamp_min=128, clamp_max=255)
    got = convtune.reference_qconv(w, x, k, q)
    v = wrap32(np_conv(to_first(x, w), to_first(k, w), w) + np.asarray(q.bias).reshape(1, -1, 1, 1))
    f = v.astype(np.float32) * scale.reshape(1, -1, 1, 1)  # float32 throughout
    f = np.clip(f, np.float32(q.clamp_min - 128), np.float32(q.clamp_max - 128))
    want = to_layout((np.rint(f) + 128).astype(np.int64), w)
    np.testing.assert_array_equal(got, want)
    assert np.any((f - np.floor(f) == 0.5) & (f > 0))  # ties were met, within the clamp


def fused_case(rng):
    """A pointwise conv 5 -> 12 (uint8 data with a zero point, weight zero points)
    fused before a depthwise 3x3 whose own data zero point the padding reads; the
    two convolutions as workloads of their own; random values."""
    w = Workload(op="conv2d", n=2, c=12, k=12, groups=12, h=7, w=6, kernel=3, pad=1, layout="nhwc",
                 data_type="uint8", out_type="int8", data_zero_point=True, bias=True,
                 scale="channel", pre={"c": 5, "data_type": "uint8", "data_zero_point": True,
                                       "weight_zero_point": True, "bias": True, "scale": "channel"})
    pre = Workload(op="conv2d", n=2, c=5, k=12, h=7, w=6, kernel=1, layout="nhwc",
                   data_type="uint8", out_type="uint8", data_zero_point=True,
                   weight_zero_point=True, bias=True, scale="channel")
    main = Workload({f: v for f, v in w.to_json().items() if f != "pre"})
    qp = Quant(data_zero_point=int(rng.integers(1, 256)),
               weight_zero_points=rng.integers(-128, 128, size=12).tolist(),
               bias=rng.integers(-5000, 5000, size=12).tolist(),
               scale=(rng.uniform(0.5, 1.5, size=12) / 500).tolist(),
               out_zero_point=int(rng.integers(96, 160)), clamp_min=0, clamp_max=255)
    q = Quant(data_zero_point=int(rng.integers(1, 256)),
              bias=rng.integers(-5000, 5000, size=12).tolist(),
              scale=(rng.uniform(0.5, 1.5, size=12) / 200).tolist(), out_zero_point=-3,
              pre=qp, pre_weights=rng.integers(-128, 128, size=w.pre_weight_shape, dtype=np.int8))
    x = rng.integers(0, 256, size=w.data_shape, dtype=np.uint8)
    k = rng.integers(-128, 128, size=w.weight_shape, dtype=np.int8)
    return w, pre, main, q, x, k


def test_fused_reference_is_the_two_convolutions_and_the_formula(rng):
    w, pre, main, q, x, k = fused_case(rng)
    assert w.data_shape == (2, 7, 6, 5) and w.input_type == "uint8"
    got = convtune.reference_qconv(w, x, k, q)
    # the library's two convolutions, one after the other
    mid = convtune.reference_qconv(pre, x, q.pre_weights.reshape(pre.weight_shape), q.pre)
    np.testing.assert_array_equal(got, convtune.reference_qconv(main, mid, k, q))
    # the formula of both: the intermediate t, then the depthwise conv of t with its
    # padding reading the depthwise conv's own data zero point
    acc = np_conv(to_first(x, pre), to_first(q.pre_weights.reshape(pre.weight_shape), pre), pre,
                  zx=q.pre.data_zero_point, zw=q.pre.weight_zero_points)
    t = requant(acc, pre, q.pre)
    np.testing.assert_array_equal(to_layout(t, pre), mid)
    want = requant(np_conv(t, to_first(k, main), main, zx=q.data_zero_point), main, q)
    assert got.dtype == np.int8 and got.shape == w.output_shape
    np.testing.assert_array_equal(got, to_layout(want, main))
    assert len(np.unique(mid)) > 8 and len(np.unique(got)) > 8  # not one clamped value


def test_fused_reference_refuses_what_it_cannot_take(rng):
    w, pre, main, q, x, k = fused_case(rng)
    with pytest.raises(ConvtuneError, match="Quant.pre: the workload fuses a pointwise convolution "
                                            "of 5 channels into 12"):
        convtune.reference_qconv(w, x, k, Quant(bias=[0] * 12, scale=[0.01] * 12))
    with pytest.raises(ConvtuneError, match="Quant.pre_weights: the workload fuses"):
        convtune.reference_qconv(w, x, k, Quant(bias=[0] * 12, scale=[0.01] * 12, pre=q.pre))
    bad = Quant(bias=q.bias, scale=q.scale, pre=q.pre, pre_weights=np.zeros((12, 4), np.int8))
    with pytest.raises(ConvtuneError, match=r"Quant.pre_weights: 48 values, the workload needs 12 x 5"):
        convtune.reference_qconv(w, x, k, bad)
    bad.pre_weights = np.full((12, 5), 200)
    with pytest.raises(ConvtuneError, match="Quant.pre_weights: values from 200 to 200; int8"):
        convtune.reference_qconv(w, x, k, bad)
    with pytest.raises(ConvtuneError, match=r"data: shape \(2, 7, 6, 12\), .* needs \(2, 7, 6, 5\)"):
        convtune.reference_qconv(w, np.zeros((2, 7, 6, 12), np.uint8), k, q)
    with pytest.raises(ConvtuneError, match="data: dtype int8, .* needs uint8"):
        convtune.reference_qconv(w, x.astype(np.int8), k, q)
    # the library's own check of the pointwise conv's values, with its prefix
    bad = Quant(bias=q.bias, scale=q.scale, data_zero_point=q.data_zero_point,
                pre=Quant(data_zero_point=300, weight_zero_points=q.pre.weight_zero_points,
                          bias=q.pre.bias, scale=q.pre.scale, clamp_min=0, clamp_max=255),
                pre_weights=q.pre_weights)
    with pytest.raises(ConvtuneError, match="pre: data_zero_point is 300") as e:
        convtune.reference_qconv(w, x, k, bad)
    assert e.value.status_name == "CT_ERR_INVALID_ARG"
    raw = Workload(op="conv2d", c=8, k=8, h=5, w=5, kernel=1, layout="nhwc", pre={"c": 3})
    with pytest.raises(ConvtuneError, match="fused pointwise convolution: use reference_qconv"):
        convtune.reference_conv(raw, np.zeros(raw.data_shape, np.int8), np.zeros(raw.weight_shape, np.int8))


class DeviceArray:
    """A stand-in for a CUDA array: the interface's metadata, no memory."""

    def __init__(self, shape, typestr):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (0, False), "version": 3}


def test_reference_refuses_what_it_cannot_take(rng):
    w = Workload(op="conv2d", c=8, k=8, h=6, w=6, kernel=3, layout="nhwc")
    x = rng.integers(-128, 128, size=w.data_shape, dtype=np.int8)
    k = rng.integers(-128, 128, size=w.weight_shape, dtype=np.int8)
    with pytest.raises(ConvtuneError, match=r"data: shape \(1, 8, 6, 6\), .* needs \(1, 6, 6, 8\) \(nhwc\)"):
        convtune.reference_conv(w, np.moveaxis(x, -1, 1), k)
    with pytest.raises(ConvtuneError, match="weights: dtype int16, .* needs int8"):
        convtune.reference_conv(w, x, k.astype(np.int16))
    with pytest.raises(ConvtuneError, match="a device array; the reference runs on host"):
        convtune.reference_conv(w, DeviceArray(w.data_shape, "|i1"), k)
    q8 = Workload(op="conv2d", c=8, k=8, h=6, w=6, kernel=3, layout="nhwc", out_type="int8",
                  residual=True)
    with pytest.raises(ConvtuneError, match="use reference_qconv"):
        convtune.reference_conv(q8, x, k)
    with pytest.raises(ConvtuneError, match="adds a residual; none was given"):
        convtune.reference_qconv(q8, x, k, Quant(scale=[0.01]))
    with pytest.raises(ConvtuneError, match="no residual; one was given"):
        convtune.reference_qconv(w, x, k, None, np.zeros(w.output_shape, np.int32))
    with pytest.raises(ConvtuneError, match="Quant.bias: 3 values, the workload needs 8"):
        b = Workload(op="conv2d", c=8, k=8, h=6, w=6, kernel=3, layout="nhwc", bias=True)
        convtune.reference_qconv(b, x, k, Quant(bias=[1, 2, 3]))
    # the library's own refusal: a scale out of range, with its message
    with pytest.raises(ConvtuneError) as e:
        one = Workload(op="conv2d", c=8, k=8, h=6, w=6, kernel=3, layout="nhwc", out_type="int8")
        convtune.reference_qconv(one, x, k, Quant(scale=[-1.0]))
    assert e.value.status_name == "CT_ERR_INVALID_ARG" and "scale" in str(e.value)


def test_quantize_multiplier():
    assert convtune.quantize_multiplier(0.5) == (2**30, 0)
    m, s = convtune.quantize_multiplier(0.3)
    assert 2**30 <= m < 2**31 and abs(m * 2.0 ** (s - 31) - 0.3) < 1e-9
    with pytest.raises(ConvtuneError):
        convtune.quantize_multiplier(-1.0)
