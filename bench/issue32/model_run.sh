#!/bin/sh
# Issue 32: model_run.sh NAME VARIANT BATCH BUDGET: the model tuned as one
# unit with a time budget into a fresh database, then its conv stack
# benchmarked end to end; everything under $OUT/res (tarred by the caller:
# a call brings back 8 files at most).
set -u
. bench/issue32/env.sh
name=$1 v=$2 n=$3 budget=$4
tag=$name-$v-b$n
mkdir -p $OUT/res
make_model $name $v
f=$M/$name.qdq-$v.onnx
$B/convtune workload --model $f --batch $n > $OUT/res/list-$tag.txt 2>&1
s=$(date +%s)
$B/convtune tune --model $f --batch $n --time-budget $budget --db /tmp/$tag.db -q --json > $OUT/res/tune-$tag.json 2> $OUT/res/tune-$tag.err
echo "$tag: tune rc=$? wall $(($(date +%s)-s)) s"
python3 -c "import json; d=json.load(open('$OUT/res/tune-$tag.json')); d=d[0] if isinstance(d,list) else d; print('  model total %.2f us, %d trials, %d rounds, wall %.1f s, ended %s' % (d['total_us'], d['trials'], d['rounds'], d['wall_s'], d['ended']))"
s=$(date +%s)
$B/convtune bench --model $f --batch $n --db /tmp/$tag.db --results-dir $OUT/res > $OUT/res/bench-$tag.md 2> $OUT/res/bench-$tag.err
echo "  bench rc=$? $(($(date +%s)-s)) s"; grep -E "every node|not every|chain, one|images per|as fast" $OUT/res/bench-$tag.md | head -5
