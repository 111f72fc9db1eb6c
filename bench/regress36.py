#!/usr/bin/env python3
"""regress36.py: issue 36's no-regression check against an earlier results folder.

  regress36.py seed TUNE_JSON... > seed.jsonl
      Each layer's best config in the tuning documents (`convtune tune --json`)
      as one trial that `convtune import` takes, under a template version that
      no build has ("retired-" and the folder name's last part, its commit).
      A tuning of the same workload in that database then measures that
      config first (tuner/tune.c: a task's first trials are the workload's
      best under a retired version), as it does for a user whose records a
      template change retired. An int32 document also seeds the 8-bit key
      of each layer (bias, per-channel scales) where no 8-bit document
      does: the earlier bench served it that way, by the int32 twin's
      config. Trials keep what the document says:
      the config, its median; the device is the H200 of the results (the
      tuner's lookup falls back to any device of the same capability).

  regress36.py compare NEW_BENCH_JSON OLD_CSV [LIMIT]
      Each layer's convtune time (int32 and int8 output) in a new `bench
      --set --json-out` document against the earlier run's CSV; prints a
      table and the layers more than LIMIT (default 0.02) slower, and exits
      1 if there is one.

  regress36.py ab OLD_BIN NEW_BIN ROUNDS OLD_TUNE_JSON... -- NEW_TUNE_JSON...
      The same question on one card, without the tuner: each layer's earlier
      best config timed by the earlier build (OLD_BIN, a config_run built
      against that commit's library) and by this one (NEW_BIN), and this
      run's tuned best by NEW_BIN, ROUNDS times in turn (config_run: a graph
      of 400 launches, the best of 5 replays; the best round kept). The
      8-bit keys take their int32 twin's config where the earlier run had
      no 8-bit document, as its bench did (adapted: time_config). Prints a
      table and the layers whose tuned best now is more than 2% slower than
      the earlier best on the earlier build. AB_PART=i/n: only every n-th
      layer from the i-th (one part a GPU). AB_LAYERS=a,b: only those
      layers (by name, both outputs). Every run of one key shares its
      requantization values (config_run's CT_QUANT_FILE, kept in
      AB_QUANT_DIR if set): builds whose quant_random differ would
      otherwise run different 8-bit epilogue forms. AB_JSON=FILE: the rows
      as JSON, rewritten after each row. With no NEW_TUNE_JSON after --,
      only the same configs are timed, and the change is theirs.

  regress36.py forms BIN ROUNDS TUNE_JSON...
      Whether the saturating 8-bit epilogue form costs: each residual-free
      8-bit key's best config in the documents (or its int32 twin's) timed
      by BIN on its values as drawn (CT_QUANT_FILE, in AB_QUANT_DIR if
      set) with the clamp's top at 127, where the form may apply, and at
      126, where it may not; ROUNDS times in turn. AB_JSON=FILE: the rows.

  regress36.py pads OLD_BIN NEW_BIN ROUNDS LAYERS OLD_TUNE_JSON... -- NEW_TUNE_JSON...
      ab's question with the buffers' placement varied: each named layer's
      earlier best timed by OLD_BIN and NEW_BIN, and its tuned best by
      NEW_BIN, with config_run's CT_ALLOC_PAD at each size of AB_PADS
      (bytes, comma-separated; default 0, 4 KiB, 64 KiB, 1, 2, 32 and 96
      MiB), ROUNDS rounds of every pad and build in turn. A kernel's time
      can move by more than 2% with where its buffers lie (two builds whose
      modules differ by a global place them differently at one pad), so
      the change is taken between the means over the pads of each pad's
      best. LAYERS: names, each for both outputs, or name:int32 and
      name:int8. AB_JSON=FILE: every measurement (set AB_SET to name the
      set in them), rewritten after each key. Prints padsum's table.

  regress36.py padsum RAW_JSON...
      The table of pads' measurements (the rows AB_JSON holds): for each
      layer and output, each timing's mean and spread over the pads, the
      largest spread between rounds at one pad, and the change of the
      tuned best's mean (the earlier config's on NEW_BIN where the tuning
      kept it) against the earlier best's on OLD_BIN; exits 1 if one is
      more than 2% slower.
"""
import atexit
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile


