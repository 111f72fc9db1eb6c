#!/usr/bin/env python3
"""dw_ab.py OLD NEW TUNINGS OUT: the same tuned configs timed on two builds.

OLD and NEW are config_run binaries (bench/build_old_config_run.sh builds
one against an earlier commit's libraries); TUNINGS is a results JSON with
"tunings": {name: [{name, key, template, best_config}, ...]} (as
bench/results/h200-issue35/tune-397893f.json). Each layer's config runs on
both (a conv3d config without "depths" gets depths 1 on NEW, the knob's
value before it existed) through regress36.py's time_config (config_run's
timing, 400 launches in a graph), at buffer offsets 0 and 32 MiB
(CT_ALLOC_PAD), 2 rounds; a side's figure is the minimum. Two
requantizations: "asis", the key's values in regress36.py's shared
CT_QUANT_FILE (AB_QUANT_DIR), and "relu", the same with the clamp set to
[zero point, 127] (the benchmark's int8 column: the depthwise family's
borrow-free form). Prints a line a layer and writes the rows to OUT. Runs
on the GPU machine.
"""
import json, os, re, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from regress36 import quant_file, time_config  # noqa: E402

PADS = [0, 32 << 20]


def relu_file(src):
    """src's values with lo = the output zero point and hi = 127, beside it"""
    text = open(src).read()
    zp = re.search(r" ozp (-?\d+) ", text).group(1)
    dst = src + ".relu"
    with open(dst, "w") as f:
        f.write(re.sub(r" lo -?\d+ hi -?\d+ ", " lo %s hi 127 " % zp, text, count=1))
    return dst


def best(binary, tpl, key, cfg, qfile):
    """the minimum over 2 rounds at each of PADS, or None"""
    ts = []
    for _ in range(2):
        for p in PADS:
            os.environ["CT_ALLOC_PAD"] = str(p)
            v = time_config(binary, tpl, key, cfg, qfile)
            if v is not None:
                ts.append(v)
    os.environ.pop("CT_ALLOC_PAD", None)
    return min(ts) if ts else None


def pct(a, b):
    return 100 * (a / b - 1) if a and b else float("nan")


def main(argv):
    if len(argv) != 5:
        sys.stderr.write(__doc__)
        return 2
    old, new, tunings, outp = argv[1:5]
    rows = []
    for layers in json.load(open(tunings))["tunings"].values():
        for w in layers:
            key, tpl, cfg = w["key"], w["template"], dict(w["best_config"])
            ncfg = dict(cfg)
            if tpl.startswith("conv3d") and "depths" not in ncfg:
                ncfg["depths"] = 1
            qa = quant_file(key)
            r = {"name": w["name"], "key": key, "config": cfg}
            for var in ("asis", "relu"):
                # asis runs first: its first timing writes the key's values
                qf = qa if var == "asis" else relu_file(qa)
                r[var + "_old"] = best(old, tpl, key, cfg, qf)
                r[var + "_new"] = best(new, tpl, key, ncfg, qf)
                if var == "asis":
                    r["asis_q"] = open(qa).read().split("\n")[0]
            print("%-34s asis %7.2f %7.2f (%+5.1f%%)  relu %7.2f %7.2f (%+5.1f%%)" % (
                w["name"], r["asis_old"] or -1, r["asis_new"] or -1, pct(r["asis_new"], r["asis_old"]),
                r["relu_old"] or -1, r["relu_new"] or -1, pct(r["relu_new"], r["relu_old"])), flush=True)
            rows.append(r)
    json.dump(rows, open(outp, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
