#!/bin/sh
# test_cli.sh: the convtune command's behaviour as a user sees it: outputs of
# `convtune workload` and the exit code and one-line message of every kind of
# malformed input. Usage: test_cli.sh CONVTUNE SOURCE_DIR
set -u
ct=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$2
. "$src/tests/common.sh"

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

# issue 33, bounds: every field is bounded wherever it comes from (JSON, key,
# flags, the space command), the message naming the field and the range; an
# out-of-range d2s block is named as such; an inline JSON list is a list
expect_bad "'c' must be an integer from 1 to 65536, got 2147483647" workload '{"op":"conv2d","c":2147483647,"k":1,"h":1,"w":1,"kernel":1}'
expect_bad "'stride' must be an integer from 1 to 1024, got 1000000000" workload --c 4 --k 4 --size 1x1 --kernel 1 --stride 1000000000 --pad 1000000000 --layout nchw4c
expect_bad 'dilation\[w\] must be from 1 to 1024, got 2000' workload conv2d-nchw-i8.i8.i32-n1-c4-k4-9x4001-r1x3-s1x1-p0x0.0x0-d1x2000
expect_bad "'stride' must be an integer from 1 to 1024" space '{"op":"conv2d","layout":"nhwc","c":3,"k":4,"h":1,"w":1,"kernel":1,"stride":1000000000,"pad":1000000000}' --arch sm_90
expect_bad 'block 99999999999 is out of range; it must be 2 to 16' workload --c 64 --k 64 --size 8x8 --kernel 1 --out int8 --epilogue d2s99999999999dcr
expect 0 'conv2d-nchw-i8.i8.i32-n1-c4-k8-8x8-r3x3-s1x1-p1x1.1x1-d1x1' workload '[{"name":"first","op":"conv2d","c":4,"k":8,"h":8,"w":8,"kernel":3,"pad":1},{"name":"second","op":"conv2d","c":8,"k":8,"h":8,"w":8,"kernel":1}]'
expect 0 '^second ' workload ' [{"name":"first","op":"conv2d","c":4,"k":8,"h":8,"w":8,"kernel":3,"pad":1},{"name":"second","op":"conv2d","c":8,"k":8,"h":8,"w":8,"kernel":1}]'
expect_bad 'line 1' workload '[{"op":"conv2d",'

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
# A fused pair (tests/data/tiny_grouped_qdq.onnx, scripts/models/grouped_models.py: an
# inverted residual block's 1x1 expansion 8 -> 48 whose output only its depthwise 3x3
# reads): with --fuse one node where a template runs the pair (convtune space on the fused
# key says whether one does), the expansion listed as fused into it; never without --fuse
# (the default), nor in a layout other than nhwc; --fuse without --model is refused.
grouped="$src/tests/data/tiny_grouped_qdq.onnx"
fkey=conv2d-nhwc-i8.i8.i8-n3-c48-k48-12x12-r3x3-s1x1-p1x1.1x1-d1x1-bias-qc-onnx-g48-pre8.i8.bias.qc.onnx
expect 0 '^5 conv nodes, 5 unique workloads (5 shapes), 0 unsupported$' workload --model "$grouped" --batch 3
expect 0 '^ir_dw_out_Conv  *conv2d-nhwc-i8.i8.i8-n3-c48-k48-12x12-r3x3-s1x1-p1x1.1x1-d1x1-bias-qc-onnx-g48  *Clip  *ir_expand_out_Conv  *ok$' workload --model "$grouped" --batch 3
expect 0 '^5 conv nodes, 5 unique workloads (5 shapes), 0 unsupported$' workload --model "$grouped" --batch 3 --layout nchw --fuse
"$ct" workload --model "$grouped" --batch 3 --json >"$tmp/nofuse.json" 2>&1 && ! grep -q 'fused_into\|pre_conv\|-pre8' "$tmp/nofuse.json" && grep -q '"fused_nodes":.0' "$tmp/nofuse.json" && ok || bad "no --fuse: $(cat "$tmp/nofuse.json")"
if "$ct" space "$fkey" --arch sm_90 >/dev/null 2>&1; then
  expect 0 '^5 conv nodes, 4 unique workloads (4 shapes), 0 unsupported, 2 convs fused into 1 node ' workload --model "$grouped" --batch 3 --fuse
  expect 0 '^ir_expand_out_Conv  *conv2d-nhwc-i8.i8.i8-n3-c8-k48-12x12-r1x1-.*  *Clip  *graph input .x.  *fused into ir_dw_out_Conv$' workload --model "$grouped" --batch 3 --fuse
  expect 0 "^ir_dw_out_Conv  *$fkey  *pre: ir_expand_out_Conv (1x1), Clip  *graph input 'x'  *ok\$" workload --model "$grouped" --batch 3 --fuse
  expect 0 "^ *1  ir_dw_out_Conv  *$fkey\$" workload --model "$grouped" --batch 3 --fuse
  expect 0 '"fused_into":.*"ir_dw_out_Conv"' workload --model "$grouped" --batch 3 --json --fuse
  expect 0 '"fused_nodes":.1' workload --model "$grouped" --batch 3 --json --fuse
  expect 0 '"fused_nodes":.1' workload --model "$grouped" --batch 3 --json --fuse=all
