#!/usr/bin/env python3
"""make_models.py: the quantized CNNs convtune is tested with, made here from
random weights (nothing is downloaded): torchvision's ResNet-50, r3d_18 and
MobileNetV2 and an ESPCN-like super-resolution net that ends in
DepthToSpace, exported to ONNX and quantized to QDQ by ONNX Runtime's
quantize_static (per-channel int8 weights, MinMax on seeded random
calibration data), each in up to three ways:

  NAME.fp32.onnx     the float model (BatchNormalization folded into Conv)
  NAME.qdq-s8.onnx   int8 activations, symmetric, zero points 0 (TensorRT's
                     convention); weights int8 per-channel symmetric
  NAME.qdq-u8.onnx   uint8 activations, asymmetric (ORT's default);
                     weights int8 per-channel symmetric
  NAME.qdq-a8.onnx   int8 activations, asymmetric (ORT's QInt8 without
                     ActivationSymmetric): after a Relu the zero point is
                     -128, so padded convs read a data zero point; made
                     only when asked (--variants a8)

  python3 scripts/models/make_models.py --out DIR [--models resnet50,r3d_18,mobilenet_v2,espcn]
      [--batch-dim symbolic|N] [--calib N] [--calib-batch B] [--variants s8,u8,a8] [--seed S]
  python3 scripts/models/make_models.py --out DIR --from-onnx FILE NAME    (no torch needed)

The s8 models keep each Relu / Clip between DequantizeLinear and
QuantizeLinear (ORT removes them only from asymmetric models, where the
zero point at the type's minimum does the clamp), with the same scale on both sides (ORT
gives the Relu's input its output's range): an exact clamp of the int8
values. The check fails if a Relu would round twice.

Each file is checked (zero points, every Conv wrapped in QDQ, onnxruntime
runs every Conv as QLinearConv, output close to the float model's) and a
summary table ends the run; exit code 1 if a check failed. Cost on a 16-core
host: about 40 s for all four models with the defaults. Needs numpy,
onnx, onnxruntime; torch and torchvision unless --from-onnx.
"""

import argparse
import importlib.util
import logging
import os
import signal
import sys
import tempfile
import time
import warnings
import zlib

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_models as cm  # noqa: E402 (after the path: the same directory)

MODELS = ("resnet50", "r3d_18", "mobilenet_v2", "espcn")
# One input image (or clip) without the batch: the sizes the shipped
# workload sets use (scripts/workloads/resnet50.json, resnet3d18.json).
INPUT = {
    "resnet50": (3, 224, 224),
    "r3d_18": (3, 16, 112, 112),
    "mobilenet_v2": (3, 224, 224),
    "espcn": (3, 224, 224),
}
ESPCN_R = 4  # upscale factor: the last conv has 3 * 4 * 4 = 48 channels
OPSET = 17
VARIANTS = ("s8", "u8", "a8")
DEFAULT_VARIANTS = ("s8", "u8")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- torch part


def espcn(torch, r):
    """ESPCN (Shi et al. 2016) with Relu for its tanh, so that every
    activation folds into a conv's epilogue: 5x5 64, 3x3 32, 3x3 3*r*r,
    PixelShuffle(r) (exported as DepthToSpace, mode CRD)."""
    from collections import OrderedDict

    nn = torch.nn
    return nn.Sequential(
        OrderedDict(
            [
                ("feat", nn.Conv2d(3, 64, 5, padding=2)),
                ("relu1", nn.ReLU()),
                ("map", nn.Conv2d(64, 32, 3, padding=1)),
                ("relu2", nn.ReLU()),
                ("sub", nn.Conv2d(32, 3 * r * r, 3, padding=1)),
                ("shuffle", nn.PixelShuffle(r)),
            ]
        )
    )


def torch_model(name, seed):
    """The model in eval mode with seeded random weights. BatchNorm gets
    random statistics and affine parameters too: with torchvision's
    defaults (mean 0, var 1, gamma 1, beta 0) every folded bias would be 0
    and every channel's weights would keep the same spread, unlike a
    trained network's."""
    import torch
    import torchvision

    torch.manual_seed(seed)
    if name == "resnet50":
        m = torchvision.models.resnet50(weights=None)
    elif name == "r3d_18":
        m = torchvision.models.video.r3d_18(weights=None)
    elif name == "mobilenet_v2":
        m = torchvision.models.mobilenet_v2(weights=None)
    elif name == "espcn":
        m = espcn(torch, ESPCN_R)
    else:
        raise ValueError(f"unknown model '{name}'")
    gen = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, torch.nn.modules.batchnorm._BatchNorm):
                n = mod.num_features
                mod.weight.copy_(torch.empty(n).uniform_(0.5, 1.5, generator=gen))
                mod.bias.copy_(torch.empty(n).normal_(0.0, 0.1, generator=gen))
                mod.running_mean.copy_(torch.empty(n).normal_(0.0, 0.1, generator=gen))
                mod.running_var.copy_(torch.empty(n).uniform_(0.5, 2.0, generator=gen))
    return m.eval()


