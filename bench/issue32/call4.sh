#!/bin/sh
# Issue 32, GPU call 4: the asymmetric (ORT default, uint8) ResNet-50 at
# batch 16 tuned as a model in 120 s and benchmarked, then the stems'
# templates with onnx rounding and the quantized dispatch tests.
set -u
. bench/issue32/env.sh
sh bench/issue32/model_run.sh resnet50 u8 16 120
s=$(date +%s); CK_RUN_CASE=onnx_stem timeout 150 $B/test_gpu_templates > $OUT/res/test_gpu_templates-onnx_stem.log 2>&1
echo "test_gpu_templates onnx_stem rc=$? $(($(date +%s)-s))s: $(grep -E '^[0-9]+%' $OUT/res/test_gpu_templates-onnx_stem.log | tail -1)"
grep -E "exact over|wrong|differ" $OUT/res/test_gpu_templates-onnx_stem.log | head
s=$(date +%s); timeout 170 $B/test_gpu_quant > $OUT/res/test_gpu_quant.log 2>&1
echo "test_gpu_quant rc=$? $(($(date +%s)-s))s: $(grep -E '^[0-9]+%' $OUT/res/test_gpu_quant.log | tail -1)"
tar czf $OUT/call4.tgz -C $OUT res
