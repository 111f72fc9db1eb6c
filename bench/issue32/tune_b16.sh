#!/bin/sh
# Issue 32: ResNet-50 b16 (symmetric int8 QDQ) tuned as a model with a 120 s
# budget, then its conv stack benchmarked end to end against cuDNN.
set -u
. bench/issue32/env.sh
make_model resnet50 s8
s=$(date +%s)
$B/convtune tune --model $M/resnet50.qdq-s8.onnx --batch 16 --time-budget 120 --db $OUT/r50b16.db -q --json > $OUT/tune-model-r50b16.json 2> $OUT/tune-model-r50b16.err
echo "tune --model rc=$? wall $(($(date +%s)-s)) s"; tail -3 $OUT/tune-model-r50b16.err
python3 -c "import json; d=json.load(open('$OUT/tune-model-r50b16.json')); d=d[0] if isinstance(d,list) else d; print('model total %.2f us (start %s), %d trials, %d rounds, wall %.1f s' % (d['total_us'], d['start_total_us'], d['trials'], d['rounds'], d['wall_s']))"
s=$(date +%s)
$B/convtune bench --model $M/resnet50.qdq-s8.onnx --batch 16 --db $OUT/r50b16.db --results-dir $OUT > $OUT/bench-r50b16.md 2> $OUT/bench-r50b16.err
echo "bench rc=$? $(($(date +%s)-s)) s"; grep -E "every node|not every|chain|images per|floor" $OUT/bench-r50b16.md | head; tail -3 $OUT/bench-r50b16.err
