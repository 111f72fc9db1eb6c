"""convtune.Workload against the command line's own reading of the same text."""

import json

import pytest

import convtune
from convtune import ConvtuneError, Workload

# the CLI's view of whole shipped sets: every key, JSON object, shape and op count
SETS = [("resnet50", "conv2d"), ("resnet3d18", "conv3d"), ("mobilenetv2", "conv2d"),
        ("resnext50_g", "conv2d")]
LAYOUTS = {"conv2d": ["nchw", "nhwc"], "conv3d": ["ncdhw", "ndhwc"]}


@pytest.mark.parametrize("name,op", SETS)
@pytest.mark.parametrize("plain", [True, False])
def test_set_keys_json_shapes_and_ops_match_the_cli(name, op, plain):
    layout = LAYOUTS[op][0 if plain else 1]
    rows = convtune.workload_info(None, set=name, batch=4, layout=layout, out="int8",
                                  epilogue="bias,qc")
    assert len(rows) > 5
    for row in rows:
        by_key = Workload(row["key"])
        by_json = Workload(row["workload"])
        assert by_key == by_json
        assert by_key.key == row["key"]
        assert by_key.to_json() == row["workload"]
        assert list(by_key.output_shape) == row["out_shape"]
        assert by_key.ops == row["ops"]


def test_keywords_json_text_dict_and_key_agree():
    fields = dict(op="conv3d", c=64, k=128, d=8, h=28, w=28, kernel=3, stride=[1, 2, 2], pad=1,
                  layout="ndhwc", data_type="uint8", out_type="int8", data_zero_point=True,
                  bias=True, scale="channel", residual=True, rounding="onnx", n=2)
    a = Workload(**fields)
    b = Workload(fields)
    c = Workload(json.dumps(fields))
    d = Workload(a.key)
    e = Workload.from_json(a.to_json())
    assert a == b == c == d == e and len({a, b, c, d, e}) == 1
    assert a.key == ("conv3d-ndhwc-u8.i8.i8-n2-c64-k128-8x28x28-r3x3x3-s1x2x2-p1x1x1.1x1x1-d1x1x1"
                     "-zd-bias-qc-res-onnx")
    assert a.output_shape == (2, 8, 14, 14, 128)
    assert a.data_shape == (2, 8, 28, 28, 64) and a.weight_shape == (128, 3, 3, 3, 64)
    assert a.op == "conv3d" and a.nd == 3 and a.layout == "ndhwc" and a.residual
    info = convtune.workload_info(a)
    assert info[0]["key"] == a.key and info[0]["ops"] == a.ops


def test_layout_shapes():
    w = Workload(op="conv2d", c=6, k=10, h=9, w=7, kernel=[3, 1], groups=2, pad=[1, 0, 1, 0])
    assert w.data_shape == (1, 6, 9, 7) and w.weight_shape == (10, 3, 3, 1)
    assert w.output_shape == (1, 10, 9, 7)
    p = Workload(op="conv2d", c=8, k=12, h=9, w=7, kernel=3, layout="nchw4c")
    assert p.data_shape == (1, 2, 9, 7, 4) and p.weight_shape == (3, 2, 3, 3, 4, 4)
    assert p.output_shape == (1, 3, 7, 5, 4)


def test_refusals_carry_the_librarys_message():
    with pytest.raises(ConvtuneError, match="unknown field 'strid'") as e:
        Workload(op="conv2d", c=64, k=64, h=56, w=56, kernel=3, strid=2)
    assert e.value.status_name == "CT_ERR_INVALID_WORKLOAD" and e.value.status == -2
    with pytest.raises(ConvtuneError, match="field 'c' must be an integer from 1"):
        Workload(op="conv2d", c=0, k=64, h=56, w=56, kernel=3)
    with pytest.raises(ConvtuneError) as e:  # a key out of canonical form names the canonical one
        Workload("conv2d-nchw4c-i8.i8.i32-n16-c64-k64-56x56-r3x3-s2x2-p1x1-d1x1")
    assert e.value.status_name == "CT_ERR_PARSE" and "p1x1.1x1" in str(e.value)
    with pytest.raises(ConvtuneError, match="not a JSON object"):
        Workload.from_json("conv2d-nchw")
    with pytest.raises(ConvtuneError, match="is JSON"):
        Workload.from_key('{"op": "conv2d"}')
    with pytest.raises(TypeError, match="not both"):
        Workload("conv2d-x", c=3)
    with pytest.raises(TypeError):
        Workload()
    with pytest.raises(TypeError, match="not int"):
        Workload(3)


def test_version_is_the_packages():
    assert convtune.version() == convtune.__version__


# ---- a fused pointwise convolution (pre) ---------------------------------------

FUSED = [
    # MobileNetV2's expansion 24 -> 144 before its depthwise 3x3, as ONNX Runtime quantizes it
    "conv2d-nhwc-i8.i8.i8-n32-c144-k144-56x56-r3x3-s1x1-p1x1.1x1-d1x1-bias-qc-onnx-g144"
    "-pre24.i8.bias.qc.onnx",
    "conv2d-nhwc-u8.i8.u8-n1-c12-k12-9x9-r3x3-s1x1-p1x1.1x1-d1x1-zd-g12-pre7.u8.zd.zw.bias.qc.onnx",
    "conv2d-nhwc-i8.i8.i32-n1-c12-k10-9x9-r3x3-s1x1-p1x1.1x1-d1x1-pre7.i8",
    "conv3d-ndhwc-i8.i8.i8-n2-c8-k8-4x9x9-r3x3x3-s1x2x2-p1x1x1.1x1x1-d1x1x1-g8-pre5.u8.zd",
]


