#!/bin/sh
# Issue 32, GPU calls 3-4: the baseline of the 120 s model budget: each
# unique workload of ResNet-50 b16 (symmetric int8 QDQ) tuned on its own
# with 150 new trials per template, in a fresh database. A command may run
# 10 minutes, so the list is split: `baseline.sh 1` tunes the first half,
# `baseline.sh 2` (with the first half's database carried in .gpu-bin) the
# second, then sums count x best over both.
set -u
. bench/issue32/env.sh
make_model resnet50 s8
part=$1
$B/convtune workload --model $M/resnet50.qdq-s8.onnx --batch 16 --json > /tmp/wl.json
python3 - "$part" <<'PY'
import json, sys
d = json.load(open('/tmp/wl.json'))
ws = d['workloads']
half = (len(ws) + 1) // 2
part = ws[:half] if sys.argv[1] == '1' else ws[half:]
json.dump([dict(name=w['name'], **w['workload']) for w in part], open('/tmp/part.json', 'w'))
json.dump({w['key']: w['count'] for w in ws}, open('/tmp/counts.json', 'w'))
print('part', sys.argv[1], len(part), 'of', len(ws), 'workloads')
PY
db=$OUT/r50b16-base.db
[ "$part" = 2 ] && cp .gpu-bin/r50b16-base.db $db
s=$(date +%s)
$B/convtune tune --file /tmp/part.json --trials 150 --db $db -q --json > $OUT/base-$part.json 2> $OUT/base-$part.err
echo "tune part $part rc=$? wall $(($(date +%s)-s)) s"; tail -3 $OUT/base-$part.err
[ "$part" = 2 ] && cp .gpu-bin/base-1.json $OUT/
python3 - <<'PY'
import json, glob, os
counts = json.load(open('/tmp/counts.json'))
rows = []
for f in sorted(glob.glob(os.environ['OUT'] + '/base-*.json')):
    rows += json.load(open(f))
best = {}
for r in rows:
    if r['best_us'] > 0 and (r['key'] not in best or r['best_us'] < best[r['key']]):
        best[r['key']] = r['best_us']
wall = sum(r['wall_s'] for r in rows)
tot = sum(counts[k] * b for k, b in best.items())
print('baseline: %d of %d workloads tuned, total %.2f us, tuning wall %.1f s, trials %d' % (
    len(best), len(counts), tot, wall, sum(r['trials'] for r in rows)))
PY
