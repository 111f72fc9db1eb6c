#!/bin/sh
# Issue 33 on the GPU machine: the tuner's tests on the final tuner code,
# then defect 8: kill -9 of a running `convtune tune` and, 1 s later, what
# is left of its workers (state letters from /proc: Z is an unreaped zombie
# holding nothing, anything else is still running).
set -u
. bench/issue32/env.sh
for t in test_tune_gpu test_sched_gpu; do
  s=$(date +%s); timeout 150 $B/$t > $OUT/$t.log 2>&1
  echo "$t rc=$? $(($(date +%s)-s))s: $(grep -E '^[0-9]+%' $OUT/$t.log | tail -1)"
done
for i in 1 2 3; do
  $B/convtune tune --set resnet50 --batch 1 --layout nhwc --trials 400 --db /tmp/kill$i.db -q > /dev/null 2>&1 &
  pid=$!
  sleep $((4 + 3 * i))
  kids=$(ps -o pid= --ppid $pid | tr -s ' \n' ' ')
  kill -9 $pid
  sleep 1
  alive=0 zombie=0
  for k in $kids; do
    [ -r /proc/$k/stat ] || continue
    st=$(cut -d' ' -f3 /proc/$k/stat)
    if [ "$st" = Z ]; then zombie=$((zombie + 1)); else alive=$((alive + 1)); fi
  done
  echo "kill $i after $((4 + 3 * i)) s: $(echo $kids | wc -w) workers; 1 s after kill -9: $alive running, $zombie zombies"
  wait $pid 2>/dev/null
  sqlite3 /tmp/kill$i.db 'PRAGMA integrity_check' 2>/dev/null || python3 -c "import sqlite3; print(sqlite3.connect('/tmp/kill$i.db').execute('PRAGMA integrity_check').fetchone()[0])"
done