else
  expect 0 '^5 conv nodes, 5 unique workloads (5 shapes), 0 unsupported$' workload --model "$grouped" --batch 3 --fuse
fi
expect_bad '--fuse is about a model' workload --fuse --c 8 --k 8 --size 8x8 --kernel 1
expect_bad "--fuse: expected auto or all, got 'some'" workload --model "$grouped" --fuse=some
# On a GPU: tune --fuse records each pair both ways (the fused workload, and the expansion
# and the depthwise conv apart), its trials on the model's epilogue values; bench --fuse fuses by those records and says why, and
# --fuse=all fuses every pair.
if [ -e /dev/nvidiactl ] && "$ct" space "$fkey" --arch sm_90 >/dev/null 2>&1; then
  expect 0 '1 pair of convs tuned fused and apart.*; trials use the model.s epilogue values$' tune --model "$grouped" --batch 3 --fuse --trials 3 --time-budget 40 --db "$tmp/fuse.db"
  "$ct" export --db "$tmp/fuse.db" --output "$tmp/fuse.jsonl" >/dev/null 2>&1
  grep -q -- "$fkey" "$tmp/fuse.jsonl" && grep -q -- '-n3-c8-k48-12x12-r1x1-' "$tmp/fuse.jsonl" &&
    grep -q -- '-n3-c48-k48-12x12-r3x3-s1x1-p1x1.1x1-d1x1-bias-qc-onnx-g48"' "$tmp/fuse.jsonl" &&
    ok || bad "tune --fuse did not record the pair both ways: $(cut -c1-300 "$tmp/fuse.jsonl")"
  expect 0 '^- [0-9]* ir_dw_out_Conv: \(fused\|apart\): fused [0-9.]* us against apart ' bench --model "$grouped" --batch 3 --fuse --db "$tmp/fuse.db" --no-results
  expect 0 '"fuse_policy":.*"all"' bench --model "$grouped" --batch 3 --fuse=all --db "$tmp/fuse.db" --no-results --json
fi

# Malformed input: one line naming the field, exit code 2.
good='"op":"conv2d","c":64,"h":56,"w":56,"k":64,"kernel":3'
expect_bad 'bad JSON' workload "{$good,}"
expect_bad "'w'" workload '{"op":"conv2d","c":64,"h":56,"k":64,"kernel":3}'
expect_bad "'k'" workload '{"op":"conv2d","c":64,"h":56,"w":56,"kernel":3}'
expect_bad "'h'" workload '{"op":"conv2d","c":64,"h":0,"w":56,"k":64,"kernel":3}'
expect_bad "output size along w" workload '{"op":"conv2d","c":64,"h":56,"w":2,"k":64,"kernel":5}'
expect_bad 'c (input channels) must be a multiple of 4' workload '{"op":"conv2d","c":6,"h":56,"w":56,"k":64,"kernel":3,"layout":"nchw4c"}'
expect_bad "field 'c' is given twice" workload "{$good,\"c\":6}"
expect_bad 'groups (3) must divide' workload "{$good,\"groups\":3}"
expect_bad 'kernal' workload '{"op":"conv2d","c":64,"h":56,"w":56,"k":64,"kernal":3}'
expect_bad 'c (input channels)' workload --c 6 --k 64 --size 56x56 --kernel 3 --layout nchw4c
expect_bad 'groups (3) must divide' workload --c 64 --k 64 --size 56x56 --kernel 3 --groups 3
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

