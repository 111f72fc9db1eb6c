#!/usr/bin/env python3
"""ring_ab.py BINARY DW_TUNINGS OUT RING_TUNE.json...: each 2D depthwise
layer's best config on conv2d_nhwc_dw (DW_TUNINGS: a results JSON with
"tunings": {name: [{name, key, template, best_config}, ...]}, as
bench/results/h200-issue35/depths-ecbe9d3.json's "tune") against its best on
conv2d_nhwc_dw_ring (the tuning JSONs of `convtune tune --json` on that
template), both timed by one config_run BINARY alike: dw_ab.py's protocol
(400 launches in a graph, the minimum over 2 rounds at buffer offsets 0 and
32 MiB) on one requantization a key, with the clamp at [zero point, 127]
(the benchmark's int8 column). Prints a line a layer with each side's share
of the int8 floor (data and output bytes over 4.3 TB/s) and writes the rows
to OUT. Runs on the GPU machine.
"""
import json, os, re, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dw_ab import best, relu_file  # noqa: E402
from regress36 import quant_file, time_config  # noqa: E402

BW = 4.3e12


def floor_us(key):
    """bytes of int8 data in and out over 4.3 TB/s, us"""
    m = re.search(r"-n(\d+)-c(\d+)-k(\d+)-(\d+)x(\d+)-r(\d+)x(\d+)-s(\d+)x(\d+)-p(\d+)x(\d+)\.(\d+)x(\d+)", key)
    n, c, k, h, w, kh, kw, sh, sw, ph, pw, qh, qw = map(int, m.groups())
    oh = (h + ph + qh - kh) // sh + 1
    ow = (w + pw + qw - kw) // sw + 1
    return (n * h * w * c + n * oh * ow * k) / BW * 1e6


def main(argv):
    if len(argv) < 5:
        sys.stderr.write(__doc__)
        return 2
    binary, dwf, outp = argv[1:4]
    ring = {}
    for f in argv[4:]:
        for w in json.load(open(f)):
            if w.get("best_config"):
                ring[w["key"]] = w
    rows, seen = [], set()
    for layers in json.load(open(dwf))["tune"]["tunings"].values():
        for w in layers:
            key = w["key"]
            if key in seen or not key.startswith("conv2d") or key not in ring:
                continue
            seen.add(key)
            qa = quant_file(key)
            if not os.path.exists(qa):  # the first run writes the key's values
                time_config(binary, w["template"], key, w["best_config"], qa)
            qf = relu_file(qa)
            dw = best(binary, w["template"], key, w["best_config"], qf)
            rg = best(binary, "conv2d_nhwc_dw_ring", key, ring[key]["best_config"], qf)
            fl = floor_us(key)
            r = {"name": w["name"], "key": key, "dw_config": w["best_config"],
                 "ring_config": ring[key]["best_config"], "dw_us": dw, "ring_us": rg,
                 "ring_tuned_us": ring[key].get("best_us"), "floor_us": fl}
            print("%-30s dw %7.2f (%3.0f%%)  ring %7.2f (%3.0f%%)  ring/dw %5.2f  %s" % (
                w["name"][:30], dw or -1, 100 * fl / dw if dw else 0, rg or -1,
                100 * fl / rg if rg else 0, rg / dw if rg and dw else float("nan"),
                " ".join("%s=%s" % kv for kv in ring[key]["best_config"].items())), flush=True)
            rows.append(r)
    json.dump(rows, open(outp, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
