#!/bin/sh
# Issue 33 on the GPU machine: the concurrency soak (tests/soak.py) with its
# tuners: 2 tuners on different workloads (16 trials a run, rerun as they
# finish: a rerun resumes), 2 importers and a reader loop on one database,
# a random one killed with SIGKILL every 1-4 s, for SECONDS (240). Then the
# checks: integrity, records lost 0, configs measured twice 0, no worker of
# a killed tuner alive 1.5 s after the kill and no descendant at the end
# (the soak is their subreaper). Run from the repository root with .gpu-bin
# and .gpu-libs carried: `sh bench/issue33_soak.sh [SECONDS]`; SOAK_ARGS
# adds soak.py flags. Writes soak.log, soak.json and soak.md to $OUT; exits
# with soak.py's status (0 every check held). Cost: SECONDS plus the drain
# (at most 120 s) and about 10 s of setup and final imports.
set -u
OUT=${OUT:-/tmp/soak-out}
mkdir -p "$OUT"
. bench/issue32/env.sh
S=${1:-240}
nvidia-smi -L
echo "python3 $(python3 -c 'import sys; print(sys.version.split()[0])'), commit $CT_COMMIT"
# the tuners' runs end within the drain: 16 trials, 5 s a trial at most;
# SOAK_ARGS is split into words on purpose
# shellcheck disable=SC2086
timeout $((S + 300)) python3 tests/soak.py "$B/convtune" --tuners 2 --seconds "$S" --drain 120 \
  --json "$OUT/soak.json" ${SOAK_ARGS:-} > "$OUT/soak.log" 2>&1
rc=$?
cat "$OUT/soak.log"
echo "soak.py rc=$rc"
python3 - "$OUT/soak.json" "$rc" "$CT_COMMIT" "$(nvidia-smi -L | head -1)" > "$OUT/soak.md" <<'EOF'
import json, sys
path, rc, commit, gpu = sys.argv[1:5]
try:
    r = json.load(open(path))
except (OSError, ValueError) as e:
    print("# Issue 33 concurrency soak: no summary (%s), soak.py rc=%s" % (e, rc))
    sys.exit(0)
i, k, e = r["inputs"], r["kills"], r["errors"]
print("# Issue 33 concurrency soak on the GPU machine (commit %s)\n" % commit)
print("%s. `sh bench/issue33_soak.sh %g`: %d tuners, 2 importers and a reader loop on"
      " one database for %g s (%.0f s with the drain, %.0f s in all), a random one killed"
      " with SIGKILL every 1-4 s; seed %d.\n" % (gpu, r["seconds"], r["tuners"], r["seconds"],
                                                 r["soak_s"], r["wall_s"], r["seed"]))
rows = [
    ("result", "PASS" if r["ok"] else "FAIL: " + ", ".join(r["failed_checks"])),
    ("records generated (files)", "%d (%d)" % (i["records_generated"], i["files"])),
    ("imports started / exited 0", "%d / %d" % (i["imports_started"], i["imports_completed"])),
    ("reads started / exited 0", "%d / %d" % (i["reads_started"], i["reads_completed"])),
    ("tune runs started / exited 0", "%d / %d" % (i["tune_runs_started"],
                                                  i["tune_runs_completed"])),
    ("tuner trials in the database", i["tuner_trials"]),
    ("kills (importer, tuner, reader)", "%d (%d, %d, %d)" % (k["total"], k["importer"],
                                                            k["tuner"], k["reader"])),
    ("errors: importer, reader, tuner, final import, hung",
     "%d, %d (+%d decreases), %d, %d, %d" % (e["importer_failures"], e["reader_failures"],
                                             e["reader_decreases"], e["tuner_failures"],
                                             e["final_import_failures"], e["hung"])),
    ("'database is locked'", e["database_locked"]),
    ("records lost (committed before the final imports / after)",
     "%d of %d / %d of %d" % (r["records_lost_committed"], r["records_committed"],
                              r["records_lost"], i["records_generated"])),
    ("records twice, changed", "%d, %d" % (r["records_twice"], r["records_changed"])),
    ("configs measured twice", r["configs_measured_twice"]),
    ("orphans: alive 1.5 s after a kill / at the end", "%d / %d" % (r["orphans_after_kill"],
                                                                   r["orphans"])),
    ("zombies reaped at the end", r["zombies_reaped"]),
    ("integrity_check after the soak / at the end", "%s / %s" % (r["integrity_after_soak"],
                                                                r["integrity_final"])),
]
print("| | |\n|---|---|")
for name, v in rows:
    print("| %s | %s |" % (name, v))
if r["messages"]:
    print("\nFirst failures:\n")
    for m in r["messages"]:
        print("    " + m.replace("\n", " ")[:300])
EOF
cat "$OUT/soak.md"
exit $rc