# Long inputs: the message says its reason first and quotes at most a short
# excerpt (60 bytes, then ...), escaped (issue 33, defect 7).
long=$(printf 'x%.0s' $(seq 2000))
short_err() { # short_err WHAT: the last message is one short line
  n=$(wc -c <"$tmp/err")
  [ "$n" -lt 500 ] && ! grep -q 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' "$tmp/err" && ok || { bad "$1: message of $n bytes"; cat "$tmp/err"; }
}
expect_bad "malformed dtypes at offset 12 of key 'conv2d-nchw-\\\\x1bxxx.*xxx\\.\\.\\.'; a key reads" workload "conv2d-nchw-$(printf '\033')$long"
short_err 'long key'
expect_bad "unknown field 'xxx.*\\.\\.\\.'; the fields are .*d2s_mode, rounding" workload "{$good,\"$long\":1}"
short_err 'long field'
expect_bad "name 'xxx.*\\.\\.\\.' is already used by workload #1; names must be unique" workload "[{$good,\"name\":\"$long\"},{$good,\"name\":\"$long\"}]"
short_err 'long name twice'
expect_bad "no workload set named 'xxx.*; the sets are c3d" workload --set "$long"
short_err 'long set name'
expect_bad "is no layout of conv2d workload" workload --set resnet50 --layout "$long"
short_err 'long layout'
expect_bad "expected int8 or uint8, got 'xxx" workload --set resnet50 --data "$long"
short_err 'long --data'
expect 1 'cannot open: File name too long' workload --file "$tmp/$long.json"
short_err 'long file name'

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
# every template named, the last registered one too (the list outgrew a fixed buffer once):
# the fused pointwise + depthwise family, registered last
expect_bad 'conv3d_ndhwc_pw_mma, .*_pwdw (see' space --set resnet50 --template nope
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
# usage errors quote a long or hostile argument as an escaped excerpt, on
# one line, the hint kept
for args in "tune --trials $long" "tune --time-budget $long" "tune --tuner $long" \
  "tune --template $long" "space --samples $long" "space --template $long" \
  "bench --min-replay-ms $long" "query a b $long" "version $long"; do
  what="convtune ${args%% *} ${args#* }"
  what=${what%% xxx*}
  # shellcheck disable=SC2086
  "$ct" $args >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "xxx\.\.\.'" "$tmp/err" &&
    grep -q "see 'convtune" "$tmp/err" && ok || { bad "$what (rc $rc)"; cat "$tmp/err"; }
  case $args in
  "space --template"*) # the message lists the templates: long, but the argument cut
    ! grep -q 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' "$tmp/err" && ok ||
      bad "$what: the argument quoted whole" ;;
  *) short_err "$what with a 2000-byte argument" ;;
  esac
done
expect_bad "unknown option '--bogus\\\\x1b'" tune "--bogus$(printf '\033')"
short_err "an unknown option, escaped"
"$ct" "$long" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "unknown command 'xxx.*\.\.\.'" "$tmp/err" && ok || { bad "an unknown long command"; head -c 300 "$tmp/err"; }
expect_bad '--tuner' tune --tuner bogus
expect_bad '--time-budget' tune --time-budget -1
expect_bad '--time-budget' tune --time-budget 10x
expect_bad '--time-budget' tune --time-budget 5ms
expect_bad '--time-budget' tune --time-budget 0m
expect_bad '--round-trials' tune --round-trials 16
expect_bad '--round-trials' tune --set resnet50 --as-model --round-trials 0
expect_bad '--refine-time' tune --refine-time 30
expect_bad '--refine-time' tune --set resnet50 --as-model --refine-time 30
expect_bad '--refine-time' tune --model "$src/tests/data/tiny_qdq.onnx" --refine-time -5
expect_bad '--refine-time' tune --model "$src/tests/data/tiny_qdq.onnx" --refine-time 2x
expect_bad '--builders' tune --builders 0
expect_bad '--builders' tune --builders 257
if [ ! -e /dev/nvidiactl ]; then
  # a duration with a unit is accepted: it fails on the GPU, not the flag
  expect 1 'needs an NVIDIA GPU' tune --set resnet50 --as-model --time-budget 1.5m --db "$tmp/m.db"
  [ ! -e "$tmp/m.db" ] && ok || bad "tune --as-model wrote a database without a GPU"
fi
expect_bad 'groups (3) must divide' tune --c 64 --k 64 --size 56x56 --kernel 3 --groups 3

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
# a path in a message: escaped (no control byte reaches the terminal), and
# whole, since its end is the part that matters
esc=$(printf '\033')
expect 2 "no database at .*/e\\\\x1b\[31mx\.db (tune first" list --db "$tmp/e$esc[31mx.db"
! grep -q "$esc" "$tmp/err" && ok || bad "a path's escape byte reached stderr raw"
deep=$tmp$(printf '/d%.0s' $(seq 400))
expect 2 "no database at $deep/none\.db (tune first" list --db "$deep/none.db"
expect 2 "cannot open .*/i\\\\x1b\.jsonl: No such file" import --db "$tmp/new.db" "$tmp/i$esc.jsonl"
! grep -q "$esc" "$tmp/err" && ok || bad "import's path escape byte reached stderr raw"

