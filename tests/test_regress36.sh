#!/bin/sh
# test_regress36.sh: bench/regress36.py, issue 36's no-regression check.
# - seed: h200-final's committed tuning documents (ResNet-50 b16, int32 and
#   8-bit) become one retired trial a layer that `convtune import` takes,
#   with the documents' configs and times, under a version no build has;
#   an int32 document alone also seeds each layer's 8-bit key.
# - compare: a layer more than 2% slower is flagged and the exit is 1; one
#   within 2% is not.
# - ab: fake config_run binaries: the columns and the change, and an int32
#   twin's config adapted (a knob the space lacks dropped, a missing choice
#   at 0) where the binary refuses it; AB_LAYERS, and same configs alone.
# - ab hands every run of one key the same CT_QUANT_FILE, and config_run
#   (CONFIG_RUN, before it needs a GPU) writes quant_random's values there
#   or reads them back, refusing a file of the wrong size; with
#   CT_CUBIN_OUT it compiles for sm_90 without a device (w_early's two
#   values, two cubins) and refuses an unknown CT_ARCH; a CT_ALLOC_PAD that
#   is not a count of bytes up to 2^30 is refused before the device.
# - forms: each residual-free 8-bit key on its values with the clamp's top
#   at 127 and at 126, on a fake that reads the file.
# - pads: fakes whose times follow CT_ALLOC_PAD; the change is between the
#   means over the pads; padsum of the rows.
# Skipped (77) without python3. Usage: test_regress36.sh SOURCE_DIR CONVTUNE
# [CONFIG_RUN]. About 3 s.
set -u
src=$1
ct=$2
cr=${3:-}
py=$(command -v python3) || { echo "skipped: no python3"; exit 77; }
. "$src/tests/common.sh"
r=$src/bench/regress36.py
F=$src/bench/results/h200-final

# seed -> import
"$py" "$r" seed "$F/call9-ed77a80/tune-r50b16.json" "$F/call9-ed77a80/tune-r50b16-i8.json" >"$tmp/s.jsonl" &&
  [ "$(wc -l <"$tmp/s.jsonl")" -eq 46 ] && ok || bad "seed: expected 46 trials, got $(wc -l <"$tmp/s.jsonl")"
check "import of the seeds" "$ct" import --db "$tmp/s.db" "$tmp/s.jsonl"
"$ct" export --db "$tmp/s.db" >"$tmp/e.jsonl" 2>"$tmp/err" || bad "export: $(cat "$tmp/err")"
"$py" - "$tmp/e.jsonl" "$F/call9-ed77a80/tune-r50b16.json" <<'PY' >"$tmp/log" 2>&1 && ok || { bad "seeds as exported"; cat "$tmp/log"; }
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
doc = {t["key"]: t for t in json.load(open(sys.argv[2]))}
assert len(rows) == 46, len(rows)
assert all(r["template_version"] == "retired-ed77a80" and r["outcome"] == "OK" for r in rows)
for k, t in doc.items():
    r = [x for x in rows if x["workload_key"] == k]
    assert len(r) == 1, k
    assert r[0]["template_name"] == t["template"] and r[0]["config"] == t["best_config"], k
    assert abs(r[0]["median_us"] - t["best_us"]) < 1e-9, k
PY
# an int32 document alone seeds the 8-bit twins too
"$py" "$r" seed "$F/call10-ed77a80/tune-r3d8.json" >"$tmp/t.jsonl" &&
  [ "$(wc -l <"$tmp/t.jsonl")" -eq 22 ] && grep -q -- '-i8.i8.i8-.*-bias-qc"' "$tmp/t.jsonl" && ok ||
  bad "seed of an int32 document: expected 22 trials with 8-bit twins"

# compare: a CSV of two layers, a bench document 1% and 3% slower, then both within
cat >"$tmp/old.csv" <<'EOF'
name,key,convtune_us,convtune_i8_us
a,k1,10.0,8.0
b,k2,5.0,4.0
EOF
echo '{"layers": [{"name": "a", "convtune_us": 10.1, "convtune_i8_us": 8.0}, {"name": "b", "convtune_us": 5.0, "convtune_i8_us": 4.12}]}' >"$tmp/new.json"
"$py" "$r" compare "$tmp/new.json" "$tmp/old.csv" >"$tmp/out"
[ $? -eq 1 ] && grep -q "more than 2% slower: 1: b int8 +3.0%" "$tmp/out" && ok || { bad "compare: b int8 +3% not flagged"; cat "$tmp/out"; }
echo '{"layers": [{"name": "a", "convtune_us": 10.1, "convtune_i8_us": 8.0}, {"name": "b", "convtune_us": 4.9, "convtune_i8_us": 4.05}]}' >"$tmp/new.json"
"$py" "$r" compare "$tmp/new.json" "$tmp/old.csv" >"$tmp/out" && grep -q "more than 2% slower: 0" "$tmp/out" && ok ||
  { bad "compare: within 2% flagged"; cat "$tmp/out"; }

