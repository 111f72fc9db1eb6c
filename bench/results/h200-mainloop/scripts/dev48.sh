#!/bin/sh
# call 16 (46c990e): GPU cases nhwc and nhwc8 at 8 configs per workload, with the 1x1x1 stride-1 shape now in nh3d (the tiled 3D data)
export LD_LIBRARY_PATH=$PWD/.gpu-libs:/usr/local/cuda/lib64
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
B=build-rel O=$OUT
(cd $B && CK_RUN_CASE=nhwc timeout 150 ./test_gpu_templates 8) > $O/gpu-nhwc.txt 2>&1; echo nhwc $? $(el); grep -E "exact|FAIL|Checks" $O/gpu-nhwc.txt | head
(cd $B && CK_RUN_CASE=nhwc8 timeout 250 ./test_gpu_templates 8) > $O/gpu-nhwc8.txt 2>&1; echo nhwc8 $? $(el); grep -E "exact|FAIL|Checks" $O/gpu-nhwc8.txt | head
