#!/bin/sh
# test_versions.sh SOURCE_DIR: a template's version (cmake/embed.cmake with
# SCAN) follows exactly its own code: a change to one family's header or
# descriptor changes that family's versions and no other, a change to a
# header two families include changes both, and the shared template.h
# changes every one; so does core/quant.cuh (found through INCLUDE) for every
# kernel that includes it. Runs embed.cmake on a copy of templates/ and core/.
set -eu
SRC=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cp -r "$SRC/templates" "$T/templates"
cp -r "$SRC/core" "$T/core"
versions() { # prints "name version" per template source
  files=$(ls "$T"/templates/*.cu | tr '\n' ';')
  cmake -DOUT="$T/e.c" -DSYMBOL=x "-DFILES=$files" \
    "-DHASH_WITH=$T/templates/template.h;$T/templates/template.c" -DSCAN=1 "-DINCLUDE=$T/core" \
    -P "$SRC/cmake/embed.cmake"
  grep -o '"[a-z0-9_]*\.cu", (const char \*)f[0-9]*, [0-9]*, "[0-9a-f]*"' "$T/e.c" |
    awk '{print $1, $NF}' | tr -d '",'
}
# changed FILE: the templates whose version changes when FILE does
changed() {
  versions >"$T/before"
  cp "$T/templates/$1" "$T/keep"
  echo "/* changed */" >>"$T/templates/$1"
  versions >"$T/after"
  cp "$T/keep" "$T/templates/$1"
  diff "$T/before" "$T/after" | sed -n 's/^> \([^ ]*\) .*/\1/p' | tr '\n' ' '
}
expect() { # FILE WANT
  got=$(changed "$1")
  if [ "$got" != "$2" ]; then
    echo "FAIL: changing $1 changed [$got], want [$2]"
    exit 1
  fi
  echo "ok: $1 -> $got"
}
mma="conv2d_nchw4c_mma.cu conv3d_ncdhw4c_mma.cu "
wg="conv2d_nchw4c_wgmma.cu conv3d_ncdhw4c_wgmma.cu "
expect conv_wgmma.cuh "$wg"
expect conv_wgmma.c "$wg"
expect conv_mma.cuh "$mma"
expect conv_mma.c "$mma"
nh="conv2d_nhwc_wgmma.cu conv3d_ndhwc_wgmma.cu "
expect conv_wgmma_nhwc.cuh "$nh"
expect conv_wgmma_nhwc.c "$nh"
expect wgmma_ptx.cuh "conv2d_nchw4c_wgmma.cu conv2d_nhwc_dw_mma.cu conv2d_nhwc_grouped_mma.cu conv2d_nhwc_wgmma.cu conv2d_nhwc_wgmma_stem.cu conv3d_ncdhw4c_wgmma.cu conv3d_ndhwc_dw_mma.cu conv3d_ndhwc_grouped_mma.cu conv3d_ndhwc_wgmma.cu conv3d_ndhwc_wgmma_stem.cu "
ws="conv2d_nhwc_wgmma_stem.cu conv3d_ndhwc_wgmma_stem.cu "
expect conv_wgmma_stem.cuh "$ws"
expect conv_wgmma_stem.c "$ws"
expect wgmma_epilogue.cuh "conv2d_nhwc_wgmma.cu conv2d_nhwc_wgmma_stem.cu conv3d_ndhwc_wgmma.cu conv3d_ndhwc_wgmma_stem.cu "
nm="conv2d_nhwc_mma.cu conv3d_ndhwc_mma.cu "
expect conv_mma_nhwc.cuh "$nm"
expect conv_mma_nhwc.c "$nm"
expect nhwc_store.cuh "conv2d_nhwc_mma.cu conv2d_nhwc_wgmma.cu conv2d_nhwc_wgmma_stem.cu conv3d_ndhwc_mma.cu conv3d_ndhwc_wgmma.cu conv3d_ndhwc_wgmma_stem.cu "
expect tc_common.cuh "conv2d_nchw4c_mma.cu conv2d_nchw4c_wgmma.cu conv2d_nhwc_dw.cu conv2d_nhwc_dw_mma.cu conv2d_nhwc_grouped.cu conv2d_nhwc_grouped_mma.cu conv2d_nhwc_mma.cu conv2d_nhwc_pw_mma.cu conv2d_nhwc_pwdw.cu conv2d_nhwc_wgmma.cu conv2d_nhwc_wgmma_stem.cu conv3d_ncdhw4c_mma.cu conv3d_ncdhw4c_wgmma.cu conv3d_ndhwc_dw.cu conv3d_ndhwc_dw_mma.cu conv3d_ndhwc_grouped.cu conv3d_ndhwc_grouped_mma.cu conv3d_ndhwc_mma.cu conv3d_ndhwc_pw_mma.cu conv3d_ndhwc_wgmma.cu conv3d_ndhwc_wgmma_stem.cu "
# the grouped and depthwise families (issue 35): each its own
gn="conv2d_nhwc_grouped.cu conv3d_ndhwc_grouped.cu "
expect conv_grouped_nhwc.cuh "$gn"
expect conv_grouped_nhwc.c "$gn"
gp="conv2d_nchw4c_grouped.cu conv3d_ncdhw4c_grouped.cu "
expect conv_grouped_packed.cuh "$gp"
expect conv_grouped_packed.c "$gp"
dw="conv2d_nhwc_dw.cu conv3d_ndhwc_dw.cu "
expect conv_dw_nhwc.cuh "$dw"
expect conv_dw_nhwc.c "$dw"
# the depthwise and grouped mma families share one kernel and descriptor file
dm="conv2d_nhwc_dw_mma.cu conv2d_nhwc_grouped_mma.cu conv3d_ndhwc_dw_mma.cu conv3d_ndhwc_grouped_mma.cu "
expect conv_dw_mma.cuh "$dm"
expect conv_dw_mma.c "$dm"
pw="conv2d_nhwc_pw_mma.cu conv3d_ndhwc_pw_mma.cu "
expect conv_pw_mma.cuh "$pw"
expect conv_pw_mma.c "$pw"
# the fused pointwise + depthwise template: its own kernel and descriptor
expect conv_pwdw.cuh "conv2d_nhwc_pwdw.cu "
expect conv_pwdw.c "conv2d_nhwc_pwdw.cu "
# the fixed-point arithmetic lives in core/ and every kernel but pack.cu includes it
expect ../core/quant.cuh "conv2d_nchw4c_dp4a.cu conv2d_nchw4c_grouped.cu conv2d_nchw4c_mma.cu conv2d_nchw4c_wgmma.cu conv2d_nhwc_dw.cu conv2d_nhwc_dw_mma.cu conv2d_nhwc_grouped.cu conv2d_nhwc_grouped_mma.cu conv2d_nhwc_mma.cu conv2d_nhwc_pw_mma.cu conv2d_nhwc_pwdw.cu conv2d_nhwc_wgmma.cu conv2d_nhwc_wgmma_stem.cu conv3d_ncdhw4c_dp4a.cu conv3d_ncdhw4c_grouped.cu conv3d_ncdhw4c_mma.cu conv3d_ncdhw4c_wgmma.cu conv3d_ndhwc_dw.cu conv3d_ndhwc_dw_mma.cu conv3d_ndhwc_grouped.cu conv3d_ndhwc_grouped_mma.cu conv3d_ndhwc_mma.cu conv3d_ndhwc_pw_mma.cu conv3d_ndhwc_wgmma.cu conv3d_ndhwc_wgmma_stem.cu fault_dp4a.cu ref_conv.cu "
# the registry lists the templates: adding one retires no other's records
expect registry.c ""
n=$(versions | wc -l)
[ "$(changed template.h | wc -w)" -eq "$n" ] || { echo "FAIL: template.h must change all $n"; exit 1; }
echo "ok: template.h -> all $n"
