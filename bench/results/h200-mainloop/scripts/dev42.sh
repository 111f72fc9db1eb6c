#!/bin/sh
# calls 8-9 (call 8: modes 0 1 2 3 4, 1 no A copies, 2 no B copies, 4 no wgmma; call 9 as below): the fixed cost: CT_X_MODE 0 as built, 3 no copies, 5 no copies and no wgmma, 6 also no epilogue (timing only)
# CT_X_MODE 0 as built, 1 no A copies, 2 no B copies, 3 neither, 4 no wgmma
export LD_LIBRARY_PATH=$PWD/.gpu-libs:/usr/local/cuda/lib64
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
for m in 0 3 5 6; do
  PROBE_TIME_WRONG=1 PROBE_OPT="-DCT_X_MODE=$m" timeout 100 bench/work/probe-x bench/work/xm.txt 2>&1 | grep -E " us |MEASURE|ERROR" | awk '{print $1, $2}' | sort > $OUT/m$m.txt
done
join $OUT/m0.txt $OUT/m3.txt | join - $OUT/m5.txt | join - $OUT/m6.txt
