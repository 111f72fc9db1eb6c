#!/usr/bin/env python3
"""onnx_seeds.py: small ONNX models for the fuzz_onnx seed corpus, in the
forms that tests/data's two (QDQ network, float Convs) do not cover:
  qlinear.onnx:     QLinearConv (uint8) with a bias, then DepthToSpace;
  convinteger.onnx: ConvInteger with zero points, 2 x 2 stride and
                    asymmetric pads, its int32 output cast and scaled;
  qdq_clip.onnx:    QDQ Conv with a per-channel weight scale and a Clip,
                    a residual Add (QDQ) and a conv3d.
Weights are tiny (a few channels), so that each file stays under 2 KB.
Run with the onnx package (.venv-test has it):
  .venv-test/bin/python tests/fuzz/onnx_seeds.py tests/fuzz/corpus/fuzz_onnx
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.RandomState(1)


def model(nodes, inits, inputs, outputs, name):
    g = helper.make_graph(nodes, name, inputs, outputs,
                          [numpy_helper.from_array(a, n) for n, a in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def qlinear():
    w = rng.randint(-8, 8, (8, 4, 3, 3)).astype(np.int8)
    inits = [("xs", np.array(0.5, np.float32)), ("xz", np.array(128, np.uint8)),
             ("w", w), ("ws", np.array(0.25, np.float32)), ("wz", np.array(0, np.int8)),
             ("ys", np.array(1.0, np.float32)), ("yz", np.array(120, np.uint8)),
             ("b", rng.randint(-50, 50, 8).astype(np.int32))]
    nodes = [helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"],
                              ["c"], name="qconv", pads=[1, 1, 1, 1]),
             helper.make_node("DepthToSpace", ["c"], ["y"], name="d2s", blocksize=2, mode="DCR")]
    x = helper.make_tensor_value_info("x", TensorProto.UINT8, ["N", 4, 6, 6])
    y = helper.make_tensor_value_info("y", TensorProto.UINT8, ["N", 2, 12, 12])
    return model(nodes, inits, [x], [y], "qlinear")


def convinteger():
    w = rng.randint(-8, 8, (4, 3, 3, 2)).astype(np.int8)
    inits = [("w", w), ("xz", np.array(3, np.uint8)), ("wz", np.array(0, np.int8)),
             ("s", np.array(0.125, np.float32))]
    nodes = [helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["acc"], name="ci",
                              strides=[2, 2], pads=[1, 0, 2, 1], dilations=[1, 2]),
             helper.make_node("Cast", ["acc"], ["f"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["f", "s"], ["y"])]
    x = helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 3, 9, 7])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 5, 3])
    return model(nodes, inits, [x], [y], "convinteger")


def qdq_clip():
    def q(t, s, out):
        return helper.make_node("QuantizeLinear", [t, s, "z8"], [out])

    def dq(t, s, out, axis=None):
        kw = {"axis": axis} if axis is not None else {}
        return helper.make_node("DequantizeLinear", [t, s, "z8" if axis is None else "wz"], [out],
                                **kw)

    w = rng.randint(-20, 20, (4, 4, 3, 3, 3)).astype(np.int8)
    inits = [("z8", np.array(0, np.int8)), ("s", np.array(0.05, np.float32)),
             ("w", w), ("ws", (rng.rand(4) * 0.01 + 0.001).astype(np.float32)),
             ("wz", np.zeros(4, np.int8)), ("lo", np.array(0.0, np.float32)),
             ("hi", np.array(6.0, np.float32))]
    nodes = [q("x", "s", "xq"), dq("xq", "s", "xf"),
             dq("w", "ws", "wf", axis=0),
             helper.make_node("Conv", ["xf", "wf"], ["c"], name="conv3d", pads=[1] * 6),
             helper.make_node("Clip", ["c", "lo", "hi"], ["r"], name="clip"),
             q("r", "s", "rq"), dq("rq", "s", "rf"),
             helper.make_node("Add", ["rf", "xf"], ["a"], name="add"),
             q("a", "s", "aq"), dq("aq", "s", "y")]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 3, 5, 5])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4, 3, 5, 5])
    return model(nodes, inits, [x], [y], "qdq_clip")


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    for name, make in [("qlinear", qlinear), ("convinteger", convinteger), ("qdq_clip", qdq_clip)]:
        onnx.save(make(), os.path.join(out, name + ".onnx"))
