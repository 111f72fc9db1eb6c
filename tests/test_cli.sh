#!/bin/sh
# test_cli.sh: the convtune command's behaviour as a user sees it: outputs of
# `convtune workload` and the exit code and one-line message of every kind of
# malformed input. Usage: test_cli.sh CONVTUNE SOURCE_DIR
set -u
ct=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# expect RC PATTERN ARGS...: exit code RC, and stdout+stderr matching PATTERN
expect() {
  want=$1 pat=$2
  shift 2
  "$ct" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [ "$rc" -ne "$want" ]; then bad "convtune $* exited $rc, expected $want"; cat "$tmp/err"; return; fi
  if ! cat "$tmp/out" "$tmp/err" | grep -q -- "$pat"; then bad "convtune $*: no '$pat' in output"; cat "$tmp/out" "$tmp/err"; return; fi
  ok
}

# expect_bad FIELD ARGS...: exit 2 with a one-line message naming FIELD
expect_bad() {
  field=$1
  shift
  "$ct" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  lines=$(wc -l <"$tmp/err")
  if [ "$rc" -ne 2 ]; then bad "convtune $* exited $rc, expected 2"; cat "$tmp/err"; return; fi
  if [ "$lines" -ne 1 ]; then bad "convtune $*: $lines lines on stderr, expected 1"; cat "$tmp/err"; return; fi
  if [ -s "$tmp/out" ]; then bad "convtune $*: printed on stdout"; return; fi
  if ! grep -q -- "$field" "$tmp/err"; then bad "convtune $*: message does not name '$field'"; cat "$tmp/err"; return; fi
  ok
}