def export_torch(name, seed, path, opset, verbose):
    """Export with the TorchScript exporter (dynamo=False: it needs no
    onnxscript, and in eval mode folds BatchNorm into Conv), batch
    dimension symbolic ('batch'), traced at batch 2 so that nothing
    specializes on 1."""
    import torch

    m = torch_model(name, seed)
    x = torch.randn((2,) + INPUT[name], generator=torch.Generator().manual_seed(seed + 2))
    kw = {
        "export_params": True,
        "opset_version": opset,
        "do_constant_folding": True,
        "input_names": ["input"],
        "output_names": ["output"],
        "dynamic_axes": {"input": {0: "batch"}, "output": {0: "batch"}},
    }
    with torch.no_grad(), warnings.catch_warnings():
        if not verbose:
            warnings.simplefilter("ignore")
        try:
            torch.onnx.export(m, (x,), str(path), dynamo=False, **kw)
        except TypeError as e:  # a torch without the dynamo argument
            if "dynamo" not in str(e):
                raise
            torch.onnx.export(m, (x,), str(path), **kw)


# ----------------------------------------------------------- graph rewrites


def remove_unused_initializers(model):
    g = model.graph
    used = {i for n in g.node for i in n.input} | {o.name for o in g.output}
    keep = [t for t in g.initializer if t.name in used]
    gone = {t.name for t in g.initializer} - {t.name for t in keep}
    del g.initializer[:]
    g.initializer.extend(keep)
    ins = [i for i in g.input if i.name not in gone]
    del g.input[:]
    g.input.extend(ins)


def fold_batchnorm(model):
    """Fold each BatchNormalization that follows a Conv with constant
    weights (and is that Conv's only consumer) into the Conv, in float64.
    Returns the number folded; the caller checks that none is left."""
    g = cm.Graph(model)
    drop = set()
    for bn in [n for n in model.graph.node if n.op_type == "BatchNormalization"]:
        conv = g.from_op(bn.input[0], "Conv")
        if (
            conv is None
            or g.only_consumer(conv.output[0]) is not bn
            or any(bn.output[1:])
            or cm.attr(bn, "training_mode", 0)
            or not all(g.is_const(i) for i in bn.input[1:5])
            or not g.is_const(conv.input[1])
            or (len(conv.input) > 2 and conv.input[2] and not g.is_const(conv.input[2]))
        ):
            continue
        gamma, beta, mean, var = (g.value(i).astype(np.float64) for i in bn.input[1:5])
        f = gamma / np.sqrt(var + cm.attr(bn, "epsilon", 1e-5))
        w = g.value(conv.input[1]).astype(np.float64)
        b = g.value(conv.input[2]).astype(np.float64) if len(conv.input) > 2 and conv.input[2] else np.zeros(w.shape[0])
        w = (w * f.reshape((-1,) + (1,) * (w.ndim - 1))).astype(np.float32)
        b = ((b - mean) * f + beta).astype(np.float32)
        wn, bn_name = bn.output[0] + "_folded_w", bn.output[0] + "_folded_b"
        model.graph.initializer.extend([numpy_helper.from_array(w, wn), numpy_helper.from_array(b, bn_name)])
        conv.input[1] = wn
        if len(conv.input) > 2:
            conv.input[2] = bn_name
        else:
            conv.input.append(bn_name)
        conv.output[0] = bn.output[0]
        drop.add(id(bn))
    nodes = [n for n in model.graph.node if id(n) not in drop]
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    remove_unused_initializers(model)
    return len(drop)


def constants_to_initializers(model):
    """Turn each Constant node holding a tensor (the exporter's Clip
    bounds) into an initializer, so that importers read one kind of
    constant and nothing dangles once ORT removes a Clip. Returns the
    number turned."""
    g = model.graph
    keep, n = [], 0
    for node in g.node:
        if node.op_type == "Constant" and len(node.attribute) == 1 and node.attribute[0].name == "value":
            t = onnx.TensorProto()
            t.CopyFrom(node.attribute[0].t)
            t.name = node.output[0]
            g.initializer.append(t)
            n += 1
        else:
            keep.append(node)
    del g.node[:]
    g.node.extend(keep)
    return n