def twin_key(key):
    """The 8-bit key (bias, per-channel scales) of an int32 key, else None."""
    if "-i8.i8.i32-" not in key:
        return None
    return key.replace("-i8.i8.i32-", "-i8.i8.i8-") + "-bias-qc"


def seed(files):
    by_key = {}
    for f in files:
        tag = os.path.basename(os.path.dirname(os.path.abspath(f)))
        for t in json.load(open(f)):
            if not t.get("best_config") or not t.get("template"):
                continue
            keys = [t["key"]] + ([twin_key(t["key"])] if twin_key(t["key"]) else [])
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


def best_configs(files, twin):
    """{key: (layer name, template, config)} of the documents' bests; with twin, each
    int32 best also stands for its 8-bit key where no document has it."""
    out = {}
    for f in files:
        for t in json.load(open(f)):
            if t.get("best_config") and t.get("template"):
                out[t["key"]] = (t["name"].split("/")[-1], t["template"], t["best_config"])
    if twin:
        for k, v in list(out.items()):
            if twin_key(k):
                out.setdefault(twin_key(k), v)
    return out


_qdir = None


def quant_file(key):
    """The CT_QUANT_FILE for key that every build timing it shares (config_run.c:
    the first run writes its requantization values, the others read them), in
    AB_QUANT_DIR if set, else in one temporary folder for this run"""
    global _qdir
    d = os.environ.get("AB_QUANT_DIR") or _qdir
    if not d:
        d = _qdir = tempfile.mkdtemp(prefix="regress36-quant-")
        atexit.register(shutil.rmtree, d, True)
    os.makedirs(d, exist_ok=True)
    return os.path.join(d, key + ".quant")


def time_config(binary, tpl, key, cfg, qfile=None):
    """config_run's time, us. A config that config_run refuses is adapted:
    a knob the space lacks dropped (as the dispatch drops it: resolve.c,
    match_knobs) and a missing choice at 0 (the dispatch takes the template
    default's value, which this script does not know: 0 for the knobs added
    since h200-final, out_stage, tile_requant and w_early)"""
    cfg = dict(cfg)
    for _ in range(4):
        r = subprocess.run([binary, tpl, key, json.dumps(cfg), "400"], capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, CT_QUANT_FILE=qfile or quant_file(key)))
        for line in r.stdout.splitlines():
            if " us per launch" in line:
                return float(line.split(" us per launch")[0].split()[-1])
        m = re.search(r"unknown knob '(\w+)'", r.stderr)
        if m and m.group(1) in cfg:
            del cfg[m.group(1)]
            continue
        m = re.search(r"knob '(\w+)' \(choice\) is missing", r.stderr)
        if m:
            cfg[m.group(1)] = 0
            continue
        break
    sys.stderr.write("%s %s: %s\n" % (binary, key, (r.stderr or r.stdout).strip()[-300:]))
    return None


def out_of(key):
    """a key's output type as the tables name it"""
    return "int8" if "-i8.i8.i8-" in key else "int32"


def ab(old_bin, new_bin, rounds, old_files, new_files):
    old = best_configs(old_files, True)
    new = best_configs(new_files, False)
    rows, worse = [], []
    first = {}
    for k, v in old.items():
        first.setdefault(v[0], len(first))
    part, parts = (int(x) for x in os.environ.get("AB_PART", "0/1").split("/"))
    only = os.environ.get("AB_LAYERS")
    keys = sorted((k for k in old if not only or old[k][0] in only.split(",")),
                  key=lambda k: (first[old[k][0]], "-i8.i8.i8-" in k))
    for key in keys[part::parts]:
        name, tpl, cfg = old[key]
        ntpl, ncfg = (new[key][1], new[key][2]) if key in new else (None, None)
        best = [None, None, None]
        for _ in range(rounds):
            for i, (b, t, c) in enumerate(((old_bin, tpl, cfg), (new_bin, tpl, cfg), (new_bin, ntpl, ncfg))):
                if t is None or (i == 2 and (t, c) == (tpl, cfg)):
                    continue
                v = time_config(b, t, key, c)
                if v is not None and (best[i] is None or v < best[i]):
                    best[i] = v
        if best[2] is None and ntpl and (ntpl, ncfg) == (tpl, cfg):
            best[2] = best[1]
        out = out_of(key)
        same = best[1] / best[0] - 1 if best[0] and best[1] else None
        ch = (best[2] / best[0] - 1 if best[0] and best[2] else None) if new_files else same
        rows.append({"layer": name, "output": out, "key": key, "earlier_build_us": best[0],
                     "this_build_same_config_us": best[1], "this_build_tuned_us": best[2],
                     "same_config": (ntpl, ncfg) == (tpl, cfg), "change": ch})
        json.dump(rows, open(os.environ.get("AB_JSON", os.devnull), "w"), indent=1)  # so far
        if ch is None or ch > 0.02:
            worse.append("%s %s %s" % (name, out, "n/a" if ch is None else "%+.1f%%" % (100 * ch)))
        f = lambda v: "-" if v is None else "%.2f" % v
        g = lambda v: "-" if v is None else "%+.1f%%" % (100 * v)
        print("| %s | %s | %s | %s (%s) | %s | %s%s |" % (name, out, f(best[0]), f(best[1]), g(same), f(best[2]),
              g(ch), " **" if ch is None or ch > 0.02 else ""), flush=True)
    print("tuned now more than 2%% slower than the earlier best on the earlier build: %d%s" %
          (len(worse), ": " + ", ".join(worse) if worse else ""))
    return rows


