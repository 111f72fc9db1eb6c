#!/bin/sh
# call 7: wgmma groups in flight (CT_X_INFL 1: wait<1>, as main; 2: wait<2>, a stage released two later), tuned ResNet-50 b16 int32 configs and more stages
export LD_LIBRARY_PATH=$PWD/.gpu-libs:/usr/local/cuda/lib64
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
for v in 1 2; do
  PROBE_OPT="-DCT_X_INFL=$v" timeout 100 bench/work/probe-infl bench/work/infl.txt > $OUT/infl$v.txt 2>&1
done
join <(grep -E " us |WRONG|INVALID" $OUT/infl1.txt | awk '{print $1, $2}' | sort) <(grep -E " us |WRONG|INVALID" $OUT/infl2.txt | awk '{print $1, $2}' | sort)