def set_batch(model, n):
    """Give every graph input and output the fixed batch n, then infer the
    shapes again."""
    g = model.graph
    inits = {t.name for t in g.initializer}
    for vi in list(g.input) + list(g.output):
        if vi.name in inits:
            continue
        d = vi.type.tensor_type.shape.dim[0]
        d.Clear()
        d.dim_value = n
    del g.value_info[:]
    return onnx.shape_inference.infer_shapes(model)


# ------------------------------------------------------------- quantization


def input_shape(model, batch):
    """The one graph input's name and shape, a symbolic batch replaced by
    batch. ValueError for anything else symbolic or not float32."""
    g = model.graph
    inits = {t.name for t in g.initializer}
    ins = [i for i in g.input if i.name not in inits]
    if len(ins) != 1:
        raise ValueError(f"the model has {len(ins)} graph inputs; one is supported")
    vi = ins[0]
    if vi.type.tensor_type.elem_type != onnx.TensorProto.FLOAT:
        raise ValueError(f"graph input '{vi.name}' is not float32")
    dims = []
    for k, d in enumerate(vi.type.tensor_type.shape.dim):
        if d.HasField("dim_value"):
            dims.append(d.dim_value)
        elif k == 0:
            dims.append(batch)
        else:
            raise ValueError(f"graph input '{vi.name}': dimension {k} is symbolic; only the batch may be")
    return vi.name, tuple(dims)


def random_input(shape, seed, dist):
    rng = np.random.default_rng(seed)
    if dist == "uniform":  # pixel values in [0, 1): the SR net's input
        return rng.random(shape, dtype=np.float32)
    return rng.standard_normal(shape, dtype=np.float32)  # a normalized image


def make_reader(name, shape, n, seed, dist):
    from onnxruntime.quantization import CalibrationDataReader

    class Reader(CalibrationDataReader):
        """n seeded random batches of one fixed shape."""

        def __init__(self):
            self.batches = [random_input(shape, seed + i, dist) for i in range(n)]
            self.i = 0

        def get_next(self):
            if self.i >= len(self.batches):
                return None
            self.i += 1
            return {name: self.batches[self.i - 1]}

        def rewind(self):
            self.i = 0

    return Reader()


def quantize(fp32_path, out_path, variant, reader):
    """quantize_static into QDQ: per-channel int8 symmetric weights; s8:
    int8 symmetric activations (zero points 0), u8: uint8 asymmetric, a8:
    int8 asymmetric."""
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

    quantize_static(
        str(fp32_path),
        str(out_path),
        reader,
        quant_format=QuantFormat.QDQ,
        per_channel=True,
        reduce_range=False,
        activation_type=QuantType.QUInt8 if variant == "u8" else QuantType.QInt8,
        weight_type=QuantType.QInt8,
        calibrate_method=CalibrationMethod.MinMax,
        extra_options={"ActivationSymmetric": variant == "s8", "WeightSymmetric": True},
    )


# ------------------------------------------------------------------- checks


def run_ort(path, feed):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 3
    s = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    return s.run(None, feed)[0]


def cosine(a, b):
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    d = np.linalg.norm(a) * np.linalg.norm(b)
    return float(a @ b / d) if d > 0 else float("nan")


