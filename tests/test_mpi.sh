#!/bin/sh
# test_mpi.sh SRC CONVTUNE TEST_MPI MPI_BUILT: `convtune tune --mpi` without a
# GPU, under `mpirun -n 2 --oversubscribe` (and 3 for the records): an
# argument error and a refusal (GPUs that are not there) are each reported
# once for the run, by rank 0, naming the rank, and create no database;
# --rank-timeout wants --mpi; the records protocol between ranks (tuner/mpi.c)
# carries records read from a file into rank 0's database unchanged
# (tests/test_mpi.c). Built without MPI, --mpi says so. Skipped (77) without
# mpirun.
set -u
src=$1 ct=$2 tm=$3 built=$4
. "$src/tests/common.sh"
# count_lines FILE PATTERN: lines of FILE that match
count_lines() { grep -c -- "$2" "$1" || true; }
if [ "$built" != 1 ]; then
  "$ct" tune --mpi >"$tmp/o" 2>"$tmp/e"
  [ $? -eq 2 ] && grep -q "built without MPI" "$tmp/e" && ok || bad "--mpi without MPI: $(cat "$tmp/e")"
  finish test_mpi
fi
if ! command -v mpirun >/dev/null 2>&1; then
  echo "skipped: mpirun is not installed (Debian: openmpi-bin)"
  exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
run() { timeout 120 mpirun -n "$@"; }

run 2 "$ct" tune --mpi --trials x >"$tmp/o" 2>"$tmp/e"
rc=$?
[ "$rc" -ne 0 ] && [ "$(count_lines "$tmp/e" "^convtune tune: --trials")" -eq 1 ] && ok ||
  bad "an argument error under mpirun, once (rc $rc): $(cat "$tmp/e")"

run 2 "$ct" tune --mpi --devices 900 --db "$tmp/r.db" --set resnet50 >"$tmp/o" 2>"$tmp/e"
rc=$?
[ "$rc" -ne 0 ] && [ "$(count_lines "$tmp/e" "^convtune")" -eq 1 ] &&
  grep -q "rank 0: .*(and 1 rank more)" "$tmp/e" && ok ||
  bad "a refusal on every rank, once (rc $rc): $(cat "$tmp/e")"
[ ! -e "$tmp/r.db" ] && ok || bad "a refused run created the database"

"$ct" tune --rank-timeout 5 >"$tmp/o" 2>"$tmp/e"
[ $? -eq 2 ] && grep -q "only with --mpi" "$tmp/e" && ok || bad "--rank-timeout without --mpi: $(cat "$tmp/e")"

check "records written" "$tm" --write "$tmp/rec.jsonl" 40
run 3 "$tm" "$tmp/s.db" "$tmp/rec.jsonl" >"$tmp/o" 2>"$tmp/e"
rc=$?
[ "$rc" -eq 0 ] && grep -q "80 records from 2 ranks, each in the database as its file says" "$tmp/o" && ok ||
  bad "the records protocol (rc $rc): $(cat "$tmp/o" "$tmp/e")"
finish test_mpi