# dbsafe (issue 33, defects 1, 2, 5): no command writes over its own
# database, an output file appears whole or not at all, read-only opens
# create, migrate and convert nothing, usage errors touch nothing.
ds=$tmp/dbsafe
mkdir "$ds"
K=conv2d-nchw4c-i8.i8.i32-n16-c64-k64-56x56-r3x3-s2x2-p1x1.1x1-d1x1
printf '{"format":1,"uid":"ds-1","workload_key":"%s","template_name":"conv2d_nchw4c_dp4a","template_version":"0123456789abcdef","config_index":"7","config":{"a":1},"outcome":"OK","error":null,"median_us":2.5,"samples_us":[2.5,2.6],"compile_ms":10,"options":"-O3","arch":"sm_90","tuner":"random","tuner_settings":null,"session":"s1","timestamp":1700000000,"device":{"name":"NVIDIA H200","cc_major":9,"cc_minor":0,"sm_count":132,"driver_version":13000,"runtime_version":13000,"nvrtc_version":"13.0"}}\n' "$K" >"$ds/a.jsonl"
# sidecars PATH: whether PATH-wal or PATH-shm exists
sidecars() { [ -e "$1-wal" ] || [ -e "$1-shm" ]; }
# journal byte PATH: the file header's write version, 1 rollback, 2 WAL
journal() { od -An -tu1 -j18 -N1 "$1" | tr -d ' '; }
expect 0 'imported 1' import --db "$ds/t.db" "$ds/a.jsonl"
cp "$ds/t.db" "$ds/t.copy"
ln -s t.db "$ds/sym.db"
ln "$ds/t.db" "$ds/hard.db"
mkdir "$ds/sub"
for out in "$ds/t.db" "$ds/sym.db" "$ds/hard.db" "$ds/sub/../t.db" "$ds/t.db-wal"; do
  expect 2 'is the database' export --db "$ds/t.db" --output "$out"
done
expect 2 'is the database' export --db "$ds/sym.db" --output "$ds/hard.db"
# bench's files too: refused before anything runs (no GPU needed)
for flag in --json-out --csv-out; do
  for out in "$ds/t.db" "$ds/sym.db" "$ds/t.db-shm"; do
    expect 2 "$flag $out is the database" bench --db "$ds/t.db" $flag "$out" "$K"
  done
done
cmp -s "$ds/t.db" "$ds/t.copy" && ok || bad "export over its own database changed it"
[ ! -e "$ds/t.db-wal" ] && ok || bad "export --output t.db-wal created it"
expect 0 'device' list --db "$ds/t.db"
# a complete export replaces the old file; a failed one leaves it whole
echo old >"$ds/out.jsonl"
expect 0 '1 trials' export --db "$ds/t.db" --output "$ds/out.jsonl"
cmp -s "$ds/out.jsonl" "$ds/a.jsonl" && ok || bad "export --output differs from the import"
echo old >"$ds/out.jsonl"
(trap '' XFSZ; ulimit -f 1; "$ct" export --db "$ds/t.db" --output "$ds/out.jsonl") >"$tmp/out" 2>"$tmp/err"
[ $? -eq 1 ] && ok || { bad "export past the file size limit did not fail"; cat "$tmp/err"; }
[ "$(cat "$ds/out.jsonl")" = old ] && ok || bad "a failed export changed the old file"
# (SQLite's -wal/-shm may stay behind a reader held to a 512-byte file size)
[ -z "$(ls -A "$ds" | grep -v -e '^t.db' -e '^t.copy$' -e '^sym.db$' -e '^hard.db$' -e '^sub$' -e '^a.jsonl$' -e '^out.jsonl$')" ] \
  && ok || bad "export left files behind: $(ls -A "$ds")"
expect 1 'cannot write' export --db "$ds/t.db" --output "$ds/nodir/x.jsonl"
# the readonly commands leave no -wal/-shm and change nothing
cp "$ds/t.db" "$ds/t.copy"
for c in list "query $K" "history $K" "export $K"; do
  # shellcheck disable=SC2086
  "$ct" $c --db "$ds/t.db" >/dev/null 2>"$tmp/err" && ok || { bad "$c failed"; cat "$tmp/err"; }
  ! sidecars "$ds/t.db" && ok || bad "$c left -wal/-shm behind"