# The done-when command: 23 ResNet-50 layers at batch 16 with keys, shapes, GOP.
"$ct" workload --file "$src/scripts/workloads/resnet50.json" --batch 16 >"$tmp/r50" 2>&1 || bad "resnet50 file"
n=$(grep -c '^l[1-4]_\|^conv1 ' "$tmp/r50")
[ "$n" -eq 23 ] && ok || bad "resnet50 lists $n layers, expected 23"
grep -q '^conv1 .*conv2d-nchw-i8.i8.i32-n16-c3-k64-224x224-r7x7-s2x2-p3x3.3x3-d1x1 *16x64x112x112 *3.776$' "$tmp/r50" && ok || bad "conv1 row"; 
grep -q '^l4_3x3_512 .*-n16-c512-k512-7x7-r3x3-s1x1-p1x1.1x1-d1x1 *16x512x7x7 ' "$tmp/r50" && ok || bad "l4_3x3_512 row"
"$ct" workload --set resnet50 --batch 16 >"$tmp/r50set" 2>&1
cmp -s "$tmp/r50" "$tmp/r50set" && ok || bad "--set resnet50 differs from --file"
expect 0 'l4_3x3x3 *conv3d-ncdhw-i8.i8.i32-n8-c512-k512-2x7x7' workload --set resnet3d18 --batch 8
expect 0 'conv5b' workload --set c3d
expect 0 '"ops":' workload --set resnet18 --json
expect 0 'conv2d-nchw4c-i8.i8.i32-n1-c64-k64-56x56-r3x3-s1x1-p1x1.1x1-d1x1' workload --c 64 --k 64 --size 56x56 --kernel 3 --pad 1 --layout nchw4c
expect 0 '1x64x29x57' workload --c 64 --k 64 --size 56x56 --kernel 3 --pad 1x1.2x2 --stride 2x1
expect 0 'n4-c64' workload conv2d-nchw-i8.i8.i32-n1-c64-k64-56x56-r3x3-s1x1-p1x1.1x1-d1x1 --batch 4
expect 0 'conv3d-ncdhw4c' workload '{"op":"conv3d","layout":"ncdhw4c","c":4,"d":3,"h":5,"w":7,"k":8,"kernel":[3,1,1]}'
expect 0 'usage: convtune workload' workload --help
# channels last: any channel count, the shape N x H x W x K, no depth_to_space
expect 0 'conv2d-nhwc-i8.i8.i32-n1-c3-k5-56x56-r3x3-s2x2-p1x1.1x1-d1x1  *1x28x28x5 ' workload --c 3 --k 5 --size 56x56 --kernel 3 --pad 1 --stride 2 --layout nhwc
expect 0 '"out_shape":.*\[2, 3, 5, 7, 8\]' workload '{"op":"conv3d","layout":"ndhwc","n":2,"c":3,"d":3,"h":5,"w":7,"k":8,"kernel":[1,1,1]}' --json
expect 0 'nhwc' workload --help
expect_bad 'not supported with layout nhwc; use layout nchw or nchw4c' workload --c 3 --k 8 --size 8x8 --kernel 3 --layout nhwc --out int8 --epilogue d2s2dcr
expect_bad "'nhwc' is no layout of conv3d workload" workload --c 3 --k 8 --size 4x8x8 --kernel 3 --layout nhwc
# quantized workloads: flags on any selection, JSON fields, keys with segments
expect 0 'conv2d-nchw-u8.i8.i8-n1-c3-k64-224x224-r7x7-s2x2-p3x3.3x3-d1x1-zd-bias-qc' workload --set resnet50 --data uint8 --out int8 --epilogue zd,bias,qc
expect 0 '1x3x256x192' workload --c 64 --k 48 --size 64x48 --kernel 3 --pad 1 --out int8 --epilogue d2s4crd
expect 0 'n1-c64-k48-64x48-r3x3-s1x1-p1x1.1x1-d1x1-res-d2s4dcr' workload '{"op":"conv2d","c":64,"k":48,"h":64,"w":48,"kernel":3,"pad":1,"out_type":"int8","residual":true,"depth_to_space":4}'
expect 0 'i8.i8.i8-n1-c64-k64-56x56-r3x3-s1x1-p1x1.1x1-d1x1-zw-qc' workload conv2d-nchw-i8.i8.i8-n1-c64-k64-56x56-r3x3-s1x1-p1x1.1x1-d1x1-zw-qc
expect_bad "unknown item 'relu'" workload --set resnet50 --out int8 --epilogue bias,relu
expect_bad "expected int8 or uint8" workload --set resnet50 --data int32
expect_bad 'a residual needs an int8 or uint8 output' workload --set resnet50 --epilogue res
expect_bad 'multiple of 25' workload --c 64 --k 48 --size 17x17 --kernel 3 --epilogue d2s5dcr
# ONNX Runtime's rounding: the key's last segment, 8-bit output only
expect 0 'r3x3-s1x1-p1x1.1x1-d1x1-bias-res-onnx' workload --c 8 --k 8 --size 8x8 --kernel 3 --pad 1 --out uint8 --epilogue onnx,res,bias
expect 0 '"rounding":.*"onnx"' workload conv2d-nchw-i8.i8.i8-n1-c8-k8-8x8-r1x1-s1x1-p0x0.0x0-d1x1-onnx --json
expect_bad 'rounding onnx needs an int8 or uint8 output' workload --c 8 --k 8 --size 8x8 --kernel 3 --epilogue bias,onnx

