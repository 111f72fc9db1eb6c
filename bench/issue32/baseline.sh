#!/bin/sh
# Issue 32: the baseline of the 120 s model budget: each unique workload of
# ResNet-50 b16 (symmetric int8 QDQ) tuned on its own with 150 new trials
# per template, into one fresh database, in the model's order. A command
# may run 10 minutes, so this tunes workloads until DEADLINE (seconds since
# the call's start, $T0) and can be continued: the database and the
# per-workload results (base.db, base.jsonl) are written to $OUT and read
# back from .gpu-bin when carried there. Prints the total when all are done.
set -u
. bench/issue32/env.sh
deadline=$1
make_model resnet50 s8
[ -f .gpu-bin/base.db ] && cp .gpu-bin/base.db .gpu-bin/base.jsonl $OUT/
touch $OUT/base.jsonl
$B/convtune workload --model $M/resnet50.qdq-s8.onnx --batch 16 --json > /tmp/wl.json
n=$(python3 -c "import json; print(len(json.load(open('/tmp/wl.json'))['workloads']))")
i=0
while [ $i -lt $n ]; do
  key=$(python3 -c "import json,sys; print(json.load(open('/tmp/wl.json'))['workloads'][$i]['key'])")
  if ! grep -q "\"$key\"" $OUT/base.jsonl; then
    [ $(($(date +%s) - T0 + 45)) -gt $deadline ] && { echo "baseline: deadline, $i of $n"; break; }
    python3 -c "
import json; w = json.load(open('/tmp/wl.json'))['workloads'][$i]
json.dump([dict(name=w['name'], **w['workload'])], open('/tmp/one.json', 'w'))"
    timeout $((deadline - $(date +%s) + T0)) $B/convtune tune --file /tmp/one.json --trials 150 \
      --db $OUT/base.db -q --json > /tmp/one-res.json 2>> $OUT/base.err \
      && python3 -c "import json; print(json.dumps(json.load(open('/tmp/one-res.json'))[0]))" >> $OUT/base.jsonl
  fi
  i=$((i + 1))
done
python3 - <<'PY'
import json, os
d = json.load(open('/tmp/wl.json'))
counts = {w['key']: w['count'] for w in d['workloads']}
rows = [json.loads(l) for l in open(os.environ['OUT'] + '/base.jsonl') if l.strip()]
best = {r['key']: r['best_us'] for r in rows if r['best_us'] > 0}
print('baseline: %d of %d workloads done, %d trials, tuning wall %.1f s, total %.2f us over the done ones' % (
    len(rows), len(counts), sum(r['trials'] for r in rows), sum(r['wall_s'] for r in rows),
    sum(counts[k] * b for k, b in best.items())))
PY
