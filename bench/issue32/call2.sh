#!/bin/sh
# Issue 32, GPU call 2: listings, ResNet-50 b16 tuned as a model in 120 s and
# benchmarked, then the 150-trial baseline until the call's deadline.
T0=$(date +%s); export T0
set -u
. bench/issue32/env.sh
make_model resnet50 s8; make_model resnet50 u8; make_model espcn s8
for v in s8 u8; do
  $B/convtune workload --model $M/resnet50.qdq-$v.onnx --batch 16 > $OUT/list-resnet50-$v.txt 2>&1
  echo "resnet50 $v rc=$?: $(tail -1 $OUT/list-resnet50-$v.txt)"
done
$B/convtune workload --model $M/espcn.qdq-s8.onnx --batch 1 --layout nchw > $OUT/list-espcn-nchw.txt 2>&1; echo "espcn nchw rc=$?"
$B/convtune workload --model $M/espcn.qdq-s8.onnx --batch 1 > $OUT/list-espcn-nhwc.txt 2>&1
sh bench/issue32/tune_b16.sh
sh bench/issue32/baseline.sh 570
