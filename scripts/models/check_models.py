#!/usr/bin/env python3
"""check_models.py: what an ONNX model file holds, for a quick look before
convtune imports it: the op histogram, whether each Conv is wrapped in QDQ
(data through DequantizeLinear, int8 weights through DequantizeLinear, an
int32 bias through DequantizeLinear, the output into QuantizeLinear), the
activations' type and zero points, and how each Relu / Clip sits between
Q/DQ. make_models.py imports it to verify what it writes.

  python3 scripts/models/check_models.py FILE.onnx... [-v] [--ort]

-v lists every conv; --ort also shows the ops ONNX Runtime's CPU provider
runs after its QDQ fusions (every quantized Conv should be a QLinearConv:
a Conv left in float is not integer-exact). Needs onnx and numpy (and
onnxruntime for --ort). Exit code 1 if a file cannot be read.
"""

import argparse
import collections
import os
import signal
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

QUANT_OPS = ("QuantizeLinear", "DequantizeLinear")


class Graph:
    """Lookups over one graph: producers, consumers, constant values."""

    def __init__(self, model):
        self.model = model
        g = model.graph
        self.inits = {t.name: t for t in g.initializer}
        self.consts = {}  # Constant node outputs
        for n in g.node:
            if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value":
                self.consts[n.output[0]] = n.attribute[0].t
        self.producer = {}
        self.consumers = collections.defaultdict(list)
        for n in g.node:
            for o in n.output:
                self.producer[o] = n
            for i in n.input:
                if i:
                    self.consumers[i].append(n)
        self.outputs = {o.name for o in g.output}

    def is_const(self, name):
        return name in self.inits or name in self.consts

    def value(self, name):
        """The constant's value as a numpy array, or None."""
        t = self.inits.get(name) or self.consts.get(name)
        return None if t is None else numpy_helper.to_array(t)

    def dtype(self, name):
        t = self.inits.get(name) or self.consts.get(name)
        return None if t is None else onnx.helper.tensor_dtype_to_np_dtype(t.data_type)

    def only_consumer(self, name):
        c = self.consumers.get(name, [])
        if len(c) == 1 and name not in self.outputs:
            return c[0]
        return None

    def from_op(self, name, op_type):
        n = self.producer.get(name)
        return n if n is not None and n.op_type == op_type else None


def attr(node, name, default=None):
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def qparams(g, node):
    """(scale array, zero point array or None, zero point dtype) of a Q/DQ node."""
    scale = g.value(node.input[1])
    zp_name = node.input[2] if len(node.input) > 2 and node.input[2] else None
    zp = g.value(zp_name) if zp_name else None
    if zp is not None:
        zdt = zp.dtype
    elif node.op_type == "DequantizeLinear" and g.is_const(node.input[0]):
        zdt = g.value(node.input[0]).dtype
    else:
        zdt = np.dtype(np.uint8)  # ONNX's default without a zero point
    return scale, zp, zdt


def same_qparams(g, a, b):
    sa, za, ta = qparams(g, a)
    sb, zb, tb = qparams(g, b)
    if sa is None or sb is None or ta != tb or sa.shape != sb.shape:
        return False
    za = np.zeros_like(sa, dtype=np.int64) if za is None else za.astype(np.int64)
    zb = np.zeros_like(sb, dtype=np.int64) if zb is None else zb.astype(np.int64)
    return bool(np.array_equal(sa, sb) and np.array_equal(za, zb))


def conv_wrap(g, node):
    """How a Conv sits in QDQ: a dict with 'wrapped' (bool) and 'why' (a
    list of what is missing), plus the weight facts."""
    r = {"wrapped": False, "why": [], "w_dtype": None, "per_channel": False, "w_zp0": False}
    x_dq = g.from_op(node.input[0], "DequantizeLinear")
    if x_dq is None or g.is_const(x_dq.input[0]):
        r["why"].append("data not from DequantizeLinear")
    w_dq = g.from_op(node.input[1], "DequantizeLinear")
    if w_dq is None or not g.is_const(w_dq.input[0]):
        r["why"].append("weights not an initializer through DequantizeLinear")
    else:
        w = g.value(w_dq.input[0])
        scale, zp, _ = qparams(g, w_dq)
        r["w_dtype"] = str(w.dtype)
        r["per_channel"] = scale.size == w.shape[0] and scale.size > 1
        r["w_zp0"] = zp is None or not np.any(zp)
        if w.dtype != np.int8:
            r["why"].append(f"weights {w.dtype}, not int8")
    if len(node.input) > 2 and node.input[2]:
        b_dq = g.from_op(node.input[2], "DequantizeLinear")
        if b_dq is None or g.dtype(b_dq.input[0]) != np.int32:
            r["why"].append("bias not int32 through DequantizeLinear")
    y = g.only_consumer(node.output[0])
    if y is None or y.op_type != "QuantizeLinear":
        r["why"].append("output not into one QuantizeLinear")
    r["wrapped"] = not r["why"]
    return r