def check(path, variant, feed, ref):
    """One row of the summary; row['fail'] lists what is wrong."""
    model = onnx.load(str(path))
    onnx.checker.check_model(model)
    s = cm.summarize(model)
    row = {
        "file": os.path.basename(path),
        "nodes": s["nodes"],
        "convs": s["convs"],
        "wrapped": s["wrapped"],
        "q": s["q"],
        "dq": s["dq"],
        "zp": cm.fmt_zp(s["act_zp"]),
        "relu": ", ".join(f"{k} {v}" for k, v in sorted(s["act_forms"].items())) or "-",
        "mb": os.path.getsize(path) / 1e6,
        "d2s": ",".join(f"{m}/{b}" for m, b in s["d2s"]) or "-",
        "fail": [],
    }
    if s["bn"]:
        row["fail"].append(f"{s['bn']} BatchNormalization left")
    out = run_ort(path, feed)
    row["cos"] = cosine(out, ref) if ref is not None else 1.0
    if variant == "fp32":
        row["ort"] = "-"
        return row, out
    fused = cm.ort_fused_ops(path)
    row["ort"] = f"{fused.get('QLinearConv', 0)}/{s['convs']}"
    if fused.get("Conv", 0) or fused.get("FusedConv", 0):
        row["fail"].append(f"onnxruntime runs {fused.get('Conv', 0) + fused.get('FusedConv', 0)} convs in float")
    if s["wrapped"] != s["convs"]:
        row["fail"].append(f"{s['convs'] - s['wrapped']} convs not wrapped in QDQ")
    if s["w_int8_zp0"] != s["convs"] or s["per_channel"] != s["convs"]:
        row["fail"].append("weights not all int8 per-channel with zero points 0")
    want = "uint8" if variant == "u8" else "int8"
    dtypes = {t for t, _ in s["act_zp"]}
    if dtypes != {want}:
        row["fail"].append(f"activation types {sorted(dtypes)}, want {want}")
    if variant == "s8" and any(v for _, v in s["act_zp"]):
        row["fail"].append("a nonzero activation zero point")
    if s["act_forms"].get("requant", 0) or s["act_forms"].get("float", 0):
        row["fail"].append("a Relu/Clip that is not a clamp between equal Q/DQ parameters")
    if not (row["cos"] > 0.9):
        row["fail"].append(f"output far from the float model's (cosine {row['cos']:.4f})")
    return row, out


def line(row):
    status = "ok" if not row["fail"] else "FAIL: " + "; ".join(row["fail"])
    return (
        f"{row['file']}: {row['nodes']} nodes, {row['convs']} Conv ({row['wrapped']} in QDQ), "
        f"Q {row['q']} DQ {row['dq']}, act zp {row['zp']}, Relu/Clip {row['relu']}, "
        f"D2S {row['d2s']}, ORT QLinearConv {row['ort']}, cos {row['cos']:.4f}, {row['mb']:.1f} MB: {status}"
    )


# --------------------------------------------------------------------- main


def prepare_fp32(src, dst, batch_dim):
    """src (an exported or given float model) into dst: BatchNormalization
    folded, the batch fixed if asked, shapes inferred, checked."""
    model = onnx.load(str(src))
    constants_to_initializers(model)
    folded = fold_batchnorm(model)
    left = sum(n.op_type == "BatchNormalization" for n in model.graph.node)
    if left:
        raise ValueError(f"{left} BatchNormalization nodes could not be folded into a Conv")
    if batch_dim != "symbolic":
        model = set_batch(model, batch_dim)
    else:
        del model.graph.value_info[:]
        model = onnx.shape_inference.infer_shapes(model)
    onnx.checker.check_model(model)
    onnx.save(model, str(dst))
    return folded


def make_one(name, src, a, dist):
    """Write NAME.fp32 and its variants into a.out; return summary rows."""
    t0 = time.time()
    fp32 = os.path.join(a.out, f"{name}.fp32.onnx")
    folded = prepare_fp32(src, fp32, a.batch_dim)
    model = onnx.load(fp32)
    batch = a.calib_batch if a.batch_dim == "symbolic" else a.batch_dim
    in_name, shape = input_shape(model, batch)
    seed = a.seed + zlib.crc32(name.encode()) % 100000
    feed = {in_name: random_input(shape, seed + 1000, dist)}
    rows = []
    row, ref = check(fp32, "fp32", feed, None)
    rows.append(row)
    log(line(row) + (f" ({folded} BatchNormalization folded here)" if folded else ""))
    for v in a.variants:
        out = os.path.join(a.out, f"{name}.qdq-{v}.onnx")
        quantize(fp32, out, v, make_reader(in_name, shape, a.calib, seed, dist))
        row, _ = check(out, v, feed, ref)
        rows.append(row)
        log(line(row))
    log(f"[models] {name}: {time.time() - t0:.1f} s")
    return rows


def table(rows):
    cols = [
        ("file", "file", "{}"),
        ("nodes", "nodes", "{}"),
        ("convs", "Conv", "{}"),
        ("wrapped", "QDQ", "{}"),
        ("q", "Q", "{}"),
        ("dq", "DQ", "{}"),
        ("ort", "ORT QLinearConv", "{}"),
        ("cos", "cos", "{:.4f}"),
        ("mb", "MB", "{:.1f}"),
        ("zp", "activation zero points", "{}"),
        ("relu", "Relu/Clip", "{}"),
    ]
    cells = [[f.format(r[k]) for k, _, f in cols] + ["ok" if not r["fail"] else "FAIL"] for r in rows]
    head = [h for _, h, _ in cols] + ["check"]
    w = [max(len(x) for x in col) for col in zip(head, *cells)]
    print("  ".join(h.ljust(n) for h, n in zip(head, w)).rstrip())
    for c in cells:
        print("  ".join(x.ljust(n) for x, n in zip(c, w)).rstrip())