def forms(binary, rounds, files):
    """Each 8-bit key's best config (residual-free keys: the saturating form
    never applies with a residual) timed by BINARY on its requantization
    values as drawn, with the clamp's top set to the type's maximum (the
    saturating form may apply) and one below it (it may not), ROUNDS times
    in turn, the best kept; prints a table and returns the rows"""
    rows = []
    for key, (name, tpl, cfg) in best_configs(files, True).items():
        if "-i8.i8.i8-" not in key or "-res" in key:
            continue
        q = quant_file(key)
        if not os.path.exists(q):
            time_config(binary, tpl, key, cfg)  # writes the values as drawn
        if not os.path.exists(q):
            continue
        text = open(q).read()
        hi = int(re.search(r" hi (-?\d+) ", text).group(1))
        files_ = {}
        for form, top in (("sat", 127), ("fast", 126)):
            files_[form] = "%s.%s" % (q, form)
            with open(files_[form], "w") as f:
                f.write(re.sub(r" hi -?\d+ ", " hi %d " % top, text, count=1))
        best = {}
        for _ in range(rounds):
            for form in ("sat", "fast"):
                v = time_config(binary, tpl, key, cfg, files_[form])
                if v is not None and (form not in best or v < best[form]):
                    best[form] = v
        ch = best["sat"] / best["fast"] - 1 if best.get("sat") and best.get("fast") else None
        rows.append({"layer": name, "key": key, "drawn_top": hi, "top_127_us": best.get("sat"),
                     "top_126_us": best.get("fast"), "change": ch})
        f = lambda v: "-" if v is None else "%.2f" % v
        print("| %s | %d | %s | %s | %s |" % (name, hi, f(best.get("sat")), f(best.get("fast")),
              "-" if ch is None else "%+.1f%%" % (100 * ch)), flush=True)
    return rows


PADS = [0, 4096, 65536, 1 << 20, 2 << 20, 32 << 20, 96 << 20]


def pads(old_bin, new_bin, rounds, layers, old_files, new_files):
    """pads' measurements: one row per timing (layer, output, key, what, pad,
    round, us), written to AB_JSON after each key; returns them"""
    old, new = best_configs(old_files, True), best_configs(new_files, False)
    want = set(layers.split(","))
    pl = [int(x) for x in os.environ["AB_PADS"].split(",")] if os.environ.get("AB_PADS") else PADS
    rows = []
    for key in sorted(old):
        name, tpl, cfg = old[key]
        out = out_of(key)
        if name not in want and "%s:%s" % (name, out) not in want:
            continue
        runs = [("earlier_old_build", old_bin, tpl, cfg), ("earlier_new_build", new_bin, tpl, cfg)]
        if key in new and (new[key][1], new[key][2]) != (tpl, cfg):
            runs.append(("tuned_new_build", new_bin, new[key][1], new[key][2]))
        for rnd in range(rounds):
            for p in pl:
                os.environ["CT_ALLOC_PAD"] = str(p)
                for what, b, t, c in runs:
                    rows.append({"set": os.environ.get("AB_SET", ""), "layer": name, "output": out, "key": key,
                                 "what": what, "pad": p, "round": rnd, "us": time_config(b, t, key, c)})
        os.environ.pop("CT_ALLOC_PAD", None)
        json.dump(rows, open(os.environ.get("AB_JSON", os.devnull), "w"), indent=1)
    return rows