# ab with fake binaries: old 2.00 us, new 2.05 (+2.5%) for the same config and
# 1.90 for another; the old one refuses a_prefetch, both want out_stage on 8-bit keys
cat >"$tmp/old_run" <<'EOF'
#!/bin/sh
echo "old $2 $CT_QUANT_FILE" >> "${0%/*}/qlog"
case "$3" in *a_prefetch*) echo "config_run: config: unknown knob 'a_prefetch'; the knobs are x" >&2; exit 1 ;; esac
case "$2" in *-i8.i8.i8-*) case "$3" in *'"out_stage": 0'*) ;; *) echo "config_run: config: knob 'out_stage' (choice) is missing" >&2; exit 1 ;; esac ;; esac
echo "$1 2.00 us per launch, 1.00 TB/s (data + output)"
EOF
cat >"$tmp/new_run" <<'EOF'
#!/bin/sh
echo "new $2 $CT_QUANT_FILE" >> "${0%/*}/qlog"
case "$2" in *-i8.i8.i8-*) case "$3" in *'"out_stage": 0'*) ;; *) echo "config_run: config: knob 'out_stage' (choice) is missing" >&2; exit 1 ;; esac ;; esac
case "$3" in *'"block_n": 999'*) echo "$1 1.90 us per launch, 1.00 TB/s" ;; *) echo "$1 2.05 us per launch, 1.00 TB/s" ;; esac
EOF
chmod +x "$tmp/old_run" "$tmp/new_run"
k=conv2d-nhwc-i8.i8.i32-n1-c64-k64-56x56-r3x3-s1x1-p1x1.1x1-d1x1
echo "[{\"name\": \"s/l1\", \"key\": \"$k\", \"template\": \"conv2d_nhwc_wgmma\", \"best_us\": 2.0, \"best_config\": {\"block_n\": 64, \"a_prefetch\": 1}}]" >"$tmp/old.json"
echo "[{\"name\": \"s/l1\", \"key\": \"$k\", \"template\": \"conv2d_nhwc_wgmma\", \"best_us\": 1.9, \"best_config\": {\"block_n\": 999}}]" >"$tmp/new.json"
AB_JSON=$tmp/ab.json "$py" "$r" ab "$tmp/old_run" "$tmp/new_run" 1 "$tmp/old.json" -- "$tmp/new.json" >"$tmp/out" 2>"$tmp/err"
"$py" - "$tmp/ab.json" <<'PY' >"$tmp/log" 2>&1 && ok || { bad "ab: columns"; cat "$tmp/log" "$tmp/out" "$tmp/err"; }
import json, sys
rows = {r["output"]: r for r in json.load(open(sys.argv[1]))}
i32, i8 = rows["int32"], rows["int8"]
assert (i32["earlier_build_us"], i32["this_build_same_config_us"], i32["this_build_tuned_us"]) == (2.0, 2.05, 1.9), i32
assert abs(i32["change"] - (1.9 / 2.0 - 1)) < 1e-9 and not i32["same_config"], i32
# the 8-bit twin: adapted on both builds; no 8-bit tuning in the new document
assert (i8["earlier_build_us"], i8["this_build_same_config_us"], i8["this_build_tuned_us"]) == (2.0, 2.05, None), i8
PY
grep -q "more than 2% slower than the earlier best on the earlier build: 1: l1 int8 n/a" "$tmp/out" && ok ||
  { bad "ab: the untuned 8-bit key not flagged"; cat "$tmp/out"; }
