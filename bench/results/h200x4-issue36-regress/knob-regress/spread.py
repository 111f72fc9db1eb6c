# spread.py TAG DOCS...: each tuned best (this build) timed with the buffers at 5 offsets, 1 round
import json, os, sys, time
sys.path.insert(0, "bench"); import regress36 as r
tag, docs = sys.argv[1], sys.argv[2:]
pads = [0, 65536, 2 << 20, 32 << 20]
rows, t0 = [], time.time()
for d in docs:
    for t in json.load(open(d)):
        if not t.get("best_config"): continue
        row = {"set": tag, "layer": t["name"].split("/")[-1], "key": t["key"], "tuner_us": t["best_us"], "us": {}}
        for p in pads:
            os.environ["CT_ALLOC_PAD"] = str(p)
            row["us"][p] = r.time_config("build-rel/config_run", t["template"], t["key"], t["best_config"])
        rows.append(row); print(json.dumps(row), flush=True)
        json.dump(rows, open(os.environ["OUT"] + "/spread-%s.json" % tag, "w"))
        if time.time() - t0 > float(os.environ.get("SP_T", 190)): sys.exit(0)