done
cmp -s "$ds/t.db" "$ds/t.copy" && ok || bad "a readonly command changed the database"
# a WAL database in a folder the user cannot write (root ignores modes: drop to nobody)
mkdir "$ds/ro"
cp "$ds/t.db" "$ds/ro/t.db"
[ "$(journal "$ds/ro/t.db")" = 2 ] && ok || bad "the test database is not in WAL mode"
chmod 755 "$tmp" "$ds"
chmod 555 "$ds/ro"
as_user=
[ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null && as_user="setpriv --reuid 65534 --regid 65534 --clear-groups"
# nobody may not reach the build folder (a clone under /root): a copy in $tmp it can
ct_ro=$ct
if [ -n "$as_user" ] && ! $as_user "$ct" --version >/dev/null 2>&1; then
  cp "$ct" "$tmp/convtune-ro" && chmod 755 "$tmp/convtune-ro" && ct_ro=$tmp/convtune-ro
fi
if [ "$(id -u)" -ne 0 ] || [ -n "$as_user" ]; then
  for c in list "query $K" "history $K" "export $K"; do
    # shellcheck disable=SC2086
    $as_user "$ct_ro" $c --db "$ds/ro/t.db" >"$tmp/out" 2>"$tmp/err" && grep -q "H200\|ds-1" "$tmp/out" &&
      ok || { bad "$c on a read-only folder failed"; cat "$tmp/err"; }
  done
  ! sidecars "$ds/ro/t.db" && ok || bad "a read-only folder got -wal/-shm"
fi
chmod 755 "$ds/ro"
# an empty file is neither migrated nor created into a database by a reader
: >"$ds/empty.db"
for c in list "query $K" "history $K" "export"; do
  # shellcheck disable=SC2086
  expect 1 'empty.*writing command' $c --db "$ds/empty.db"
done
[ ! -s "$ds/empty.db" ] && ! sidecars "$ds/empty.db" && ok || bad "a reader migrated an empty file"
if command -v sqlite3 >/dev/null; then
  cp "$ds/t.copy" "$ds/old.db"
  sqlite3 "$ds/old.db" 'DROP INDEX trials_best; PRAGMA user_version = 1; PRAGMA journal_mode = DELETE' >/dev/null
  cp "$ds/old.db" "$ds/old.copy"
  expect 1 'old.db.*older.*writing command' list --db "$ds/old.db"
  cmp -s "$ds/old.db" "$ds/old.copy" && ok || bad "list migrated an older schema"
  # a foreign SQLite file is refused before it is switched to WAL
  sqlite3 "$ds/songs.db" 'CREATE TABLE songs (title TEXT); PRAGMA user_version = 2'
  cp "$ds/songs.db" "$ds/songs.copy"
  expect 1 'not a convtune database' import --db "$ds/songs.db" "$ds/a.jsonl"
  cmp -s "$ds/songs.db" "$ds/songs.copy" && ok || bad "import changed a foreign file ($(journal "$ds/songs.db"))"
fi
# usage errors create nothing
(cd "$ds/sub" && "$ct" import >/dev/null 2>&1; echo $? >rc1; "$ct" import missing.jsonl >/dev/null 2>&1; echo $? >rc2)
[ "$(cat "$ds/sub/rc1") $(cat "$ds/sub/rc2")" = "2 2" ] && ok || bad "import usage errors: exit $(cat "$ds/sub/rc1") $(cat "$ds/sub/rc2")"
[ ! -e "$ds/sub/convtune.db" ] && ok || bad "import with no or a missing file created convtune.db"
expect_bad 'missing.jsonl' import --db "$ds/new.db" "$ds/missing.jsonl"
[ ! -e "$ds/new.db" ] && ok || bad "import of a missing file created the database"
expect_bad 'bogus' export --db "$ds/none.db" --output "$ds/x.jsonl" bogus
[ ! -e "$ds/x.jsonl" ] && ok || bad "export with a bad workload created its output"

# dbconc (issue 33, defects 4, 6, 7): history's CSV quotes its fields
# (RFC 4180): a device named with a quote, a comma and a newline parses back
dc=$tmp/dbconc
mkdir "$dc"
sed 's/"name":"NVIDIA H200"/"name":"NVIDIA \\"H200\\",\\nx"/' "$ds/a.jsonl" >"$dc/q.jsonl"
expect 0 'imported 1' import --db "$dc/q.db" "$dc/q.jsonl"
"$ct" history --db "$dc/q.db" "$K" >"$dc/q.csv" 2>"$tmp/err" && ok || bad "history of a quoted device: $(cat "$tmp/err")"
python3 -c '
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
assert rows[0] == ["trial", "device", "template", "tuner", "outcome", "median_us", "best_us"], rows[0]
assert rows[1] == ["1", "NVIDIA \"H200\",\nx", "conv2d_nchw4c_dp4a", "random", "OK", "2.5000", "2.5000"], rows[1]
assert len(rows) == 2, rows
' "$dc/q.csv" && ok || bad "history CSV does not parse back: $(cat "$dc/q.csv")"
# two different records of one uid are a conflict, not "already present"
sed 's/"median_us":2.5/"median_us":2.25/' "$ds/a.jsonl" >"$dc/b.jsonl"
cat "$ds/a.jsonl" "$dc/b.jsonl" >"$dc/ab.jsonl"
expect 2 "line 2: uid 'ds-1' conflicts with line 1" import --db "$dc/c.db" "$dc/ab.jsonl"
# another database's trials keep their uids; one that differs from the database's is a conflict
expect 0 'imported 1' import --db "$dc/x.db" "$dc/b.jsonl"
expect 0 'imported 1' import --db "$dc/y.db" "$ds/t.db"
expect 0 'skipped 1 already present' import --db "$dc/y.db" "$ds/t.db"
"$ct" export --db "$dc/y.db" --output "$dc/y.jsonl" 2>/dev/null && cmp -s "$dc/y.jsonl" "$ds/a.jsonl" && ok ||
  bad "a database's trial imported differs from its export"
expect 2 "uid 'ds-1' is in the database with another median_us" import --db "$dc/y.db" "$dc/x.db"
expect 2 'is the database' import --db "$dc/y.db" "$dc/y.db"
# list --picks: a pick (as tune --model's refinement stores it) of the imported trial
"$ct" list --picks --db "$dc/y.db" >"$dc/p0.out" 2>&1 && [ "$(wc -l <"$dc/p0.out")" -eq 1 ] && ok ||
  bad "list --picks of a database without picks: $(cat "$dc/p0.out")"
python3 -c '
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
t, w = c.execute("SELECT id, workload_id FROM trials WHERE uid = ?", ("ds-1",)).fetchone()
c.execute("INSERT INTO picks VALUES (?, ?, 9, 0, ?, 250.5, 260.25, ?, ?, 1767225600)",
          (w, "NVIDIA H200", t, "net.onnx, batch 1", "refine-1"))
c.commit()
' "$dc/y.db" && ok || bad "a pick put in by sqlite3"
"$ct" list --picks --db "$dc/y.db" >"$dc/p1.out" 2>&1 &&
  grep -q "^NVIDIA H200  *conv2d_nchw4c_dp4a  *2.50  *250.50  *260.25  net.onnx, batch 1  *$K$" "$dc/p1.out" && ok ||
  bad "list --picks: $(cat "$dc/p1.out")"
"$ct" list --picks --json --db "$dc/y.db" >"$dc/p2.out" 2>&1 && python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert len(r) == 1 and r[0]["trial_uid"] == "ds-1" and r[0]["chain_us"] == 250.5, r
assert r[0]["compute_capability"] == "9.0" and r[0]["key"] == sys.argv[2] and isinstance(r[0]["config"], dict), r
' "$dc/p2.out" "$K" && ok || bad "list --picks --json: $(cat "$dc/p2.out")"
# the pick travels: export writes it after the trial, import of the database
# takes it (and finds it present the second time), list --picks shows it
expect 0 '1 trials, 1 pick' export --db "$dc/y.db" --output "$dc/yp.jsonl"
tail -n 1 "$dc/yp.jsonl" | grep -q '^{"format":2,"record":"pick","workload_key":"'"$K"'","trial_uid":"ds-1",' && ok ||
  bad "export's pick line: $(tail -n 1 "$dc/yp.jsonl")"
expect 0 'imported 1 trials, skipped 0 already present; 1 pick taken, 0 already present, 0 not taken' \
  import --db "$dc/z.db" "$dc/y.db"
expect 0 'imported 0 trials, skipped 1 already present; 0 picks taken, 1 already present' \
  import --db "$dc/z.db" "$dc/yp.jsonl"
"$ct" list --picks --db "$dc/z.db" >"$dc/p3.out" 2>&1 && cmp -s "$dc/p1.out" "$dc/p3.out" && ok ||
  bad "list --picks after the import: $(cat "$dc/p3.out")"
# an older pick of the same workload and device is kept out, and said so
sed 's/"timestamp":1767225600}$/"timestamp":1767225599}/' "$dc/yp.jsonl" | tail -n 1 >"$dc/old.jsonl"
grep -q 1767225599 "$dc/old.jsonl" && ok || bad "the older pick's line: $(cat "$dc/old.jsonl")"
expect 0 '0 picks taken, 0 already present, 1 not taken' import --db "$dc/z.db" "$dc/old.jsonl"
# a pick of a trial neither in the file nor in the database imports nothing
sed 's/"trial_uid":"ds-1"/"trial_uid":"ds-9"/' "$dc/yp.jsonl" >"$dc/nope.jsonl"
expect 2 'line 2: trial_uid: no trial ds-9' import --db "$dc/w.db" "$dc/nope.jsonl"
expect 0 '0 trials, 0 picks' export --db "$dc/w.db"
# a template that is none of convtune's is refused, naming the line
sed 's/conv2d_nchw4c_dp4a/conv3d_ncdhw4c_dp4a/' "$ds/a.jsonl" >"$dc/t3.jsonl"
expect 2 "line 1: template_name: 'conv3d_ncdhw4c_dp4a' is a conv3d template" import --db "$dc/c.db" "$dc/t3.jsonl"
# a malformed row costs that row, with a warning, not the database
sed 's/"uid":"ds-1"/"uid":"ds-2"/' "$ds/a.jsonl" >"$dc/2.jsonl"
expect 0 'imported 1' import --db "$dc/m.db" "$ds/a.jsonl"
expect 0 'imported 1' import --db "$dc/m.db" "$dc/2.jsonl"
# rows made malformed, and a database that refuses writes, by the sqlite3 command
if command -v sqlite3 >/dev/null; then
  sqlite3 "$dc/m.db" "UPDATE trials SET outcome = 'FAST' WHERE uid = 'ds-1'" || bad "sqlite3 edit"
  for c in history export query; do
    "$ct" $c --db "$dc/m.db" "$K" >"$dc/m.out" 2>"$dc/m.err" && ok || bad "$c with a malformed row failed: $(cat "$dc/m.err")"
    grep -q "warning: skipped 1 malformed trial in .*m.db, the first: trial ds-1: unknown outcome 'FAST'" "$dc/m.err" && ok || bad "$c: no warning: $(cat "$dc/m.err")"
  done
  sqlite3 "$dc/m.db" "UPDATE workloads SET key = key || replace(hex(zeroblob(150)), '0', 'k')" || bad "sqlite3 edit"
  "$ct" list --db "$dc/m.db" >"$dc/m.out" 2>"$dc/m.err" && ok || bad "list with a malformed row failed: $(cat "$dc/m.err")"
  grep -q "warning: skipped 1 malformed trial in .*m.db, the first: workload summary: column key: " "$dc/m.err" && ok || bad "list: no warning: $(cat "$dc/m.err")"
  # a failed write names the database, not the file imported
  expect 0 'imported 1' import --db "$dc/w.db" "$ds/a.jsonl"
  sqlite3 "$dc/w.db" "CREATE TRIGGER no_more BEFORE INSERT ON trials BEGIN SELECT RAISE(ABORT, 'no more trials'); END" || bad "sqlite3 trigger"
  "$ct" import --db "$dc/w.db" "$dc/2.jsonl" >"$dc/w.out" 2>"$dc/w.err"
  [ $? -eq 1 ] && ok || bad "import into a refusing database: exit not 1"
  grep -q "^convtune: database $dc/w.db: .*no more trials" "$dc/w.err" && ! grep -q '2.jsonl' "$dc/w.err" && ok || bad "a failed write does not name the database: $(cat "$dc/w.err")"
else
  echo "skipped: malformed rows and a refusing database (no sqlite3 command)"
fi

# The front door (issue 34). Every flag a command's --help shows is one it
# takes, and every flag of any command that its --help does not show is
# refused (exit 2, the flag named): the help is the whole list, and no flag
# is ever taken and ignored. A flag is tried before --help, which then
# returns 0 when the flag was taken; its value is one every flag accepts.
cmds="workload tune space bench query list history export import"
flags_of() { # the flags in `convtune $1 --help`, as completion.bash reads them
  "$ct" "$1" --help | grep -oE '(^|[ ,[])-(-[a-z][a-z0-9-]*|[a-zA-Z]\b)' | sed 's/^[ ,[]//' | sort -u
}
: >"$tmp/all_flags"
for c in $cmds; do
  flags_of "$c" >"$tmp/flags-$c"
  cat "$tmp/flags-$c" >>"$tmp/all_flags"
done
sort -u "$tmp/all_flags" -o "$tmp/all_flags"
[ "$(wc -l <"$tmp/all_flags")" -ge 40 ] && ok || bad "only $(wc -l <"$tmp/all_flags") flags in all the --help texts"
for c in $cmds; do
  for f in $(cat "$tmp/all_flags"); do
    v=1
    [ "$f" = --layout ] && v=nhwc
    "$ct" "$c" "$f" "$v" --help >/dev/null 2>"$tmp/err"
    rc=$?
    if grep -qx -- "$f" "$tmp/flags-$c"; then
      [ "$rc" -eq 0 ] && ok || { bad "$c --help shows $f, but $c $f $v exited $rc"; cat "$tmp/err"; }
    else
      [ "$rc" -eq 2 ] && grep -q -- "unknown option '$f'" "$tmp/err" && ok ||
        { bad "$c does not show $f, but $c $f $v --help exited $rc"; cat "$tmp/err"; }
    fi
  done
done
# what each command takes, as its --help must say (the workload flags: --c for all)
want_flags() { # want_flags CMD FLAG...: each FLAG is in CMD's --help
  c=$1
  shift
  for f in "$@"; do grep -qx -- "$f" "$tmp/flags-$c" && ok || bad "$c --help does not list $f"; done
}
wl="--c --k --size --kernel --stride --pad --dilation --groups --layout --op --file --set --model --fuse --batch --data --out --epilogue"
common="-h --help -v -q"
want_flags workload --json $wl $common
want_flags tune --db --trials --early-stopping --time-budget --as-model --round-trials --refine-time --tuner --template --device --seed --timeout --no-transfer --builders --json $wl $common
want_flags space --template --arch --samples --json $wl $common
want_flags bench --db --device --repeats --min-replay-ms --json --json-out --csv-out --results-dir --no-results --seed --layout --in-chain $wl $common
want_flags query --db --json $wl $common
want_flags list --db --json $common
want_flags history --db --json $wl $common
want_flags export --db --output $wl $common
want_flags import --db $common
# the refusals the issue names, one line each, exit 2
expect_bad "unknown option '--output'" list --output f
expect_bad "unknown option '--picks'" history --picks "$K"
expect_bad "unknown option '--json'" export --json
expect_bad "unknown option '--json'" import --json x.jsonl
expect_bad "unknown option '--set'" list --set resnet50
expect_bad "unknown option '--plot'" bench --plot x.png --set resnet50
expect_bad "unknown option '--jso' (flags are spelled in full)" list --jso
expect_bad "unknown option '--csv' (flags are spelled in full)" bench --csv x.csv --set resnet50
expect_bad "unknown option '--tria' (flags are spelled in full)" tune --tria 5
expect_bad "unknown option '-x'" workload -vx
expect_bad "--json prints the results document and takes no file: write 'r.json' with --json-out FILE" bench --json r.json --set resnet50
expect_bad "--in-chain is about a model's chain: it needs --model" bench --in-chain --set resnet50
expect_bad "--arena is about a model's chain: it needs --model" bench --arena --set resnet50
expect_bad "--streams is about a model's chain: it needs --model" bench --streams 2 --set resnet50
expect_bad "--streams: expected an integer from 1 to 8, got '9'" bench --streams 9 --set resnet50
expect_bad "--streams and --arena: not together" bench --model m.onnx --streams 2 --arena
# history --json is JSON (it printed CSV before), the CSV's rows
"$ct" history --db "$ds/t.db" --json "$K" >"$tmp/h.json" 2>"$tmp/err" && ok || bad "history --json: $(cat "$tmp/err")"
python3 -c '
import json, sys
rows = json.load(open(sys.argv[1]))
assert rows == [{"trial": 1, "device": "NVIDIA H200", "template": "conv2d_nchw4c_dp4a", "tuner": "random",
                 "outcome": "OK", "median_us": 2.5, "best_us": 2.5}], rows
' "$tmp/h.json" && ok || bad "history --json: $(cat "$tmp/h.json")"
expect 0 'conv2d_nchw4c_dp4a  *2.50 ' list --db "$ds/t.db"
# -V, --version, version: the version, the commit, CUDA runtime, driver, NVRTC
for v in -V --version version; do
  "$ct" $v >"$tmp/v" 2>"$tmp/err" && ok || bad "convtune $v exited $?: $(cat "$tmp/err")"
  grep -q '^convtune [0-9][0-9.]*$' "$tmp/v" && grep -q '^commit [0-9a-z]' "$tmp/v" &&
    grep -q '^CUDA runtime [0-9][0-9.]*$' "$tmp/v" && grep -q '^CUDA driver \(none\|[0-9][0-9.]*\)$' "$tmp/v" &&
    grep -q '^NVRTC [0-9][0-9.]*$' "$tmp/v" && ok || { bad "convtune $v:"; cat "$tmp/v"; }
done
if [ ! -e /dev/nvidiactl ]; then
  grep -q '^CUDA driver none$' "$tmp/v" && ok || bad "no driver here, but: $(grep driver "$tmp/v")"
fi
expect_bad "unexpected argument 'x'" --version x
expect 0 '-V, --version' --help

finish cli