def padsum(rows, limit=0.02):
    """padsum's table from pads' rows; returns (summary rows, exit status)"""
    by = {}
    for r in rows:
        k = (r.get("set", ""), r["layer"], r.get("output") or out_of(r["key"]))
        by.setdefault(k, {}).setdefault(r["what"], {}).setdefault(r["pad"], []).append(r["us"])
    print("| set | layer | output | pads | earlier best, earlier build: mean (spread) | same config, this build "
          "| tuned now, this build | rounds at one pad, up to | change of the means |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    out, worse = [], []
    for (st, name, o), w in sorted(by.items()):
        stat = {}
        spread_r = 0.0
        for what, per in w.items():
            best = {p: min(v for v in vs if v) for p, vs in per.items() if any(vs)}
            if not best or len(best) < len(per):
                stat[what] = None  # a pad without a time: no mean
                continue
            for p, vs in per.items():
                spread_r = max(spread_r, max(vs) / min(vs) - 1) if all(vs) else spread_r
            m = sum(best.values()) / len(best)
            stat[what] = (m, max(best.values()) / min(best.values()) - 1, len(best))
        a = stat.get("earlier_old_build")
        b = stat.get("tuned_new_build", stat.get("earlier_new_build"))
        ch = b[0] / a[0] - 1 if a and b else None
        f = lambda x: "-" if not x else "%.2f (%.1f%%)" % (x[0], 100 * x[1])
        n = max((x[2] for x in stat.values() if x), default=0)
        flag = ch is None or ch > limit
        print("| %s | %s | %s | %d | %s | %s | %s | %.1f%% | %s%s |" % (
            st, name, o, n, f(a), f(stat.get("earlier_new_build")),
            f(stat.get("tuned_new_build")) if "tuned_new_build" in w else "kept", 100 * spread_r,
            "-" if ch is None else "%+.1f%%" % (100 * ch), " **" if flag else ""))
        out.append({"set": st, "layer": name, "output": o, "pads": n,
                    **{k + "_mean_us": (v[0] if v else None) for k, v in stat.items()},
                    **{k + "_spread": (v[1] if v else None) for k, v in stat.items()},
                    "rounds_spread": spread_r, "change": ch})
        if flag:
            worse.append("%s %s %s %s" % (st, name, o, "n/a" if ch is None else "%+.1f%%" % (100 * ch)))
    print("means over the pads, tuned now more than %.0f%% slower than the earlier best on the earlier build: %d%s" % (
        100 * limit, len(worse), ": " + ", ".join(worse) if worse else ""))
    return out, 1 if worse else 0


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
    if len(argv) >= 7 and argv[1] == "ab" and "--" in argv and argv.index("--") > 5:
        i = argv.index("--")
        print("| layer | output | earlier best, earlier build (us) | same config, this build | tuned now, this build | change |")
        print("| --- | --- | ---: | ---: | ---: | ---: |")
        ab(argv[2], argv[3], int(argv[4]), argv[5:i], argv[i + 1:])  # writes AB_JSON as it goes
        return 0
    if len(argv) >= 5 and argv[1] == "forms":
        print("| layer | drawn top | top 127 (us) | top 126 (us) | 127 against 126 |")
        print("| --- | ---: | ---: | ---: | ---: |")
        rows = forms(argv[2], int(argv[3]), argv[4:])
        json.dump(rows, open(os.environ.get("AB_JSON", os.devnull), "w"), indent=1)
        return 0
    if len(argv) >= 9 and argv[1] == "pads" and "--" in argv and argv.index("--") > 6:
        i = argv.index("--")
        rows = pads(argv[2], argv[3], int(argv[4]), argv[5], argv[6:i], argv[i + 1:])
        return padsum(rows)[1]
    if len(argv) >= 3 and argv[1] == "padsum":
        rows = [r for f in argv[2:] for r in json.load(open(f))]
        return padsum(rows)[1]
    if len(argv) in (4, 5) and argv[1] == "compare":
        return compare(argv[2], argv[3], float(argv[4]) if len(argv) == 5 else 0.02)
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
