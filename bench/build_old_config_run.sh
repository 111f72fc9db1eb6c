#!/bin/sh
# build_old_config_run.sh COMMIT [OUT]: bench/config_run.c of this tree built
# against COMMIT's libraries, into OUT (default build-old/config_run_old), for
# `issue36_gpu.sh ab` (bench/regress36.py ab): the same harness times a config
# on the earlier kernels and on these. COMMIT's tree goes to a git worktree in
# a scratch folder, its libraries are built in Release (a few minutes on two
# cores), and the worktree is removed. A library that predates
# quant_zpad_fill (before 0779b89, e.g. ed77a80) gets config_run without that
# call: those builds have no data zero point with padding on the channels-last
# templates, and the sets' layers have none.
set -eu
commit=$1
out=${2:-build-old/config_run_old}
src=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d)
trap 'git -C "$src" worktree remove --force "$tmp/tree" 2>/dev/null; rm -rf "$tmp"' EXIT
git -C "$src" worktree add --detach "$tmp/tree" "$commit" >/dev/null
cmake -S "$tmp/tree" -B "$tmp/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$tmp/build" -j"$(nproc)" --target ct_gpu ct_templates ct_core ct_space >/dev/null
cp "$src/bench/config_run.c" "$tmp/config_run.c"
grep -q quant_zpad_fill "$tmp/tree/core/quant.h" ||
  sed -i 's/ *quant_zpad_fill(&w, &qs.q, hw, params, &err) != CT_OK)/        0)/' "$tmp/config_run.c"
b=$tmp/build
mkdir -p "$(dirname "$out")"
cc -D_POSIX_C_SOURCE=200809L -I"$tmp/tree" -I"$tmp/tree/include" -I"$b/include" -isystem /usr/include/cjson \
  -isystem /usr/local/cuda/include -O2 -std=c11 -o "$out" "$tmp/config_run.c" \
  "$b/libct_gpu.a" "$b/libct_templates.a" "$b/libct_space.a" "$b/libct_core.a" \
  "$b/libct_templates.a" "$b/libct_gpu.a" "$b/libct_core.a" \
  -L/usr/local/cuda/lib64 -lnvrtc -lcudart -lcuda -lcjson -lm -lpthread -ldl
echo "$out: bench/config_run.c against $commit's libraries"
