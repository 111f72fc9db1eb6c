#!/bin/sh
# Issue 32, GPU call 3: ResNet-50 at batch 256 and r3d_18 at batch 8
# (symmetric int8 QDQ), each tuned as a model in 120 s and benchmarked.
set -u
sh bench/issue32/model_run.sh resnet50 s8 256 120
sh bench/issue32/model_run.sh r3d_18 s8 8 120
tar czf $OUT/call3.tgz -C $OUT res
