#!/usr/bin/env python3
"""grouped_models.py: QDQ models with grouped and depthwise convs, built with
onnx.helper directly (no torch, no torchvision, no calibration).

  grouped_models.py tiny [DIR]            DIR/tiny_grouped_qdq.onnx (tests/data)
  grouped_models.py mobilenetv2 OUT.onnx  [--batch N] [--seed S]

tiny_grouped_qdq.onnx: a MobileNetV2 inverted-residual block and two more
grouped convs, int8 activations (zero points 0), per-channel int8 weights,
int32 biases through DequantizeLinear, symbolic batch, input 1x8x12x12:
  pw expand 1x1 8->48, Clip(0, 6) -> dw 3x3 (group 48), Clip(0, 6) ->
  pw project 1x1 48->8 -> Add(x) -> dwm 3x3 stride 2 (group 8, K 16: a
  channel multiplier of 2), Relu -> g4 3x3 (16 -> 16 in 4 groups).
The file is committed; the CPU tests read it (tests/test_model.c).

mobilenetv2: torchvision's MobileNetV2 (width 1.0, 224x224 input) conv for
conv: the stem 3x3 stride 2 (3 -> 32), 17 inverted-residual blocks (t, c,
n, s = 1,16,1,1 6,24,2,2 6,32,3,2 6,64,4,2 6,96,3,1 6,160,3,2 6,320,1,1:
expand 1x1 + Relu6 where t > 1, depthwise 3x3 + Relu6, project 1x1, the
residual Add where the stride is 1 and the channels stay), the last 1x1
320 -> 1280 + Relu6, then GlobalAveragePool, Flatten and a float Gemm: 52
convs, 17 of them depthwise. Laid out as ONNX Runtime's quantize_static
lays out its s8 variant (scripts/models/README.md): Conv -> Q -> DQ ->
Clip(0, 6) -> Q with the same scale on both sides (a clamp), the Add as
DQ + DQ -> Add -> Q. Weights are seeded random int8 with per-channel scales,
biases random int32; weight and activation scales are set from the fan-in
so that outputs spread over the int8 range without calibration. For `convtune
bench --model` (and `convtune model`), and for ONNX Runtime to compare
against: every conv must become a QLinearConv there (--check says).

Needs numpy and onnx (onnxruntime for --check). Same versions and seed give
the same bytes.
"""
import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# Stddev of a uniform int8 weight in [-127, 127] and of an activation that
# spreads over the int8 range (what the scales aim at).
W_STD = 73.0
X_STD = 40.0