# ONNX models (tests/data, made by scripts/models/tiny_model.py): the conv
# nodes with their fused ops and inputs, the unique workloads with counts,
# the totals; a bad file is named on one line, exit code 2.
tiny="$src/tests/data/tiny_qdq.onnx"
expect 0 '^6 conv nodes, 5 unique workloads (5 shapes), 0 unsupported$' workload --model "$tiny" --batch 2
expect 0 '^b  *conv2d-nhwc-i8.i8.i8-n2-c16-k32-8x8-r3x3-s1x1-p1x1.1x1-d1x1-bias-qc-res-onnx  *Add(residual),Relu  *a + ds  *ok$' workload --model "$tiny" --batch 2
expect 0 '^ds  *conv2d-nhwc-i8.i8.i8-n2-c16-k32-8x8-r1x1-s1x1-p0x0.0x0-d1x1-bias-qc-onnx  *-  *MaxPool pool  *ok$' workload --model "$tiny" --batch 2
expect 0 '^ *2  c1  *conv2d-nhwc-i8.i8.i8-n2-c32-k32-8x8' workload --model "$tiny" --batch 2
expect 0 '"unique_workloads":.5' workload --model "$tiny" --batch 2 --json
expect 0 '"residual":.*"ds"' workload --model "$tiny" --batch 2 --json
expect 0 'conv2d-nchw-i8.i8.i8-n16-c3-k16-16x16' workload --model "$tiny" --batch 16 --layout nchw
expect 0 'conv2d-nhwc-u8.i8.i8-n2-c8-k8-15x15-r3x3-s2x2-p1x1.1x1-d1x1-bias' workload --model "$src/tests/data/tiny_float.onnx" --data uint8 --out int8 --epilogue bias
expect_bad "input 'x' has a symbolic batch ('batch'): give the batch (--batch N)" workload --model "$tiny"
expect_bad 'apply to float models only' workload --model "$tiny" --batch 1 --out int8
expect_bad 'give one workload source' workload --model "$tiny" --set resnet50
expect_bad "--layout: expected nchw" workload --model "$tiny" --batch 1 --layout nhcw
head -c 1000 "$tiny" >"$tmp/cut.onnx"
expect_bad "$tmp/cut.onnx: " workload --model "$tmp/cut.onnx" --batch 1
printf 'not a model' >"$tmp/junk.onnx"
expect_bad "junk.onnx: not a valid ONNX model" workload --model "$tmp/junk.onnx"
expect_bad 'none.onnx: cannot open' workload --model "$tmp/none.onnx"

# Malformed input: one line naming the field, exit code 2.
good='"op":"conv2d","c":64,"h":56,"w":56,"k":64,"kernel":3'
expect_bad 'bad JSON' workload "{$good,}"
expect_bad "'w'" workload '{"op":"conv2d","c":64,"h":56,"k":64,"kernel":3}'
expect_bad "'k'" workload '{"op":"conv2d","c":64,"h":56,"w":56,"kernel":3}'
expect_bad "'h'" workload '{"op":"conv2d","c":64,"h":0,"w":56,"k":64,"kernel":3}'
expect_bad "output size along w" workload '{"op":"conv2d","c":64,"h":56,"w":2,"k":64,"kernel":5}'
expect_bad 'c (input channels) must be a multiple of 4' workload '{"op":"conv2d","c":6,"h":56,"w":56,"k":64,"kernel":3,"layout":"nchw4c"}'
expect_bad "field 'c' is given twice" workload "{$good,\"c\":6}"
expect_bad 'groups' workload "{$good,\"groups\":2}"
expect_bad 'kernal' workload '{"op":"conv2d","c":64,"h":56,"w":56,"k":64,"kernal":3}'
expect_bad 'c (input channels)' workload --c 6 --k 64 --size 56x56 --kernel 3 --layout nchw4c
expect_bad 'groups' workload --c 64 --k 64 --size 56x56 --kernel 3 --groups 2
expect_bad '--kernel' workload --c 64 --k 64 --size 56x56 --kernel 3x
expect_bad '--batch' workload --set resnet50 --batch 0
expect_bad 'int32' workload --set resnet50 --batch 100000
expect_bad 'canonical' workload conv2d-nchw-i8.i8.i32-n1-c64-k64-56x56-r3x3-s1x1-p1x1.1x1-d01x1
expect_bad 'malformed pad' workload conv2d-nchw-i8.i8.i32-n1-c64-k64-56x56-r3x3-s1x1-p1x1-d1x1
expect_bad 'resnet50' workload --set resnet51
expect_bad 'cannot open' workload --file "$tmp/none.json"
expect_bad 'one workload source' workload --set resnet50 --c 64
expect_bad 'unknown option' workload --bogus
expect_bad 'no workload given' workload

# A malformed file names the entry and the field.
printf '[{"name":"a","op":"conv2d","c":4,"h":8,"w":8,"k":4,"kernel":3},\n {"name":"b","op":"conv2d","c":0,"h":8,"w":8,"k":4,"kernel":3}]\n' >"$tmp/bad.json"
expect_bad "workload #2 (b): field 'c'" workload --file "$tmp/bad.json"
printf '[{"name":"a","op":"conv2d","c":4,"h":8,"w":8,"k":4,"kernel":3}\n {"name":"b"}]\n' >"$tmp/syntax.json"
expect_bad 'line 2, column 2' workload --file "$tmp/syntax.json"

