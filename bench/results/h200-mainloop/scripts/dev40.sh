#!/bin/sh
# call 6: a_regs diagnosis on l3_3x3_256 b16, graph-timed (probe-ar times wrong results too): as built; no ring loads; no transposition
export LD_LIBRARY_PATH=$PWD/.gpu-libs:/usr/local/cuda/lib64
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
for v in "-DCT_X_NONE=1" -DCT_X_NOLOAD=1 -DCT_X_NOTRANS=1; do
  echo "== $v"; PROBE_TIME_WRONG=1 PROBE_OPT="$v" timeout 60 bench/work/probe-ar bench/work/ar-y.txt 2>&1 | grep -E " us " | cut -c1-60
done
