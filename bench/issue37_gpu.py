#!/usr/bin/env python3
"""Issue 37 on the GPU machine: the Python package against PyTorch and CuPy.

    python3 bench/issue37_gpu.py OUT_DIR [PHASE ...]

Phases (all when none is named):
  torch      every ResNet-50 (batch 2) and ResNet3D-18 (batch 1) layer through
             Context.qconv2d / qconv3d on torch tensors (channels-last), exact
             against PyTorch's float64 CPU convolution of the same integers with
             the requantization of convtune.h's formula (python/tests/formula.py)
  cupy       the same layers through CuPy arrays, in the plain layouts (NCHW /
             NCDHW: pack_weights, the library's layout kernels)
  compile    a quantized bottleneck block of convtune.torch.QConv2d modules:
             torch._dynamo.explain (graph breaks), torch.compile (inductor)
             exact against the library's CPU reference
  graph      the same block captured in a torch.cuda.graph and replayed twice on
             new inputs, exact
  overhead   host microseconds per cached call of one small workload: the C API
             (bench/call_overhead), Context.qconv2d (output given, allocated),
             the op's body called directly, torch.ops.convtune.qconv2d (through
             torch's dispatcher), the QConv2d module
Every layer's data, weights and quantization values are random (seeded);
outputs are poisoned before each call. Writes OUT_DIR/issue37.json and
prints a short table last. Needs CONVTUNE_LIBRARY (the build's
libconvtune.so) and CALL_OVERHEAD (the build's call_overhead) for the
overhead phase; python/ and python/tests/ on the path (this script adds them).
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "python"), str(ROOT / "python" / "tests")]

import convtune  # noqa: E402
from convtune import Quant, Workload  # noqa: E402
from formula import requant  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

SETS = [("resnet50", 2, "nhwc", "nchw"), ("resnet3d18", 1, "ndhwc", "ncdhw")]
RESIDUAL = {  # each block's last conv adds the shortcut
    "resnet50": {"l1_1x1_64_256", "l2_1x1_128_512", "l3_1x1_256_1024", "l4_1x1_512_2048"},
    "resnet3d18": {"l1_3x3x3", "l2_3x3x3", "l3_3x3x3", "l4_3x3x3"},
}
CALLS, SYNC_EVERY = 20000, 500


def set_layers(name: str, batch: int, layout: str) -> list[tuple[str, Workload]]:
    """The set's layers as quantized workloads: 8-bit output with bias and
    per-channel scales; every other layer uint8 data with a zero point; the
    blocks' last convs with a residual."""
    info = convtune.workload_info(None, set=name, batch=batch, layout=layout)
    out = []
    for i, row in enumerate(info):
        j = dict(row["workload"])
        j.update(out_type="int8", bias=True, scale="channel", residual=row["name"] in RESIDUAL[name])
        if i % 2 == 0:
            j.update(data_type="uint8", data_zero_point=True)
        out.append((row["name"], Workload(j)))
    return out