# AB_LAYERS and no new documents: only l2, the same config on both, its change
k2=conv2d-nhwc-i8.i8.i32-n1-c64-k64-28x28-r3x3-s1x1-p1x1.1x1-d1x1
echo "[{\"name\": \"s/l1\", \"key\": \"$k\", \"template\": \"t\", \"best_us\": 2.0, \"best_config\": {\"block_n\": 64}}, {\"name\": \"s/l2\", \"key\": \"$k2\", \"template\": \"t\", \"best_us\": 2.0, \"best_config\": {\"block_n\": 64}}]" >"$tmp/old2.json"
AB_LAYERS=l2 AB_JSON=$tmp/ab2.json "$py" "$r" ab "$tmp/old_run" "$tmp/new_run" 1 "$tmp/old2.json" -- >"$tmp/out" 2>"$tmp/err"
"$py" - "$tmp/ab2.json" <<'PY' >"$tmp/log" 2>&1 && ok || { bad "ab: AB_LAYERS, same configs only"; cat "$tmp/log" "$tmp/out" "$tmp/err"; }
import json, sys
rows = json.load(open(sys.argv[1]))
assert sorted((r["layer"], r["output"]) for r in rows) == [("l2", "int32"), ("l2", "int8")], rows
for r in rows:
    assert r["this_build_tuned_us"] is None and abs(r["change"] - 0.025) < 1e-9, r
PY
grep -q "earlier build: 2: l2 int32 +2.5%, l2 int8 +2.5%" "$tmp/out" && ok || { bad "ab: same-config change not flagged"; cat "$tmp/out"; }
# every run of a key got one quant file, each key its own
"$py" - "$tmp/qlog" <<'PY' >"$tmp/log" 2>&1 && ok || { bad "ab: CT_QUANT_FILE per key"; cat "$tmp/log"; }
import sys
files = {}
for line in open(sys.argv[1]):
    b, key, f = line.split()
    files.setdefault(key, set()).add((b, f))
assert len(files) == 4, files  # two ab runs, two keys each
paths = {}
for key, s in files.items():
    assert {b for b, _ in s} == {"old", "new"}, (key, s)
    assert len({f for _, f in s}) == 1 and next(iter(s))[1].endswith(key + ".quant"), (key, s)
    paths[key] = next(iter(s))[1]
assert len(set(paths.values())) == 4, paths
PY

