#!/bin/sh
# Issue 32, GPU call 1: the models, their listings, the GPU tests of the
# ONNX rounding and the new parts, then ResNet-50 b16 (symmetric int8 QDQ)
# tuned as a model with a 120 s budget and benchmarked end to end.
set -u
. bench/issue32/env.sh
nvidia-smi -L
make_model resnet50 s8; make_model resnet50 u8
make_model r3d_18 s8; make_model espcn s8; make_model mobilenet_v2 s8
ls -la $M
for f in $M/*.qdq-*.onnx; do
  echo "== $(basename $f)"; $B/convtune workload --model $f --batch 16 > $OUT/list-$(basename $f .onnx).txt 2>&1
  echo "rc=$?"; tail -1 $OUT/list-$(basename $f .onnx).txt
done
$B/convtune workload --model $M/espcn.qdq-s8.onnx --batch 1 --layout nchw | tail -4
for t in test_gpu_quant test_runner test_sched_gpu test_gpu_model_bench; do
  s=$(date +%s); timeout 150 $B/$t > $OUT/$t.log 2>&1; echo "$t rc=$? $(($(date +%s)-s))s: $(grep -E '^[0-9]+%' $OUT/$t.log | tail -1)"
done
s=$(date +%s); CK_RUN_CASE=onnx timeout 200 $B/test_gpu_templates > $OUT/test_gpu_templates-onnx.log 2>&1
echo "test_gpu_templates onnx rc=$? $(($(date +%s)-s))s: $(grep -E '^[0-9]+%' $OUT/test_gpu_templates-onnx.log | tail -1)"