def random_case(w: Workload, rng: np.random.Generator):
    """Host data (channels-first), plain weights (OIHW), quant, residual (channels-first)."""
    nd = w.nd
    cf_shape = (w.n, w.c, *w.input_size)
    if w.data_type == "uint8":
        x = rng.integers(0, 256, size=cf_shape, dtype=np.uint8)
        zx = int(rng.integers(100, 156))
    else:
        x = rng.integers(-128, 128, size=cf_shape, dtype=np.int8)
        zx = 0
    k = rng.integers(-128, 128, size=(w.k, w.c // w.groups, *w.kernel), dtype=np.int8)
    depth = w.c // w.groups * int(np.prod(w.kernel))
    # outputs spread over the int8 range: acc's spread is about sqrt(depth) * 74^2
    scale = rng.uniform(0.5, 1.5, size=w.k) * 40.0 / (np.sqrt(depth) * 74.0 * 74.0)
    q = Quant(data_zero_point=zx, bias=rng.integers(-20000, 20000, size=w.k).tolist(),
              scale=scale.tolist(), out_zero_point=int(rng.integers(-10, 10)),
              clamp_min=-128 if w.residual else -20, clamp_max=127,
              residual_scale=float(rng.uniform(0.3, 1.2)), residual_zero_point=int(rng.integers(-5, 5)))
    out_cf = (w.n, w.k, *w.output_shape[1:1 + nd]) if w.layout in ("nhwc", "ndhwc") else w.output_shape
    r = rng.integers(-128, 128, size=out_cf, dtype=np.int8) if w.residual else None
    return x, k, q, r


def expected(w: Workload, x, k, q, r) -> np.ndarray:
    """PyTorch's float64 CPU convolution of (x - zx) and k, requantized by the formula:
    channels-first int64."""
    s = w.struct
    nd = w.nd
    xd = torch.from_numpy(x.astype(np.float64) - q.data_zero_point)
    kd = torch.from_numpy(k.astype(np.float64))
    pb, pa = list(s.pad_before[:nd]), list(s.pad_after[:nd])
    if pb != pa:
        raise ValueError(f"{w.key}: asymmetric padding")
    conv = F.conv2d if nd == 2 else F.conv3d
    acc = conv(xd, kd, stride=list(s.stride[:nd]), padding=pb, dilation=list(s.dilation[:nd]),
               groups=w.groups)
    acc = acc.numpy()
    assert np.all(np.abs(acc) < 2**52)
    return requant(np.rint(acc).astype(np.int64), w, q, r)


def to_last(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.moveaxis(a, 1, -1))


def compare(got_cf: np.ndarray, want: np.ndarray) -> dict:
    bad = int(np.count_nonzero(got_cf.astype(np.int64) != want))
    return dict(exact=bad == 0, mismatches=bad, elements=int(want.size),
                saturated=float(np.mean((want == 127) | (want == -128))))


# ---- phases -------------------------------------------------------------------------
def phase_torch(ctx, res: dict) -> None:
    rows = []
    for name, batch, layout, _ in SETS:
        rng = np.random.default_rng(37)
        for lname, w in set_layers(name, batch, layout):
            x, k, q, r = random_case(w, rng)
            want = expected(w, x, k, q, r)
            dev = "cuda"
            xt = torch.from_numpy(to_last(x)).to(dev)
            kt = torch.from_numpy(to_last(k)).to(dev)
            pt = torch.from_numpy(ctx.make_params(w, q, to_last(k))).to(dev)
            rt = torch.from_numpy(to_last(r)).to(dev) if r is not None else None
            out = torch.full(w.output_shape, 0x5A, dtype=torch.int8, device=dev)  # poison
            fn = ctx.qconv2d if w.nd == 2 else ctx.qconv3d
            y = fn(w, xt, kt, pt, rt, out=out)
            got = np.moveaxis(y.cpu().numpy(), -1, 1)
            # the output allocated by the call (torch's) gives the same result
            y2 = fn(w, xt, kt, pt, rt)
            same = bool(torch.equal(y, y2)) and y2.dtype == torch.int8 and y2.device == y.device
            row = dict(set=name, layer=lname, key=w.key, **compare(got, want), allocated_same=same,
                       config=ctx.explain(w).template)
            rows.append(row)
            print(f"torch  {name:10s} {lname:20s} {'exact' if row['exact'] and same else 'WRONG'} "
                  f"({row['mismatches']} of {row['elements']}, {row['saturated']:.1%} saturated)",
                  flush=True)
    res["layers_torch"] = rows


def phase_cupy(ctx, res: dict) -> None:
    import cupy as cp

    rows = []
    for name, batch, _, layout in SETS:
        rng = np.random.default_rng(38)
        for lname, w in set_layers(name, batch, layout):
            x, k, q, r = random_case(w, rng)
            want = expected(w, x, k, q, r)
            kc = cp.asarray(k)
            packed = ctx.pack_weights(w, kc)  # CuPy allocates, the current stream
            pc = cp.asarray(ctx.make_params(w, q, k))
            out = cp.full(w.output_shape, 0x5A, dtype=cp.int8)
            fn = ctx.qconv2d if w.nd == 2 else ctx.qconv3d
            y = fn(w, cp.asarray(x), packed, pc, cp.asarray(r) if r is not None else None, out=out)
            row = dict(set=name, layer=lname, key=w.key, **compare(cp.asnumpy(y), want),
                       packed_type=type(packed).__module__.split(".")[0])
            rows.append(row)
            print(f"cupy   {name:10s} {lname:20s} {'exact' if row['exact'] else 'WRONG'} "
                  f"({row['mismatches']} of {row['elements']})", flush=True)
    res["layers_cupy"] = rows


def block(db: str):
    """A quantized bottleneck (ResNet-50 layer 3's shape at 14x14): 1x1 relu,
    3x3 relu, 1x1 + shortcut relu, from float convs."""
    from convtune.torch import QConv2d

    torch.manual_seed(37)
    c1, c2, c3 = (torch.nn.Conv2d(1024, 256, 1), torch.nn.Conv2d(256, 256, 3, padding=1),
                  torch.nn.Conv2d(256, 1024, 1))
    s_x, s1, s2, s_y = 0.05, 0.04, 0.03, 0.06
    q1 = QConv2d.from_float(c1, s_x, s1, relu=True, db=db)
    q2 = QConv2d.from_float(c2, s1, s2, relu=True, db=db)
    q3 = QConv2d.from_float(c3, s2, s_y, relu=True, residual_scale=s_x / s_y, db=db)

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.q1, self.q2, self.q3 = q1, q2, q3

        def forward(self, x):
            return self.q3(self.q2(self.q1(x)), residual=x)

    return Block().cuda()


def block_reference(m, x: torch.Tensor) -> np.ndarray:
    """The block by the library's CPU reference (NHWC NumPy), channels-first."""
    h = x.permute(0, 2, 3, 1).cpu().numpy().copy()
    x0 = h
    for mod, r in ((m.q1, None), (m.q2, None), (m.q3, x0)):
        w = convtune.torch.workload_for(mod.spec, h.shape)
        h = convtune.reference_qconv(w, h, mod.weight_plain, mod.quant, r)
    return np.moveaxis(h, -1, 1)


def block_input(seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(-128, 128, (8, 1024, 14, 14), dtype=torch.int8, generator=g)
    return x.cuda().contiguous(memory_format=torch.channels_last)


def phase_compile(db: str, res: dict) -> None:
    import convtune.torch  # noqa: F401 (registers the ops)

    m = block(db)
    x = block_input(1)
    want = block_reference(m, x)
    eager = m(x)
    ex = torch._dynamo.explain(m)(x)
    row = dict(graph_breaks=int(ex.graph_break_count), graphs=int(ex.graph_count),
               ops=int(ex.op_count), eager_exact=bool(np.array_equal(eager.cpu().numpy(), want)),
               break_reasons=[str(b.reason) for b in ex.break_reasons])
    for backend in ("inductor", "aot_eager"):
        torch._dynamo.reset()
        try:
            t0 = time.perf_counter()
            cm = torch.compile(m, backend=backend, fullgraph=True)
            y = cm(x)
            compile_s = time.perf_counter() - t0
            x2 = block_input(2)
            y2 = cm(x2)
            ok = (np.array_equal(y.cpu().numpy(), want)
                  and np.array_equal(y2.cpu().numpy(), block_reference(m, x2)))
            row[backend] = dict(exact=bool(ok), fullgraph=True, compile_s=round(compile_s, 2))
        except Exception as e:  # a backend's failure is a result; keep the other's
            row[backend] = dict(exact=False, error=f"{type(e).__name__}: {e}"[:2000])
    res["compile"] = row
    print(f"compile: {row['graph_breaks']} graph breaks, {row['graphs']} graph(s); inductor "
          f"{row['inductor']}; aot_eager {row['aot_eager']}", flush=True)


def phase_graph(db: str, res: dict) -> None:
    import convtune.torch  # noqa: F401

    m = block(db)
    static_x = block_input(3)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # torch's warm-up rule: eager calls on a side stream first
        for _ in range(2):
            m(static_x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        static_y = m(static_x)
    replays = []
    for seed in (4, 5):
        x = block_input(seed)
        static_x.copy_(x)
        static_y.fill_(0x5A)  # poison: the replay must write every element
        g.replay()
        torch.cuda.synchronize()
        replays.append(bool(np.array_equal(static_y.cpu().numpy(), block_reference(m, x))))
    # the replay's time against eager calls of the same block
    def timed(fn, n=200):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) / n * 1e6
    row = dict(replays_exact=replays, exact=all(replays), replay_us=round(timed(g.replay), 2),
               eager_us=round(timed(lambda: m(static_x)), 2))
    res["graph"] = row
    print(f"graph: replays exact {replays}; replay {row['replay_us']} us, eager {row['eager_us']} us "
          "(the block)", flush=True)


OVERHEAD_W = dict(op="conv2d", n=1, c=64, k=64, h=8, w=8, kernel=3, pad=1, layout="nhwc",
                  out_type="int8", bias=True, scale="channel")


def per_call(fn) -> dict:
    """Host microseconds per call, as call_overhead.c times them."""
    fn()
    torch.cuda.synchronize()
    runs = []
    for _ in range(5):
        total = 0.0
        for _ in range(CALLS // SYNC_EVERY):
            t0 = time.perf_counter()
            for _ in range(SYNC_EVERY):
                fn()
            total += time.perf_counter() - t0
            torch.cuda.synchronize()
        runs.append(total / CALLS * 1e6)
    return dict(us_per_call=[round(r, 4) for r in runs], median_us=round(statistics.median(runs), 4))


def phase_overhead(ctx, res: dict) -> None:
    import convtune.torch as ctt

    w = Workload(OVERHEAD_W)
    exe = os.environ.get("CALL_OVERHEAD", str(ROOT / "build-rel" / "call_overhead"))
    p = subprocess.run([exe, w.key, str(CALLS)], capture_output=True, text=True, check=False)
    if p.returncode != 0:
        raise RuntimeError(f"call_overhead: {p.stderr.strip()}")
    c_side = json.loads(p.stdout)
    rng = np.random.default_rng(7)
    x = torch.from_numpy(rng.integers(-128, 128, w.data_shape, dtype=np.int8)).cuda()
    k = rng.integers(-128, 128, w.plain_weight_shape, dtype=np.int8)
    kt = torch.from_numpy(k).cuda()
    q = Quant(bias=[0] * w.k, scale=[1e-4] * w.k)
    pt = torch.from_numpy(ctx.make_params(w, q, k)).cuda()
    out = torch.empty(w.output_shape, dtype=torch.int8, device="cuda")
    # a stream of the caller's own, as call_overhead uses
    s = torch.cuda.Stream()
    spec = json.dumps({kk: v for kk, v in OVERHEAD_W.items() if kk not in ("n", "h", "w")})
    mod = ctt.QConv2d(torch.from_numpy(rng.integers(-127, 128, (64, 64, 3, 3), dtype=np.int8)),
                      [1e-4] * 64, bias=torch.zeros(64, dtype=torch.int32), padding=1).cuda()
    xm = x.permute(0, 3, 1, 2)  # (N, C, H, W) in channels-last memory
    with torch.cuda.stream(s):
        rows = dict(
            c_api=c_side,
            context_out=per_call(lambda: ctx.qconv2d(w, x, kt, pt, out=out)),
            context_alloc=per_call(lambda: ctx.qconv2d(w, x, kt, pt)),
            op_body=per_call(lambda: ctt._conv(2, x, kt, pt, None, spec, "")),
            torch_op=per_call(lambda: torch.ops.convtune.qconv2d(x, kt, pt, None, spec, "")),
            module=per_call(lambda: mod(xm)),
        )
    base = c_side["median_us"]
    for name, r in rows.items():
        if name != "c_api":
            r["over_c_us"] = round(r["median_us"] - base, 4)
    rows["key"] = w.key
    res["overhead"] = rows
    print("overhead (us per call): " + ", ".join(
        f"{n} {r['median_us']:.2f}" for n, r in rows.items() if isinstance(r, dict)), flush=True)


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out_dir = Path(sys.argv[1])
    phases = sys.argv[2:] or ["torch", "cupy", "compile", "graph", "overhead"]
    out_dir.mkdir(parents=True, exist_ok=True)
    res: dict = dict(
        commit=os.environ.get("CONVTUNE_COMMIT", ""), command=" ".join(["bench/issue37_gpu.py", *sys.argv[1:]]),
        device=torch.cuda.get_device_name(0), python=platform.python_version(), torch_version=torch.__version__,
        numpy=np.__version__, convtune=convtune.version())
    try:
        import cupy

        res["cupy_version"] = cupy.__version__
    except ImportError:
        res["cupy_version"] = None
    db = os.environ.get("CONVTUNE_DB", "")
    res["db"] = db
    failed = []
    with convtune.open(db or None, 0) as ctx:
        for ph in phases:
            t0 = time.perf_counter()
            try:
                if ph == "torch":
                    phase_torch(ctx, res)
                elif ph == "cupy":
                    phase_cupy(ctx, res)
                elif ph == "compile":
                    phase_compile(db, res)
                elif ph == "graph":
                    phase_graph(db, res)
                elif ph == "overhead":
                    phase_overhead(ctx, res)
                else:
                    raise ValueError(f"unknown phase {ph}")
            except Exception:
                failed.append(ph)
                res.setdefault("errors", {})[ph] = traceback.format_exc()[-4000:]
                traceback.print_exc()
            res.setdefault("phase_s", {})[ph] = round(time.perf_counter() - t0, 1)
            (out_dir / "issue37.json").write_text(json.dumps(res, indent=1))
    # the table
    print("\n| check | result |\n| --- | --- |")
    for kind in ("torch", "cupy"):
        if "layers_" + kind in res:
            rows = res["layers_" + kind]
            ok = sum(1 for r in rows if r["exact"] and r.get("allocated_same", True))
            print(f"| {kind}: ResNet-50 b2 + ResNet3D-18 b1 layers exact | {ok} of {len(rows)} |")
    if "compile" in res:
        c = res["compile"]
        print(f"| torch.compile: graph breaks (dynamo.explain) | {c['graph_breaks']} "
              f"({c['graphs']} graph) |")
        for b in ("inductor", "aot_eager"):
            print(f"| torch.compile {b}, fullgraph, exact | {c[b].get('exact')} |")
    if "graph" in res:
        g = res["graph"]
        print(f"| torch.cuda.graph: 2 replays exact | {g['replays_exact']} |")
    if "overhead" in res:
        o = res["overhead"]
        print(f"| C API call (us) | {o['c_api']['median_us']:.2f} |")
        for n in ("context_out", "context_alloc", "op_body", "torch_op", "module"):
            print(f"| {n} (us; over C) | {o[n]['median_us']:.2f} (+{o[n]['over_c_us']:.2f}) |")
    if failed:
        print(f"failed phases: {failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
