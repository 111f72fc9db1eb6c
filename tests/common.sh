# common.sh: what the shell tests share, sourced after they set src: a
# scratch folder ($tmp, removed on exit), the pass/fail counters, ok, bad
# (prints the failure) and finish NAME (prints the count and exits: 0 only
# when nothing failed).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
finish() {
  echo "$1: $pass passed, $fail failed"
  [ "$fail" -eq 0 ]
  exit
}
