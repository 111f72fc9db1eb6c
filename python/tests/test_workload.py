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