def parse(argv):
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--out", required=True, help="directory for the .onnx files (created)")
    ap.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, from {','.join(MODELS)}")
    ap.add_argument("--batch-dim", default="symbolic", help="'symbolic' (default) or a fixed batch N")
    ap.add_argument("--calib", type=int, default=4, help="calibration batches (default 4)")
    ap.add_argument(
        "--calib-batch", type=int, default=2, help="their batch with a symbolic batch dimension (default 2)"
    )
    ap.add_argument("--variants", default=",".join(DEFAULT_VARIANTS), help="comma-separated, from s8,u8,a8")
    ap.add_argument("--seed", type=int, default=1, help="weights and calibration data (default 1)")
    ap.add_argument("--opset", type=int, default=OPSET, help=f"the export's opset (default {OPSET})")
    ap.add_argument(
        "--from-onnx", nargs=2, metavar=("FILE", "NAME"), help="quantize this float model as NAME instead (no torch)"
    )
    ap.add_argument(
        "--calib-dist", choices=("normal", "uniform"), default="normal", help="--from-onnx's calibration data"
    )
    ap.add_argument("-v", "--verbose", action="store_true", help="keep the exporter's and quantizer's warnings")
    a = ap.parse_args(argv)
    a.models = [m for m in a.models.split(",") if m]
    a.variants = [v for v in a.variants.split(",") if v]
    bad = [m for m in a.models if m not in MODELS]
    if bad and not a.from_onnx:
        ap.error(f"--models: unknown {','.join(bad)}; known: {','.join(MODELS)}")
    bad = [v for v in a.variants if v not in VARIANTS]
    if bad or not a.variants:
        ap.error(f"--variants: unknown '{','.join(bad)}'; known: s8,u8,a8")
    if a.batch_dim != "symbolic":
        try:
            a.batch_dim = int(a.batch_dim)
        except ValueError:
            a.batch_dim = 0
        if a.batch_dim < 1:
            ap.error("--batch-dim: 'symbolic' or an integer >= 1")
    if a.calib < 1 or a.calib_batch < 1:
        ap.error("--calib and --calib-batch: at least 1")
    return a


def main(argv):
    a = parse(argv)
    if not a.verbose:
        logging.getLogger().setLevel(logging.ERROR)
    need = ["onnxruntime"] + ([] if a.from_onnx else ["torch", "torchvision"])
    missing = [m for m in need if importlib.util.find_spec(m) is None]
    if missing:
        print(
            f"make_models: no {', '.join(missing)}: needs numpy, onnx, onnxruntime, and torch + torchvision unless --from-onnx",
            file=sys.stderr,
        )
        return 2
    os.makedirs(a.out, exist_ok=True)
    rows = []
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        for name in [a.from_onnx[1]] if a.from_onnx else a.models:
            t1 = time.time()
            try:
                if a.from_onnx:
                    src, dist = a.from_onnx[0], a.calib_dist
                else:
                    src, dist = os.path.join(tmp, f"{name}.export.onnx"), "uniform" if name == "espcn" else "normal"
                    export_torch(name, a.seed + zlib.crc32(name.encode()) % 100000, src, a.opset, a.verbose)
                    log(f"[models] {name}: exported in {time.time() - t1:.1f} s")
                rows += make_one(name, src, a, dist)
            except Exception as e:  # one model's failure must not hide the others'
                log(f"[models] {name}: {type(e).__name__}: {e}")
                rows.append(
                    dict.fromkeys(("nodes", "convs", "wrapped", "q", "dq", "ort", "zp", "relu"), "-")
                    | {"file": name, "cos": float("nan"), "mb": 0.0, "fail": [f"{type(e).__name__}: {e}"]}
                )
    print()
    table(rows)
    failed = [r for r in rows if r["fail"]]
    print(f"\n{len(rows)} files in {a.out}, {time.time() - t0:.0f} s, {len(failed)} failed")
    for r in failed:
        print(f"  {r['file']}: {'; '.join(r['fail'])}")
    return 1 if failed else 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet under | head
    sys.exit(main(sys.argv[1:]))
