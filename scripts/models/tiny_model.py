#!/usr/bin/env python3
"""tiny_model.py: the tiny ONNX models that the CPU tests read (tests/data/).

tiny_qdq.onnx: a QDQ network of six convs as ONNX Runtime's quantize_static
lays them out (int8 activations, symmetric, zero points 0; per-channel int8
weights; int32 biases through DequantizeLinear), with a symbolic batch:
  stem 3x3 -> DQ/Relu/Q (same quantization: a clamp) -> MaxPool ->
  a 1x1 -> Relu -> Q -> b 3x3, and a downsample ds 1x1 beside them ->
  Add(b, ds) -> Relu -> Q -> c1 3x3 -> c2 3x3 (the same workload twice) ->
  GlobalAveragePool -> Flatten -> Gemm.
So b takes the residual (its output is the Add's first input), ds none,
and b comes after ds in the importer's order.

tiny_float.onnx: two float Convs with a Relu between, for --out/--epilogue.

The weights are random (numpy, seed 0); the files are committed, so that the
tests never need Python. Regenerate with the onnx package in a venv:
  python3 -m venv /tmp/venv && /tmp/venv/bin/pip install onnx numpy
  /tmp/venv/bin/python scripts/models/tiny_model.py tests/data
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.RandomState(0)
nodes, inits = [], []


def const(name, array):
    inits.append(numpy_helper.from_array(array, name))
    return name


def qparams(name, scale, dtype=np.int8):
    return const(name + "_s", np.array(scale, np.float32)), const(name + "_z", np.array(0, dtype))


def q(x, s, z, out):
    nodes.append(helper.make_node("QuantizeLinear", [x, s, z], [out], name=out + "_Q"))
    return out


def dq(x, s, z, out, **attrs):
    nodes.append(helper.make_node("DequantizeLinear", [x, s, z], [out], name=out + "_DQ", **attrs))
    return out


def conv(name, xq, xs, xz, c, k, r, pad, stride=1):
    """A QDQ Conv reading quantized xq: its float output's name."""
    w = rng.randint(-127, 128, size=(k, c, r, r)).astype(np.int8)
    ws = (rng.rand(k) * 0.01 + 0.001).astype(np.float32)
    b = rng.randint(-2000, 2000, size=(k,)).astype(np.int32)
    wq = const(name + "_wq", w)
    wsn = const(name + "_ws", ws)
    wz = const(name + "_wz", np.zeros(k, np.int8))
    bq = const(name + "_bq", b)
    bs = const(name + "_bs", (ws * np.float32(1 / 64)).astype(np.float32))
    x = dq(xq, xs, xz, name + "_x")
    wf = dq(wq, wsn, wz, name + "_w", axis=0)
    bf = name + "_b"  # int32 bias: DequantizeLinear without a zero point
    nodes.append(helper.make_node("DequantizeLinear", [bq, bs], [bf], name=bf + "_DQ"))
    out = name + "_out"
    nodes.append(helper.make_node("Conv", [x, wf, bf], [out], name=name, pads=[pad] * 4,
                                  strides=[stride] * 2, kernel_shape=[r, r]))
    return out


def tiny_qdq(path):
    s_in, z_in = qparams("in", 1 / 64)
    xq = q("x", s_in, z_in, "x_q")
    # stem -> Q -> DQ -> Relu -> Q (the same scale and zero point: folded)
    s1, z1 = qparams("t1", 0.05)
    t1 = q(conv("stem", xq, s_in, z_in, 3, 16, 3, 1), s1, z1, "stem_q")
    r1 = "stem_relu"
    nodes.append(helper.make_node("Relu", [dq(t1, s1, z1, "stem_dq")], [r1], name=r1))
    t1r = q(r1, s1, z1, "stem_relu_q")
    pool = "pool"
    nodes.append(helper.make_node("MaxPool", [dq(t1r, s1, z1, "pool_dq")], [pool], name=pool,
                                  kernel_shape=[2, 2], strides=[2, 2]))
    pq = q(pool, s1, z1, "pool_q")
    # a: Conv -> Relu -> Q (the Relu before the QuantizeLinear)
    s2, z2 = qparams("ta", 0.04)
    ra = "a_relu"
    nodes.append(helper.make_node("Relu", [conv("a", pq, s1, z1, 16, 16, 1, 0)], [ra], name=ra))
    ta = q(ra, s2, z2, "a_q")
    sb, zb = qparams("tb", 0.06)
    tb = q(conv("b", ta, s2, z2, 16, 32, 3, 1), sb, zb, "b_q")
    sd, zd = qparams("tds", 0.07)
    tds = q(conv("ds", pq, s1, z1, 16, 32, 1, 0), sd, zd, "ds_q")
    add = "block_add"
    nodes.append(helper.make_node("Add", [dq(tb, sb, zb, "b_dq"), dq(tds, sd, zd, "ds_dq")],
                                  [add], name=add))
    relu = "block_relu"
    nodes.append(helper.make_node("Relu", [add], [relu], name=relu))
    sy, zy = qparams("ty", 0.08)
    y = q(relu, sy, zy, "block_q")
    sc, zc = qparams("tc", 0.05)
    tc1 = q(conv("c1", y, sy, zy, 32, 32, 3, 1), sc, zc, "c1_q")
    tc2 = q(conv("c2", tc1, sc, zc, 32, 32, 3, 1), sc, zc, "c2_q")
    gap = "gap"
    nodes.append(helper.make_node("GlobalAveragePool", [dq(tc2, sc, zc, "gap_dq")], [gap],
                                  name=gap))
    nodes.append(helper.make_node("Flatten", [gap], ["flat"], name="flatten", axis=1))
    const("fc_w", rng.randn(10, 32).astype(np.float32) * 0.1)
    const("fc_b", np.zeros(10, np.float32))
    nodes.append(helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], name="fc",
                                  transB=1))
    graph = helper.make_graph(
        nodes, "tiny_qdq",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 16, 16])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 10])], inits)
    save(graph, path)


def tiny_float(path):
    del nodes[:], inits[:]
    const("w1", (rng.randn(8, 3, 3, 3) * 0.1).astype(np.float32))
    const("w2", (rng.randn(8, 8, 3, 3) * 0.1).astype(np.float32))
    nodes.append(helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1] * 4))
    nodes.append(helper.make_node("Relu", ["c1"], ["r1"], name="relu1"))
    nodes.append(helper.make_node("Conv", ["r1", "w2"], ["y"], name="conv2", strides=[2, 2],
                                  auto_pad="SAME_UPPER"))
    graph = helper.make_graph(
        nodes, "tiny_float",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 15, 15])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8, 8, 8])], inits)
    save(graph, path)


def save(graph, path):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    onnx.save(model, path)
    print(f"{path}: {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/data"
    os.makedirs(out, exist_ok=True)
    tiny_qdq(os.path.join(out, "tiny_qdq.onnx"))
    tiny_float(os.path.join(out, "tiny_float.onnx"))