def activation_zero_points(g):
    """Counter of (dtype, zero point) over the QuantizeLinear nodes of
    activations (inputs that are not constants)."""
    seen = collections.Counter()
    for n in g.model.graph.node:
        if n.op_type != "QuantizeLinear" or g.is_const(n.input[0]):
            continue
        _, zp, zdt = qparams(g, n)
        vals = [0] if zp is None else [int(v) for v in np.ravel(zp)]
        for v in vals:
            seen[(str(zdt), v)] += 1
    return seen


def activation_form(g, node):
    """How a Relu / Clip sits: 'clamp' (DQ -> op -> Q with the same scale
    and zero point as the Q before that DQ: the op is a clamp of the
    quantized values), 'requant' (between Q/DQ, other parameters: a second
    rounding), or 'float' (not between Q/DQ)."""
    dq = g.from_op(node.input[0], "DequantizeLinear")
    q2 = g.only_consumer(node.output[0])
    if dq is None or q2 is None or q2.op_type != "QuantizeLinear":
        return "float"
    q1 = g.from_op(dq.input[0], "QuantizeLinear")
    if q1 is None:
        return "requant"
    if node.op_type == "Clip":
        lo = g.value(node.input[1]) if len(node.input) > 1 and node.input[1] else attr(node, "min")
        if lo is None or float(np.ravel(lo)[0]) != 0.0:
            return "requant"
    return "clamp" if same_qparams(g, q1, q2) else "requant"


def shapes(model):
    """name -> dims (ints or strings) of every tensor onnx can infer."""
    try:
        inf = onnx.shape_inference.infer_shapes(model)
    except Exception:  # a model onnx cannot infer still gets its listing
        inf = model
    out = {t.name: list(t.dims) for t in inf.graph.initializer}
    vis = list(inf.graph.value_info) + list(inf.graph.input) + list(inf.graph.output)
    for vi in vis:
        if vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape"):
            out[vi.name] = [
                d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in vi.type.tensor_type.shape.dim
            ]
    return out


def fmt_dims(d):
    return "x".join(str(v) for v in d) if d is not None else "?"


def summarize(model):
    """The facts make_models.py checks and prints, as a dict."""
    g = Graph(model)
    nodes = model.graph.node
    hist = collections.Counter(n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}.{n.op_type}" for n in nodes)
    convs = [n for n in nodes if n.op_type == "Conv"]
    wraps = [conv_wrap(g, n) for n in convs]
    acts = [n for n in nodes if n.op_type in ("Relu", "Clip")]
    forms = collections.Counter(activation_form(g, n) for n in acts)
    d2s = [(attr(n, "mode", b"DCR"), attr(n, "blocksize")) for n in nodes if n.op_type == "DepthToSpace"]
    return {
        "nodes": len(nodes),
        "hist": hist,
        "convs": len(convs),
        "wrapped": sum(w["wrapped"] for w in wraps),
        "per_channel": sum(w["per_channel"] for w in wraps),
        "w_int8_zp0": sum(w["w_dtype"] == "int8" and w["w_zp0"] for w in wraps),
        "q": hist.get("QuantizeLinear", 0),
        "dq": hist.get("DequantizeLinear", 0),
        "act_zp": activation_zero_points(g),
        "act_forms": forms,
        "d2s": [(m.decode() if isinstance(m, bytes) else m, b) for m, b in d2s],
        "bn": hist.get("BatchNormalization", 0),
        "wrap_list": list(zip(convs, wraps)),
    }


