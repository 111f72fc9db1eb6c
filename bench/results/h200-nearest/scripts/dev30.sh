#!/bin/sh
# call 9 (2026-11-26): main (a5b675b + the new stride-2 stem shapes of test_gpu_templates): GPU cases stem, stem8, nhwc; test_tune_gpu
export LD_LIBRARY_PATH=$PWD/.gpu-libs:/usr/local/cuda/lib64
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
DEV=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$DEV"
B=build-rel O=$OUT
for c in stem stem8 nhwc; do (cd $B && CK_RUN_CASE=$c timeout 200 ./test_gpu_templates 3) > $O/t-$c.log 2>&1; r=$?; echo test $c $r $(el)
  grep -hE "Checks|:F:|:E:|exact over" $O/t-$c.log | cut -c1-240 | head -8; done
(cd $B && timeout 150 ./test_tune_gpu) > $O/t-tune-gpu.log 2>&1; echo test_tune_gpu $? $(el); grep -E "Checks|:F:|:E:" $O/t-tune-gpu.log
cd $O && tar czf all.tgz *.log; echo done $(el)