# pads with fakes whose times follow CT_ALLOC_PAD: the earlier build 2.00 us
# below 1 MiB and 2.20 above, this build the other way round, the tuned
# config (block_n 999) T at every pad; the change is between the means over
# the pads, and name:output picks one output
cat >"$tmp/pad_old" <<'EOF'
#!/bin/sh
[ "${CT_ALLOC_PAD:-x}" -lt 1048576 ] 2>/dev/null && t=2.00 || t=2.20
echo "$1 $t us per launch, 1.00 TB/s"
EOF
cat >"$tmp/pad_new" <<'EOF'
#!/bin/sh
case "$3" in *'"block_n": 999'*) echo "$1 $(cat "${0%/*}/pad_t") us per launch, 1.00 TB/s"; exit 0 ;; esac
[ "${CT_ALLOC_PAD:-x}" -lt 1048576 ] 2>/dev/null && t=2.20 || t=2.00
echo "$1 $t us per launch, 1.00 TB/s"
EOF
chmod +x "$tmp/pad_old" "$tmp/pad_new"
echo 2.05 >"$tmp/pad_t"
AB_PADS=0,4096,2097152,33554432 AB_SET=s AB_JSON=$tmp/pads.json "$py" "$r" pads "$tmp/pad_old" "$tmp/pad_new" 2 l1:int32 \
  "$tmp/old2.json" -- "$tmp/new.json" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 0 ] && grep -q "| s | l1 | int32 | 4 | 2.10 (10.0%) | 2.10 (10.0%) | 2.05 (0.0%) | 0.0% | -2.4% |" "$tmp/out" &&
  grep -q "more than 2% slower than the earlier best on the earlier build: 0$" "$tmp/out" && ok ||
  { bad "pads: the means over the pads"; cat "$tmp/out" "$tmp/err"; }
"$py" - "$tmp/pads.json" <<'PY' >"$tmp/log" 2>&1 && ok || { bad "pads: the rows"; cat "$tmp/log"; }
import json, sys
rows = json.load(open(sys.argv[1]))
assert len(rows) == 2 * 4 * 3, len(rows)  # rounds x pads x (old, same config, tuned)
assert {(r["set"], r["layer"], r["output"]) for r in rows} == {("s", "l1", "int32")}, rows
assert sorted({r["pad"] for r in rows}) == [0, 4096, 2097152, 33554432]
assert {r["us"] for r in rows if r["what"] == "earlier_old_build" and r["pad"] < 1048576} == {2.0}
PY
echo 2.20 >"$tmp/pad_t"
AB_PADS=0,33554432 "$py" "$r" pads "$tmp/pad_old" "$tmp/pad_new" 1 l1 "$tmp/old2.json" -- "$tmp/new.json" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 1 ] && grep -q "earlier build: 1: .*l1 int32 +4.8%" "$tmp/out" && ok ||
  { bad "pads: a slower tuned best flagged"; cat "$tmp/out" "$tmp/err"; }
"$py" "$r" padsum "$tmp/pads.json" >"$tmp/out2" && grep -q "| -2.4% |" "$tmp/out2" && ok ||
  { bad "padsum of the rows"; cat "$tmp/out2"; }

# forms: a fake that writes a values file where missing (top 120) and runs
# 3.00 us with the top at 127, 2.00 below; the residual key left out
cat >"$tmp/forms_run" <<'EOF'
#!/bin/sh
[ -f "$CT_QUANT_FILE" ] || echo "ct_quant 1 dzp 0 ozp 3 lo 3 hi 120 rs 0x0p+0 rzp 0 k 1" >"$CT_QUANT_FILE"
case "$(head -1 "$CT_QUANT_FILE")" in *" hi 127 "*) t=3.00 ;; *) t=2.00 ;; esac
echo "$1 $t us per launch, 1.00 TB/s"
EOF
chmod +x "$tmp/forms_run"
k8=conv2d-nhwc-i8.i8.i8-n1-c64-k64-56x56-r1x1-s1x1-p0x0.0x0-d1x1-bias-qc
echo "[{\"name\": \"s/a\", \"key\": \"$k8\", \"template\": \"t\", \"best_us\": 2.0, \"best_config\": {\"x\": 1}}, {\"name\": \"s/b\", \"key\": \"$k8-res\", \"template\": \"t\", \"best_us\": 2.0, \"best_config\": {\"x\": 1}}]" >"$tmp/f8.json"
AB_QUANT_DIR=$tmp/fq AB_JSON=$tmp/forms.json "$py" "$r" forms "$tmp/forms_run" 2 "$tmp/f8.json" >"$tmp/out" 2>"$tmp/err"
"$py" - "$tmp/forms.json" "$tmp/fq" <<'PY' >"$tmp/log" 2>&1 && ok || { bad "forms"; cat "$tmp/log" "$tmp/out" "$tmp/err"; }
import json, os, sys
rows = json.load(open(sys.argv[1]))
assert len(rows) == 1 and rows[0]["layer"] == "a", rows
r = rows[0]
assert (r["drawn_top"], r["top_127_us"], r["top_126_us"]) == (120, 3.0, 2.0) and abs(r["change"] - 0.5) < 1e-9, r
k = r["key"]
drawn = open(os.path.join(sys.argv[2], k + ".quant")).read()
assert " hi 120 " in drawn, drawn  # the drawn values stay as drawn
assert open(os.path.join(sys.argv[2], k + ".quant.fast")).read() == drawn.replace(" hi 120 ", " hi 126 ")
PY

# config_run's CT_QUANT_FILE, up to where it needs the device: written where
# missing (K lines of zero point, bias, hex scale), read back unchanged where
# present, refused when it holds the wrong number of channels
if [ -n "$cr" ]; then
  key=conv2d-nhwc-i8.i8.i8-n16-c512-k128-28x28-r1x1-s1x1-p0x0.0x0-d1x1-bias-qc
  cfg='{"block_n": 64, "block_k": 128, "k_slices": 2, "stages": 4, "warpgroups": 4, "rows_per_wg": 64, "split_k": 1, "blocks_per_sm": 1, "persistent": 2, "out_stage": 1, "tile_requant": 1, "w_early": 0}'
  # runs: 0, or 1 at the device (no GPU here)
  crun() {
    CT_QUANT_FILE=$1 "$cr" conv2d_nhwc_wgmma "$key" "$cfg" 1 >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc -eq 0 ] || { [ $rc -eq 1 ] && grep -q "^config_run: device:" "$tmp/err"; }
  }
  crun "$tmp/q.quant" && ok || { bad "config_run: first run"; cat "$tmp/err"; }
  { [ "$(wc -l < "$tmp/q.quant")" -eq 129 ] &&
    head -1 "$tmp/q.quant" | grep -Eq '^ct_quant 1 dzp 0 ozp -?[0-9]+ lo -?[0-9]+ hi -?[0-9]+ rs [-0-9a-fx.p+]+ rzp 0 k 128$' &&
    sed -n 2p "$tmp/q.quant" | grep -Eq '^0 -?[0-9]+ 0x[0-9a-f.]+p-?[0-9]+$'; } && ok ||
    { bad "config_run: the values written"; head -3 "$tmp/q.quant"; }
  sed 's/ hi [-0-9]* / hi 100 /' "$tmp/q.quant" >"$tmp/q2.quant"
  cp "$tmp/q2.quant" "$tmp/q2.keep"
  crun "$tmp/q2.quant" && cmp -s "$tmp/q2.quant" "$tmp/q2.keep" && ok ||
    { bad "config_run: an edited file read, not rewritten"; cat "$tmp/err"; }
  sed 's/ k 128$/ k 64/' "$tmp/q.quant" >"$tmp/q3.quant"
  head -100 "$tmp/q.quant" >"$tmp/q4.quant"
  for f in q3 q4; do
    CT_QUANT_FILE=$tmp/$f.quant "$cr" conv2d_nhwc_wgmma "$key" "$cfg" 1 >"$tmp/out" 2>"$tmp/err"
    [ $? -eq 1 ] && grep -q "$f.quant: not 128 channels' values" "$tmp/err" && ok ||
      { bad "config_run: $f refused"; cat "$tmp/err"; }
  done
  CT_QUANT_FILE=$tmp/none/q.quant "$cr" conv2d_nhwc_wgmma "$key" "$cfg" 1 >"$tmp/out" 2>"$tmp/err"
  [ $? -eq 1 ] && grep -q "cannot write" "$tmp/err" && ok || { bad "config_run: unwritable path"; cat "$tmp/err"; }
  # CT_CUBIN_OUT: compiled for sm_90 without opening a device; w_early's
  # two values give two cubins; an unknown CT_ARCH is refused
  for v in 0 1; do
    CT_CUBIN_OUT=$tmp/w$v.cubin "$cr" conv2d_nhwc_wgmma "$key" "${cfg%0\}}$v}" >"$tmp/out" 2>"$tmp/err" &&
      [ "$(head -c 4 "$tmp/w$v.cubin" | od -An -c | tr -d ' ')" = '177ELF' ] && ok ||
      { bad "config_run: CT_CUBIN_OUT w_early $v"; cat "$tmp/err"; }
  done
  ! cmp -s "$tmp/w0.cubin" "$tmp/w1.cubin" && ok || bad "config_run: w_early changes the cubin"
  CT_ARCH=sm_99x CT_CUBIN_OUT=$tmp/x.cubin "$cr" conv2d_nhwc_wgmma "$key" "$cfg" >"$tmp/out" 2>"$tmp/err"
  [ $? -eq 1 ] && grep -q "^config_run: CT_ARCH:" "$tmp/err" && [ ! -e "$tmp/x.cubin" ] && ok ||
    { bad "config_run: CT_ARCH refused"; cat "$tmp/err"; }
  # CT_ALLOC_PAD: a count of bytes, 0 to 2^30; anything else refused (2)
  for p in x -1 12k 1073741825 99999999999999999999999; do
    CT_ALLOC_PAD=$p "$cr" conv2d_nhwc_wgmma "$key" "$cfg" 1 >"$tmp/out" 2>"$tmp/err"
    [ $? -eq 2 ] && grep -q "^config_run: CT_ALLOC_PAD must be 0 to 1073741824 bytes, not '$p'" "$tmp/err" &&
      ok || { bad "config_run: CT_ALLOC_PAD '$p' refused"; cat "$tmp/err"; }
  done
  for p in 0 4096 1073741824; do
    CT_ALLOC_PAD=$p CT_QUANT_FILE=$tmp/q.quant "$cr" conv2d_nhwc_wgmma "$key" "$cfg" 1 >"$tmp/out" 2>"$tmp/err"
    rc=$?
    { [ $rc -eq 0 ] || { [ $rc -eq 1 ] && grep -q "^config_run: device:" "$tmp/err"; }; } && ok ||
      { bad "config_run: CT_ALLOC_PAD $p taken"; cat "$tmp/err"; }
  done
fi
finish test_regress36
