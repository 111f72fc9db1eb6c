#!/bin/bash
# does a longer tuning move the large layers? each key tuned N trials into a fresh database, no early stopping
export LD_LIBRARY_PATH=$PWD/.gpu-libs:/usr/local/cuda/lib64
rm -f /tmp/bud.db*
while read -r n t k; do
  s=$(date +%s)
  timeout 170 build-rel/convtune tune $k --template $t --trials $n --seed 1 --db /tmp/bud.db -q --json > /tmp/bud.json 2>/tmp/bud.err
  rc=$?
  python3 - "$k" "$n" "$rc" "$(( $(date +%s) - s ))" <<'PY'
import json, sys
k, n, rc, sec = sys.argv[1:]
try:
    d = json.load(open("/tmp/bud.json")); w = d[0] if isinstance(d, list) else d
    print("%s trials %s rc %s %s s: best %.2f us %s" % (k, w.get("trials"), rc, sec, w.get("best_us"), json.dumps(w.get("best_config"))))
except Exception as e:
    print(k, "rc", rc, "no result", e, open("/tmp/bud.err").read()[-300:])
PY
done <<'L'
400 conv3d_ndhwc_wgmma conv3d-ndhwc-i8.i8.i8-n8-c64-k64-16x56x56-r3x3x3-s1x1x1-p1x1x1.1x1x1-d1x1x1-bias-qc
400 conv3d_ndhwc_wgmma conv3d-ndhwc-i8.i8.i32-n8-c64-k64-16x56x56-r3x3x3-s1x1x1-p1x1x1.1x1x1-d1x1x1
300 conv2d_nhwc_wgmma conv2d-nhwc-i8.i8.i8-n256-c64-k64-56x56-r3x3-s1x1-p1x1.1x1-d1x1-bias-qc-onnx
300 conv2d_nhwc_wgmma conv2d-nhwc-i8.i8.i8-n256-c64-k256-56x56-r1x1-s1x1-p0x0.0x0-d1x1-bias-qc-res-onnx
L
