#!/bin/sh
# calls 14-15 (call 14 hung on the 1x1 layers: the patch did not yet drop their tiled A copy): the 8-bit kernels taken apart like the int32 ones (x-mode patch; timing only): ResNet-50 b16's tuned configs of call 12, int8 and int32
export LD_LIBRARY_PATH=$PWD/.gpu-libs:/usr/local/cuda/lib64
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
for m in 0 1 3 5 6; do
  PROBE_TIME_WRONG=1 PROBE_OPT="-DCT_X_MODE=$m" timeout 70 bench/work/probe-x8 bench/work/x8.txt 2>&1 | grep -E " us |MEASURE|ERROR" | awk '{print $1, $2}' | sort > $OUT/m$m.txt
done
join $OUT/m0.txt $OUT/m1.txt | join - $OUT/m3.txt | join - $OUT/m5.txt | join - $OUT/m6.txt > $OUT/all.txt; cat $OUT/all.txt
for s in i8 i32; do grep "\.$s " $OUT/all.txt | awk -v s=$s '{a+=$2;b+=$3;c+=$4;d+=$5;e+=$6} END {print "sum", s, a, b, c, d, e}'; done