class Builder:
    def __init__(self, seed):
        self.rng = np.random.RandomState(seed)
        self.nodes, self.inits = [], []
        self.n_convs = 0

    def const(self, name, array):
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def node(self, op, ins, out, **attrs):
        self.nodes.append(helper.make_node(op, ins, [out], name=out + "_" + op, **attrs))
        return out

    def q(self, x, scale, out):
        s = self.const(out + "_s", np.array(scale, np.float32))
        z = self.const(out + "_z", np.array(0, np.int8))
        return self.node("QuantizeLinear", [x, s, z], out)

    def dq(self, xq, scale, out):
        s = self.const(out + "_s", np.array(scale, np.float32))
        z = self.const(out + "_z", np.array(0, np.int8))
        return self.node("DequantizeLinear", [xq, s, z], out)

    def conv(self, name, xq, xs, c, k, r, stride=1, group=1):
        """A QDQ conv on int8 xq (scale xs): its quantized output and scale."""
        self.n_convs += 1
        cpg = c // group
        w = self.rng.randint(-127, 128, size=(k, cpg, r, r)).astype(np.int8)
        fan_in = cpg * r * r
        # per-channel scales around 1 / (sqrt(fan_in) x W_STD), uneven (a
        # folded BatchNorm's): the real values keep their size conv after
        # conv, so that 52 of them neither blow up nor die at Relu6
        ws = (self.rng.uniform(0.5, 1.5, k) / (np.sqrt(fan_in) * W_STD)).astype(np.float32)
        b = self.rng.randint(-int(X_STD * W_STD), int(X_STD * W_STD) + 1, size=(k,))
        wq = self.const(name + "_wq", w)
        wsn = self.const(name + "_ws", ws)
        wz = self.const(name + "_wz", np.zeros(k, np.int8))
        bq = self.const(name + "_bq", b.astype(np.int32))
        bs = self.const(name + "_bs", (np.float32(xs) * ws).astype(np.float32))
        bz = self.const(name + "_bz", np.zeros(k, np.int32))
        x = self.dq(xq, xs, name + "_x")
        wf = self.node("DequantizeLinear", [wq, wsn, wz], name + "_w", axis=0)
        bf = self.node("DequantizeLinear", [bq, bs, bz], name + "_b", axis=0)
        pad = r // 2
        y = self.node("Conv", [x, wf, bf], name + "_out", kernel_shape=[r, r], strides=[stride] * 2,
                      pads=[pad] * 4, group=group)
        # the output's scale: its stddev lands at X_STD quantized steps
        ys = float(np.float32(xs * float(np.mean(ws)) * np.sqrt(fan_in) * W_STD))
        return self.q(y, ys, name + "_q"), ys

    def act(self, tq, s, kind, name):
        """DQ -> Relu / Clip(0, 6) -> Q with the same scale: a clamp."""
        f = self.dq(tq, s, name + "_dq")
        if kind == "relu":
            a = self.node("Relu", [f], name + "_relu")
        else:
            lo = self.const(name + "_lo", np.array(0, np.float32))
            hi = self.const(name + "_hi", np.array(6, np.float32))
            a = self.node("Clip", [f, lo, hi], name + "_clip")
        return self.q(a, s, name + "_aq")

    def add(self, aq, a_s, bq, b_s, name):
        """DQ + DQ -> Add -> Q: the residual second, as torchvision's."""
        fa = self.dq(aq, a_s, name + "_a")
        fb = self.dq(bq, b_s, name + "_b")
        ys = float(np.float32(np.hypot(a_s, b_s)))
        return self.q(self.node("Add", [fa, fb], name + "_add"), ys, name + "_q"), ys

    def save(self, graph_name, inputs, outputs, path):
        graph = helper.make_graph(self.nodes, graph_name, inputs, outputs, self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                                  producer_name="grouped_models.py")
        model.ir_version = 7
        onnx.checker.check_model(model)
        onnx.save(model, path)
        print(f"{path}: {self.n_convs} convs, {os.path.getsize(path)} bytes")


def inverted_residual(b, name, xq, xs, c, k, t, stride):
    """torchvision's InvertedResidual: its output and scale."""
    h, hs = xq, xs
    hidden = c * t
    if t != 1:
        h, hs = b.conv(name + "_expand", h, hs, c, hidden, 1)
        h = b.act(h, hs, "relu6", name + "_expand")
    h, hs = b.conv(name + "_dw", h, hs, hidden, hidden, 3, stride, group=hidden)
    h = b.act(h, hs, "relu6", name + "_dw")
    h, hs = b.conv(name + "_project", h, hs, hidden, k, 1)
    if stride == 1 and c == k:
        h, hs = b.add(h, hs, xq, xs, name + "_res")
    return h, hs


def tiny(out_dir):
    b = Builder(0)
    xs = 1 / 32
    xq = b.q("x", xs, "x_q")
    h, hs = inverted_residual(b, "ir", xq, xs, 8, 8, 6, 1)
    h, hs = b.conv("dwm", h, hs, 8, 16, 3, 2, group=8)
    h = b.act(h, hs, "relu", "dwm")
    h, hs = b.conv("g4", h, hs, 16, 16, 3, 1, group=4)
    b.dq(h, hs, "y")
    os.makedirs(out_dir, exist_ok=True)
    b.save("tiny_grouped_qdq",
           [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8, 12, 12])],
           [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 16, 6, 6])],
           os.path.join(out_dir, "tiny_grouped_qdq.onnx"))