def fmt_zp(act_zp):
    """'int8 {0} x120' or 'uint8 0..255 (14 distinct, 30 of 0) x70'."""
    if not act_zp:
        return "none"
    parts = []
    for dt in sorted({k[0] for k in act_zp}):
        vals = {v: c for (t, v), c in act_zp.items() if t == dt}
        total = sum(vals.values())
        if len(vals) == 1:
            parts.append(f"{dt} {{{next(iter(vals))}}} x{total}")
        else:
            parts.append(f"{dt} {min(vals)}..{max(vals)} ({len(vals)} distinct, {vals.get(0, 0)} of 0) x{total}")
    return ", ".join(parts)


def ort_fused_ops(path):
    """The op histogram of the graph ONNX Runtime's CPU provider runs
    (extended optimizations: the QDQ fusions), with int8 activations
    allowed in its fusions. Without that setting ORT decides by the CPU:
    without AVX-512 VNNI it turns int8 Q/DQ pairs into uint8 ones, and a
    conv whose int8 input also feeds a residual Add stays in float."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    so.log_severity_level = 3
    so.add_session_config_entry("session.qdqisint8allowed", "1")
    with tempfile.TemporaryDirectory() as d:
        so.optimized_model_filepath = os.path.join(d, "opt.onnx")
        ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        m = onnx.load(so.optimized_model_filepath)
    return collections.Counter(n.op_type for n in m.graph.node)


def fmt_hist(hist):
    return ", ".join(f"{k} {v}" for k, v in sorted(hist.items()))


def report(path, verbose, with_ort):
    model = onnx.load(str(path))
    s = summarize(model)
    g = model.graph
    ins = ", ".join(
        f"{i.name} [{fmt_dims(shapes_of_value(i))}]" for i in g.input if i.name not in {t.name for t in g.initializer}
    )
    opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=0)
    print(f"{path}: {s['nodes']} nodes, {os.path.getsize(path) / 1e6:.1f} MB, opset {opset}, input {ins}")
    print(f"  ops: {fmt_hist(s['hist'])}")
    print(
        f"  convs: {s['convs']}, QDQ-wrapped {s['wrapped']}, weights int8 zp 0 {s['w_int8_zp0']}, per-channel {s['per_channel']}"
    )
    print(f"  activation zero points: {fmt_zp(s['act_zp'])}")
    if s["act_forms"]:
        print(f"  Relu/Clip: {dict(s['act_forms'])} (clamp: same Q params on both sides)")
    for mode, block in s["d2s"]:
        print(f"  DepthToSpace: mode {mode}, blocksize {block}")
    if s["bn"]:
        print(f"  BatchNormalization: {s['bn']} (not folded)")
    if verbose:
        shp = shapes(model)
        gr = Graph(model)
        for node, w in s["wrap_list"]:
            dq = gr.from_op(node.input[1], "DequantizeLinear")
            wshape = shp.get(dq.input[0] if dq is not None else node.input[1])
            line = (
                f"    {node.name or '?'}: in {fmt_dims(shp.get(node.input[0]))} w {fmt_dims(wshape)}"
                f" out {fmt_dims(shp.get(node.output[0]))} s {attr(node, 'strides')} p {attr(node, 'pads')} g {attr(node, 'group', 1)}"
            )
            if not s["q"]:
                line += " float"
            else:
                line += " qdq" if w["wrapped"] else f" NOT QDQ: {'; '.join(w['why'])}"
            print(line)
    if with_ort:
        f = ort_fused_ops(path)
        print(f"  onnxruntime runs (session.qdqisint8allowed=1): {fmt_hist(f)}")
    return s


def shapes_of_value(vi):
    if not vi.type.tensor_type.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in vi.type.tensor_type.shape.dim]


def main(argv):
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("files", nargs="+")
    ap.add_argument("-v", "--verbose", action="store_true", help="list every conv")
    ap.add_argument("--ort", action="store_true", help="also show the ops onnxruntime runs after its fusions")
    a = ap.parse_args(argv)
    rc = 0
    for f in a.files:
        try:
            report(f, a.verbose, a.ort)
        except Exception as e:  # one bad file must not hide the others
            print(f"{f}: cannot read: {e}", file=sys.stderr)
            rc = 1
    return rc


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet under | head
    sys.exit(main(sys.argv[1:]))
