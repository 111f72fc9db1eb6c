#!/bin/sh
# test_plot_bench.sh: scripts/plot_bench draws a PNG from the small results
# files of tests/data (a set's and a model's, with null cells), and refuses
# a file that is not a results document with exit 2 and one line naming it.
# Skipped (77) without /usr/bin/python3 and matplotlib (python3-matplotlib).
# Usage: test_plot_bench.sh SOURCE_DIR. About 3 s.
set -u
src=$1
plot=$src/scripts/plot_bench
if ! /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  echo "skipped: no matplotlib for /usr/bin/python3 (apt-get install python3-matplotlib)"
  exit 77
fi
. "$src/tests/common.sh"

# is_png FILE: the PNG signature, then an IHDR of a non-empty image
is_png() {
  [ "$(od -An -tx1 -N8 "$1" | tr -d ' \n')" = 89504e470d0a1a0a ] &&
    [ "$(od -An -c -j12 -N4 "$1" | tr -d ' \n')" = IHDR ] && [ "$(wc -c <"$1")" -gt 1000 ]
}
for doc in bench_set_small bench_model_small; do
  if "$plot" "$src/tests/data/$doc.json" -o "$tmp/$doc.png" 2>"$tmp/err"; then
    is_png "$tmp/$doc.png" && ok || bad "$doc: $tmp/$doc.png is not a PNG"
  else
    bad "$doc: plot_bench failed: $(cat "$tmp/err")"
  fi
done
# without -o: beside the results file, with .png
cp "$src/tests/data/bench_set_small.json" "$tmp/r.json"
"$plot" "$tmp/r.json" 2>/dev/null && is_png "$tmp/r.png" && ok || bad "no r.png beside r.json"

# bad input: exit 2, one line naming the file or the field, nothing written
# expect_bad PATTERN FILE
expect_bad() {
  "$plot" "$2" -o "$tmp/bad.png" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [ "$rc" -ne 2 ]; then bad "plot_bench $2 exited $rc, expected 2"; cat "$tmp/err"; return; fi
  [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q -- "$1" "$tmp/err" && [ ! -e "$tmp/bad.png" ] && ok ||
    { bad "plot_bench $2: expected one line with '$1'"; cat "$tmp/err"; }
}
printf '{"layers": [' >"$tmp/cut.json"
expect_bad 'cut.json: not JSON' "$tmp/cut.json"
printf '{"device": "x"}' >"$tmp/none.json"
expect_bad "no 'layers' or 'nodes'" "$tmp/none.json"
printf '{"layers": [{"name": "a", "floor_us": "fast"}]}' >"$tmp/field.json"
expect_bad "row 1 (a): 'floor_us' must be a time" "$tmp/field.json"
expect_bad 'cannot open' "$tmp/missing.json"

finish plot_bench