# torchvision's inverted_residual_setting: expansion t, channels c, repeats n, stride s
MOBILENETV2 = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
               (6, 160, 3, 2), (6, 320, 1, 1)]


def mobilenetv2(path, batch, seed):
    b = Builder(seed)
    xs = 1 / 32  # normalized images, N(0, 1), quantized
    h = b.q("input", xs, "input_q")
    h, hs = b.conv("stem", h, xs, 3, 32, 3, 2)
    h = b.act(h, hs, "relu6", "stem")
    c, blk = 32, 0
    for t, k, n, s in MOBILENETV2:
        for i in range(n):
            h, hs = inverted_residual(b, f"block{blk}", h, hs, c, k, t, s if i == 0 else 1)
            c, blk = k, blk + 1
    h, hs = b.conv("last", h, hs, c, 1280, 1)
    h = b.act(h, hs, "relu6", "last")
    f = b.dq(h, hs, "last_f")
    b.node("GlobalAveragePool", [f], "gap")
    b.node("Flatten", ["gap"], "flat", axis=1)
    b.const("fc_w", (b.rng.randn(1000, 1280) * 0.01).astype(np.float32))
    b.const("fc_b", np.zeros(1000, np.float32))
    b.node("Gemm", ["flat", "fc_w", "fc_b"], "logits", transB=1)
    assert b.n_convs == 52, b.n_convs
    bd = batch if batch > 0 else "batch"
    b.save("mobilenetv2_qdq",
           [helper.make_tensor_value_info("input", TensorProto.FLOAT, [bd, 3, 224, 224])],
           [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [bd, 1000])], path)


def check(path, batch):
    """Run path in ONNX Runtime (int8 QDQ fusion allowed): every Conv must run
    as QLinearConv, the output must be finite. 0 when so."""
    import onnxruntime as ort
    import tempfile
    so = ort.SessionOptions()
    so.add_session_config_entry("session.qdqisint8allowed", "1")
    so.log_severity_level = 3
    with tempfile.TemporaryDirectory() as d:
        so.optimized_model_filepath = os.path.join(d, "opt.onnx")
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        inp = sess.get_inputs()[0]
        shape = [batch if not isinstance(v, int) else v for v in inp.shape]
        x = np.random.RandomState(1).randn(*shape).astype(np.float32)
        y = sess.run(None, {inp.name: x})[0]
        ops = [n.op_type for n in onnx.load(so.optimized_model_filepath).graph.node]
    n_conv = sum(n.op_type == "Conv" for n in onnx.load(path).graph.node)
    n_ql = ops.count("QLinearConv")
    ok = n_ql == n_conv and np.isfinite(y).all()
    print(f"{path}: ORT {ort.__version__}: {n_ql} of {n_conv} convs as QLinearConv, output "
          f"{list(y.shape)} std {float(np.std(y)):.4g}: {'ok' if ok else 'FAILED'}")
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=["tiny", "mobilenetv2"])
    ap.add_argument("out", nargs="?", help="tiny: a directory (tests/data); mobilenetv2: a file")
    ap.add_argument("--batch", type=int, default=0, help="a fixed batch (default: symbolic)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--check", action="store_true", help="run it in ONNX Runtime")
    a = ap.parse_args()
    if a.what == "tiny":
        out = a.out or "tests/data"
        tiny(out)
        path = os.path.join(out, "tiny_grouped_qdq.onnx")
    else:
        path = a.out or "mobilenetv2_qdq.onnx"
        mobilenetv2(path, a.batch, a.seed)
    return check(path, a.batch or 2) if a.check else 0


if __name__ == "__main__":
    sys.exit(main())
