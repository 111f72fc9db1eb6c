#!/bin/sh
# call 10: 1x1 stride-1 layers' data by tiled copies (probe-at) against im2col (probe-x, CT_X_MODE 0 = main), tuned ResNet-50 b16 int32 configs, twice
export LD_LIBRARY_PATH=$PWD/.gpu-libs:/usr/local/cuda/lib64
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
for r in 1 2; do
  timeout 60 bench/work/probe-x bench/work/at.txt 2>&1 | grep -E " us |WRONG|ERROR" | awk '{print $1, $2}' | sort > $OUT/b$r.txt
  timeout 60 bench/work/probe-at bench/work/at.txt 2>&1 | grep -E " us |WRONG|ERROR" | awk '{print $1, $2, $3}' | sort > $OUT/a$r.txt
done
join $OUT/b1.txt $OUT/a1.txt | join - $OUT/b2.txt | join - $OUT/a2.txt