@pytest.mark.parametrize("key", FUSED)
def test_fused_keys_round_trip_and_match_the_cli(key):
    w = Workload(key)
    assert w.key == key
    assert Workload(w.to_json()) == w
    assert Workload.from_json(json.dumps(w.to_json())).key == key
    assert w.pre_c > 0 and w.to_json()["pre"]["c"] == w.pre_c
    row = convtune.workload_info(w)[0]  # the command's own reading
    assert row["key"] == key and row["workload"] == w.to_json()
    assert row["ops"] == w.ops and list(w.output_shape) == row["out_shape"]


def test_fused_keywords_and_fields():
    w = Workload(op="conv2d", n=2, c=12, k=12, groups=12, h=9, w=7, kernel=3, stride=2, pad=1,
                 layout="nhwc", data_type="uint8", out_type="int8", data_zero_point=True,
                 pre={"c": 7, "data_type": "uint8", "weight_zero_point": True, "scale": "channel"})
    assert w.key == ("conv2d-nhwc-u8.i8.i8-n2-c12-k12-9x7-r3x3-s2x2-p1x1.1x1-d1x1-zd-g12"
                     "-pre7.u8.zw.qc")
    assert w == Workload(w.key)
    assert w.pre_c == 7 and w.pre_data_type == "uint8" and w.input_type == "uint8"
    assert w.pre_epilogue == {"weight_zero_point": True, "scale": "channel"}
    assert w.to_json()["pre"] == {"c": 7, "data_type": "uint8", "weight_zero_point": True,
                                  "scale": "channel"}
    # the data holds pre_c channels; the weights and the output are the main conv's
    assert w.data_shape == (2, 9, 7, 7) and w.pre_weight_shape == (12, 7)
    assert w.weight_shape == (12, 3, 3, 1) and w.output_shape == (2, 5, 4, 12)
    # the depthwise conv's ops plus the pointwise one's on the 9x7 input
    assert w.ops == 2 * 2 * 12 * 5 * 4 * 9 + 2 * 2 * 12 * 9 * 7 * 7
    assert w.quantized
    # an int8 pointwise conv into a raw int32 conv is still quantized
    raw = Workload(op="conv2d", c=8, k=8, h=5, w=5, kernel=1, layout="nhwc", pre={"c": 3})
    assert raw.key.endswith("-d1x1-pre3.i8") and raw.quantized and raw.pre_epilogue == {}
    assert raw.input_type == "int8" and raw.data_shape == (1, 5, 5, 3)
    plain = Workload(op="conv2d", c=8, k=8, h=5, w=5, kernel=1, layout="nhwc")
    assert plain.pre_c == 0 and plain.pre_data_type is None and plain.pre_epilogue is None
    assert plain.pre_weight_shape is None and "pre" not in plain.to_json() and not plain.quantized
    assert plain.data_shape == (1, 5, 5, 8)


def test_fused_refusals_carry_the_librarys_message():
    dw = dict(op="conv2d", c=8, k=8, groups=8, h=7, w=7, kernel=3, pad=1, out_type="int8")
    with pytest.raises(ConvtuneError, match="needs layout nhwc; got nchw") as e:
        Workload(dict(dw, pre={"c": 4}))
    assert e.value.status_name == "CT_ERR_INVALID_WORKLOAD"
    with pytest.raises(ConvtuneError, match="needs layout nhwc; got nchw4c"):
        Workload(dict(dw, layout="nchw4c", pre={"c": 4}))
    nhwc = dict(dw, layout="nhwc")
    with pytest.raises(ConvtuneError, match="missing field 'pre.c'"):
        Workload(dict(nhwc, pre={"data_type": "uint8"}))
    with pytest.raises(ConvtuneError, match="unknown field 'pre.residual'"):
        Workload(dict(nhwc, pre={"c": 4, "residual": True}))
    with pytest.raises(ConvtuneError, match="'pre.data_type' must be one of int8, uint8"):
        Workload(dict(nhwc, pre={"c": 4, "data_type": "int32"}))
    with pytest.raises(ConvtuneError, match="'pre.c' must be an integer from 1 to 65536"):
        Workload(dict(nhwc, pre={"c": 0}))
    with pytest.raises(ConvtuneError, match="'pre' must be an object"):
        Workload(dict(nhwc, pre=4))
    with pytest.raises(ConvtuneError, match="in 'pre': field 'bias' must be true or false"):
        Workload(dict(nhwc, pre={"c": 4, "bias": 1}))
    with pytest.raises(ConvtuneError) as e:  # the key's grammar names the segment
        Workload("conv2d-nhwc-i8.i8.i8-n1-c8-k8-7x7-r3x3-s1x1-p1x1.1x1-d1x1-g8-pre4")
    assert e.value.status_name == "CT_ERR_PARSE" and "malformed pre" in str(e.value)
    with pytest.raises(ConvtuneError) as e:  # -pre last: the canonical form says so
        Workload("conv2d-nhwc-i8.i8.i8-n1-c8-k8-7x7-r3x3-s1x1-p1x1.1x1-d1x1-pre4.i8-g8")
    assert e.value.status_name == "CT_ERR_PARSE" and "-g8-pre4.i8'" in str(e.value)
