#!/bin/bash
# the stems' untuned defaults before (a_buffers 2, out_stage 0) and after f5c044a, on this binary
export LD_LIBRARY_PATH=$PWD/.gpu-libs:/usr/local/cuda/lib64
T2=conv2d_nhwc_wgmma_stem T3=conv3d_ndhwc_wgmma_stem
cr() { echo "$1 $(timeout 120 build-rel/config_run $2 $3 "$4" 400 2>&1 | tail -1)"; }
while read -r tag t k old new; do
  cr "$tag old" $t $k "$old"; cr "$tag new" $t $k "$new"
done <<'L'
r50-b256 conv2d_nhwc_wgmma_stem conv2d-nhwc-i8.i8.i8-n256-c3-k64-224x224-r7x7-s2x2-p3x3.3x3-d1x1-bias-qc-onnx {"block_m":128,"block_n":64,"warpgroups":2,"a_buffers":2,"blocks_per_sm":2,"out_stage":0} {"block_m":128,"block_n":64,"warpgroups":2,"a_buffers":1,"blocks_per_sm":2,"out_stage":1}
r50-b16 conv2d_nhwc_wgmma_stem conv2d-nhwc-i8.i8.i8-n16-c3-k64-224x224-r7x7-s2x2-p3x3.3x3-d1x1-bias-qc-onnx {"block_m":128,"block_n":64,"warpgroups":2,"a_buffers":2,"blocks_per_sm":2,"out_stage":0} {"block_m":128,"block_n":64,"warpgroups":2,"a_buffers":1,"blocks_per_sm":2,"out_stage":1}
r50-b16-i32 conv2d_nhwc_wgmma_stem conv2d-nhwc-i8.i8.i32-n16-c3-k64-224x224-r7x7-s2x2-p3x3.3x3-d1x1 {"block_m":128,"block_n":64,"warpgroups":2,"a_buffers":2,"blocks_per_sm":2,"a_prefetch":0,"out_tma":0} {"block_m":128,"block_n":64,"warpgroups":2,"a_buffers":1,"blocks_per_sm":2,"a_prefetch":0,"out_tma":0}
mbv2-b32 conv2d_nhwc_wgmma_stem conv2d-nhwc-i8.i8.i8-n32-c3-k32-224x224-r3x3-s2x2-p1x1.1x1-d1x1-bias-qc-onnx {"block_m":128,"block_n":32,"warpgroups":2,"a_buffers":2,"blocks_per_sm":3,"out_stage":0} {"block_m":128,"block_n":32,"warpgroups":2,"a_buffers":2,"blocks_per_sm":3,"out_stage":1}
mbv2-b1 conv2d_nhwc_wgmma_stem conv2d-nhwc-i8.i8.i8-n1-c3-k32-224x224-r3x3-s2x2-p1x1.1x1-d1x1-bias-qc-onnx {"block_m":128,"block_n":32,"warpgroups":2,"a_buffers":2,"blocks_per_sm":3,"out_stage":0} {"block_m":128,"block_n":32,"warpgroups":2,"a_buffers":2,"blocks_per_sm":3,"out_stage":1}
r3d-b8 conv3d_ndhwc_wgmma_stem conv3d-ndhwc-i8.i8.i8-n8-c3-k64-16x112x112-r3x7x7-s1x2x2-p1x3x3.1x3x3-d1x1x1-bias-qc {"block_m":128,"block_n":64,"warpgroups":2,"a_buffers":2,"blocks_per_sm":1,"out_stage":0} {"block_m":128,"block_n":64,"warpgroups":2,"a_buffers":1,"blocks_per_sm":2,"out_stage":1}
r3d-b8-i32 conv3d_ndhwc_wgmma_stem conv3d-ndhwc-i8.i8.i32-n8-c3-k64-16x112x112-r3x7x7-s1x2x2-p1x3x3.1x3x3-d1x1x1 {"block_m":128,"block_n":64,"warpgroups":2,"a_buffers":2,"blocks_per_sm":2,"a_prefetch":0,"out_tma":0} {"block_m":128,"block_n":64,"warpgroups":2,"a_buffers":1,"blocks_per_sm":2,"a_prefetch":0,"out_tma":0}
L