# space: knobs with candidates, size and valid share; the 3D template has tile_d and tile_rd.
expect 0 'tile_f  *split 16 in 4  *35:' space --set resnet50 --arch sm_90 --samples 2000
expect 0 'space size 197568000, valid share' space --set resnet50 --arch sm_90 --samples 2000
expect 0 'tile_rd  *split 3 in 2' space --set resnet3d18 --arch sm_90 --samples 1000
expect 0 '"valid_share":' space --c 64 --k 64 --size 56x56 --kernel 3 --pad 1 --arch sm_80 --json --samples 1000
# nhwc: each layer in its own layout, on the channels-last templates (the stem on the mma one)
expect 0 'conv1: conv2d-nhwc-i8.i8.i32-n1-c3-k64' space --set resnet50 --layout nhwc --arch sm_90 --samples 500
expect 0 'template conv2d_nhwc_mma' space --set resnet50 --layout nhwc --arch sm_90 --samples 500
expect_bad 'needs layout nchw4c' space --set resnet50 --layout nhwc --template conv2d_nchw4c_mma --arch sm_90 --samples 500
expect_bad '--template' space --set resnet50 --template nope
expect_bad 'unknown architecture' space --set resnet50 --arch sm_13
expect_bad '--samples' space --set resnet50 --samples 0
expect_bad 'no workload given' space

# tune without a GPU: a clear message, exit 1, nothing written. (With a GPU
# this would tune for real: the GPU tests cover that.)
if [ ! -e /dev/nvidiactl ]; then
  (cd "$tmp" && "$ct" tune >out 2>err)
  rc=$?
  [ "$rc" -eq 1 ] && ok || bad "tune without a GPU exited $rc, expected 1"
  grep -q 'needs an NVIDIA GPU' "$tmp/err" && ok || { bad "tune does not say it needs a GPU"; cat "$tmp/err"; }
  [ ! -e "$tmp/convtune.db" ] && ok || bad "tune wrote a database without a GPU"
fi
expect_bad '--trials' tune --trials 0
expect_bad '--tuner' tune --tuner bogus
expect_bad '--time-budget' tune --time-budget -1
expect_bad '--time-budget' tune --time-budget 10x
expect_bad '--time-budget' tune --time-budget 5ms
expect_bad '--time-budget' tune --time-budget 0m
expect_bad '--round-trials' tune --round-trials 16
expect_bad '--round-trials' tune --set resnet50 --as-model --round-trials 0
if [ ! -e /dev/nvidiactl ]; then
  # a duration with a unit is accepted: it fails on the GPU, not the flag
  expect 1 'needs an NVIDIA GPU' tune --set resnet50 --as-model --time-budget 1.5m --db "$tmp/m.db"
  [ ! -e "$tmp/m.db" ] && ok || bad "tune --as-model wrote a database without a GPU"
fi
expect_bad 'groups' tune --c 64 --k 64 --size 56x56 --kernel 3 --groups 2

# the database commands: a missing database is named, nothing is created
expect 2 'no database at' query --db "$tmp/none.db" conv2d-nchw-i8.i8.i32-n1-c64-k64-56x56-r3x3-s1x1-p1x1.1x1-d1x1
[ ! -e "$tmp/none.db" ] && ok || bad "query created a database"
expect 2 'no database at' list --db "$tmp/none.db"
expect_bad 'give one file' import --db "$tmp/new.db"
printf '{"format":1}\n' >"$tmp/bad.jsonl"
expect 2 'line 1' import --db "$tmp/new.db" "$tmp/bad.jsonl"
expect 0 'device' list --db "$tmp/new.db"
expect 1 'no trials of' query --db "$tmp/new.db" conv2d-nchw-i8.i8.i32-n1-c64-k64-56x56-r3x3-s1x1-p1x1.1x1-d1x1
expect 2 'unknown command' frobnicate

echo "cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
