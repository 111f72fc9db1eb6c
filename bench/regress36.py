#!/usr/bin/env python3
"""regress36.py: issue 36's no-regression check against an earlier results folder.

  regress36.py seed TUNE_JSON... > seed.jsonl
      Each layer's best config in the tuning documents (`convtune tune --json`)
      as one trial that `convtune import` takes, under a template version that
      no build has ("retired-" and the folder name's last part, its commit).
      A tuning of the same workload in that database then measures that
      config first (tuner/tune.c: a task's first trials are the workload's
      best under a retired version), as it does for a user whose records a
      template change retired. An int32
      document also seeds the 8-bit key of each layer (bias, per-channel
      scales) where no 8-bit document does: the earlier bench served it that
      way, by the int32 twin's config. Trials keep what the document says:
      the config, its median; the device is the H200 of the results (the
      tuner's lookup falls back to any device of the same capability).

  regress36.py compare NEW_BENCH_JSON OLD_CSV [LIMIT]
      Each layer's convtune time (int32 and int8 output) in a new `bench
      --set --json-out` document against the earlier run's CSV; prints a
      table and the layers more than LIMIT (default 0.02) slower, and exits
      1 if there is one.
"""
import csv
import json
import os
import sys


def seed(files):
    by_key = {}
    for f in files:
        tag = os.path.basename(os.path.dirname(os.path.abspath(f)))
        for t in json.load(open(f)):
            if not t.get("best_config") or not t.get("template"):
                continue
            keys = [t["key"]]
            if "-i8.i8.i32-" in t["key"]:
                keys.append(t["key"].replace("-i8.i8.i32-", "-i8.i8.i8-") + "-bias-qc")
            for i, k in enumerate(keys):
                if i and k in by_key:
                    continue  # the 8-bit document's own config wins over the twin's
                by_key[k] = (tag, t)
    n = 0
    for k, (tag, t) in sorted(by_key.items()):
        n += 1
        rec = {
            "format": 1,
            "uid": "seed%06d-%s" % (n, tag[-8:]),
            "workload_key": k,
            "template_name": t["template"],
            "template_version": ("retired-" + tag.split("-")[-1])[:16],
            "config_index": "0",
            "config": t["best_config"],
            "outcome": "OK",
            "error": None,
            "median_us": t["best_us"],
            "samples_us": [t["best_us"]],
            "compile_ms": 0,
            "options": None,
            "arch": "sm_90",
            "tuner": "seed",
            "tuner_settings": None,
            "session": "seed-" + tag[-16:],
            "timestamp": 0,
            "device": {
                "name": "NVIDIA H200",
                "cc_major": 9,
                "cc_minor": 0,
                "sm_count": 132,
                "driver_version": 0,
                "runtime_version": 0,
                "nvrtc_version": "",
            },
        }
        print(json.dumps(rec))


def compare(new_json, old_csv, limit):
    new = {l["name"]: l for l in json.load(open(new_json))["layers"]}
    old = {r["name"]: r for r in csv.DictReader(open(old_csv))}
    worse = []
    print("| layer | output | earlier, us | now, us | change |")
    print("| --- | --- | ---: | ---: | ---: |")
    for name, o in old.items():
        l = new.get(name)
        if not l:
            print("| %s | - | missing now | | |" % name)
            worse.append(name)
            continue
        for field, out in (("convtune_us", "int32"), ("convtune_i8_us", "int8")):
            a = float(o[field]) if o.get(field) else None
            b = l.get(field)
            if not a or not b:
                continue
            ch = b / a - 1
            mark = " **" if ch > limit else ""
            print("| %s | %s | %.2f | %.2f | %+.1f%%%s |" % (name, out, a, b, 100 * ch, mark))
            if ch > limit:
                worse.append("%s %s %+.1f%%" % (name, out, 100 * ch))
    print("more than %.0f%% slower: %d%s" % (100 * limit, len(worse), ": " + ", ".join(worse) if worse else ""))
    return 1 if worse else 0


def main(argv):
    if len(argv) >= 3 and argv[1] == "seed":
        seed(argv[2:])
        return 0
    if len(argv) in (4, 5) and argv[1] == "compare":
        return compare(argv[2], argv[3], float(argv[4]) if len(argv) == 5 else 0.02)
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
