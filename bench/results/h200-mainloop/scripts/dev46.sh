#!/bin/sh
# call 13: GPU tests at 9da2cb3: nhwc8 (the tiled 1x1 data with 8-bit output), the dispatch library's GPU tests
export LD_LIBRARY_PATH=$PWD/.gpu-libs:/usr/local/cuda/lib64
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
B=build-rel O=$OUT
(cd $B && CK_RUN_CASE=nhwc8 timeout 420 ./test_gpu_templates) > $O/gpu-nhwc8.txt 2>&1; echo nhwc8 $? $(el); grep -E "exact|FAIL|Checks" $O/gpu-nhwc8.txt | head
(cd $B && timeout 120 ./test_gpu_dispatch) > $O/gpu-dispatch.txt 2>&1; echo dispatch $? $(el); grep -E "Checks|FAIL|fail" $O/gpu-dispatch.txt | head -5
