#!/usr/bin/env python3
"""soak.py: a concurrency soak of one convtune database (issue 33).

For --seconds, on one database: 2 importers run `convtune import` over
JSON-lines files generated here (valid trials, unique uids and config
indices, on a made-up device), a reader loop runs list, query and export and
checks that each exits 0 and that the trials it sees never decrease, and with
--tuners N (a GPU), N tuners run `convtune tune` on different workloads,
rerun as they finish (a rerun resumes). Every 1-4 s a random one of them is
killed with SIGKILL and restarted. Then nothing is killed: the running ones
finish, every file is imported once more, and the checks run: integrity,
every record of an import that exited 0 present, every record present once
and unchanged, no config measured twice, no descendant alive (the soak is a
child subreaper, so a killed tuner's workers come to it), no failure that
was not a kill. Standard library only. Cost: --seconds plus the drain and
the final imports; about 40 MB of files (64k records) under a temporary
folder, removed when every check held.

Usage: soak.py CONVTUNE [--seconds S] [--tuners N] [--json FILE] [...]
Exit 0 every check held, 1 a check failed, 2 usage.
"""
import argparse
import ctypes
import json
import os
import random
import shlex
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
UID_PREFIX = "soak-"
# Import workloads: packed keys (the form the dp4a and mma templates tune),
# each with a template of its op. The tuners' workloads are other ones, so
# that the two kinds of writers share tables but not tasks.
IMPORT_KEYS = [
    ("conv2d-nchw4c-i8.i8.i32-n1-c64-k64-56x56-r3x3-s1x1-p1x1.1x1-d1x1", "conv2d_nchw4c_dp4a"),
    ("conv2d-nchw4c-i8.i8.i32-n16-c64-k64-56x56-r3x3-s2x2-p1x1.1x1-d1x1", "conv2d_nchw4c_mma"),
    ("conv2d-nchw4c-i8.i8.i32-n4-c256-k128-14x14-r1x1-s1x1-p0x0.0x0-d1x1", "conv2d_nchw4c_dp4a"),
]
TUNE_WORKLOADS = [
    '{"op":"conv2d","c":64,"k":64,"h":28,"w":28,"kernel":3,"pad":1}',
    '{"op":"conv2d","c":128,"k":128,"h":14,"w":14,"kernel":3,"pad":1,"layout":"nhwc"}',
]
# A device no GPU has: imported trials never share a tuner's (device, task).
DEVICE = {"name": "SOAK no GPU", "cc_major": 9, "cc_minor": 0, "sm_count": 132,
          "driver_version": 13000, "runtime_version": 13000, "nvrtc_version": "13.0"}
OUTCOMES = ["COMPILE_ERROR", "LAUNCH_ERROR", "WRONG_ANSWER", "TIMEOUT", "INVALID"]

libc = ctypes.CDLL(None, use_errno=True)


def die_with_parent():
    """In a child before exec: SIGKILL when the soak dies (a ctest timeout)."""
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def proc_stat(pid):
    """(state, ppid, starttime) of pid from /proc, or None when gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            s = f.read()
    except OSError:
        return None
    rest = s[s.rindex(")") + 2:].split()  # comm may hold spaces and parentheses
    return rest[0], int(rest[1]), int(rest[19])


def descendants(root):
    """{pid: (state, starttime)} of every process under root (not root)."""
    kids = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = proc_stat(int(name))
            if st:
                kids.setdefault(st[1], []).append((int(name), st))
    out, todo = {}, [root]
    while todo:
        for pid, st in kids.get(todo.pop(), []):
            if pid not in out:
                out[pid] = (st[0], st[2])
                todo.append(pid)
    return out


def alive(pid, starttime):
    """Whether pid is the same process as before and not a zombie."""
    st = proc_stat(pid)
    return st is not None and st[2] == starttime and st[0] not in "ZX"


class Gen:
    """Trial records with unique uids and config indices, as export writes them."""

    def __init__(self, rng):
        self.rng = rng
        self.next_index = 0
        self.medians = {}  # uid -> median_us: every record generated

    def record(self, uid):
        key, tpl = IMPORT_KEYS[self.next_index % len(IMPORT_KEYS)]
        idx = self.next_index
        self.next_index += 1
        ok = self.rng.random() < 0.9
        med = round(self.rng.uniform(1, 500), 6) if ok else 0.0
        samples = [med, med * 1.01, med * 0.99] if ok else []
        self.medians[uid] = med
        return {"format": 1, "uid": uid, "workload_key": key, "template_name": tpl,
                "template_version": "50a450a450a450a4", "config_index": str(idx),
                "config": {"soak": idx}, "outcome": "OK" if ok else self.rng.choice(OUTCOMES),
                "error": None if ok else "soak: made-up failure", "median_us": med,
                "samples_us": samples, "compile_ms": 12.5, "options": "-O3", "arch": "sm_90",
                "tuner": "soak", "tuner_settings": None, "session": "soak", "timestamp": 1700000000,
                "device": DEVICE}

    def file(self, path, uid_stem, n):
        uids = []
        with open(path, "w") as f:
            for i in range(n):
                uid = "%s%s-%d" % (UID_PREFIX, uid_stem, i)
                f.write(json.dumps(self.record(uid), separators=(",", ":")) + "\n")
                uids.append(uid)
        return uids


class Slot:
    """One worker of the soak (an importer, a tuner or the reader) and its process."""

    def __init__(self, kind, index, work):
        self.kind, self.index, self.work = kind, index, work
        self.name = "%s%d" % (kind, index)
        self.proc = None
        self.killed = False
        self.task = None  # what the running process does: a file, a read
        self.out = os.path.join(work, self.name + ".out")
        self.err = os.path.join(work, self.name + ".err")

    def start(self, argv, task):
        with open(self.out, "w") as o, open(self.err, "w") as e:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=o, stderr=e,
                                         preexec_fn=die_with_parent)
        self.killed = False
        self.task = task

    def text(self, which, limit=400):
        with open(self.err if which == "err" else self.out, errors="replace") as f:
            return f.read(limit).strip()


class Soak:
    def __init__(self, a):
        self.a = a
        self.rng = random.Random(a.seed)
        self.work = a.workdir or tempfile.mkdtemp(prefix="soak-")
        os.makedirs(self.work, exist_ok=True)
        self.db = os.path.join(self.work, "soak.db")
        self.gen = Gen(self.rng)
        self.files = {}  # path -> uids
        self.pools = []  # per importer: its files
        self.used = [[] for _ in range(a.importers)]  # per importer: the files it has begun
        self.committed = set()  # files an import of which exited 0
        self.n = dict(records=0, imports_started=0, imports_completed=0, reads_started=0,
                      reads_completed=0, tune_runs_started=0, tune_runs_completed=0,
                      kills=0, kills_importer=0, kills_tuner=0, kills_reader=0,
                      importer_failures=0, reader_failures=0, reader_decreases=0,
                      tuner_failures=0, final_import_failures=0, database_locked=0,
                      orphans_after_kill=0, hung=0)
        self.messages = []  # the first failures, with their messages
        self.seen = {}  # reader scope -> most trials seen
        self.read_no = 0
        self.pending = []  # (due, {pid: starttime}) of killed processes' descendants

    def fail(self, counter, msg):
        self.n[counter] += 1
        if "database is locked" in msg:
            self.n["database_locked"] += 1
        if len(self.messages) < 20:
            self.messages.append(msg)
        print("soak: %s" % msg, file=sys.stderr)

    # ---- the workers' commands ----
    def import_argv(self, path):
        return [self.a.convtune, "import", "--db", self.db, path]

    def pick_file(self, s):
        """A killed import is run again on its file, as a user would. Else
        a new file of its own when one is due (they come evenly over the
        soak, so that new records go in until the end), or one already
        imported, now and then the other importer's, so that two imports
        of the same records overlap."""
        if s.task and s.killed:
            return s.task
        pool, used = self.pools[s.index], self.used[s.index]
        due = 1 + int(len(pool) * (time.monotonic() - self.t0) / self.a.seconds)
        if len(used) < min(due, len(pool)):
            used.append(pool[len(used)])
            return used[-1]
        other = self.used[(s.index + self.rng.randrange(1, len(self.used))) % len(self.used)]
        if other and self.rng.random() < 0.3:
            return self.rng.choice(other)
        return self.rng.choice(used)

    def read_argv(self):
        """list, query KEY, export KEY in turn; every 8th read a whole export."""
        self.read_no += 1
        key = IMPORT_KEYS[(self.read_no // 3) % len(IMPORT_KEYS)][0]
        if self.read_no % 8 == 0:
            return ["export", "--db", self.db], ("export", "all")
        op = ("list", "query", "export")[self.read_no % 3]
        if op == "list":
            return ["list", "--db", self.db, "--json"], ("list", "all")
        if op == "query":
            return ["query", "--db", self.db, "--json", key], ("query", key)
        return ["export", "--db", self.db, key], ("export", key)

    def tune_argv(self, i):
        w = self.a.tune_workload[i % len(self.a.tune_workload)]
        return ([self.a.convtune, "tune", "--db", self.db, "--trials", str(self.a.tune_trials),
                 "--seed", str(self.a.seed % 1000 + i + 1), "-q"] +
                shlex.split(self.a.tune_args) + [w])

    def start(self, s):
        if s.kind == "import":
            path = self.pick_file(s)
            s.start(self.import_argv(path), path)
            self.n["imports_started"] += 1
        elif s.kind == "read":
            argv, scope = self.read_argv()
            s.start([self.a.convtune] + argv, scope)
            self.n["reads_started"] += 1
        else:
            s.start(self.tune_argv(s.index), None)
            self.n["tune_runs_started"] += 1

    def count_read(self, s):
        """Trials a finished read saw, or raises ValueError on odd output."""
        op, _ = s.task
        if op == "export":
            n = 0
            with open(s.out) as f:
                for line in f:
                    if line.strip():
                        json.loads(line)  # each line a whole record
                        n += 1
            return n
        with open(s.out) as f:
            return sum(int(r["trials"]) for r in json.load(f))

    def finish(self, s):
        rc = s.proc.returncode
        what = "%s (%s)" % (s.name, " ".join(s.proc.args[1:2] + [str(s.task or "")]))
        if rc != 0 and s.killed:
            pass  # counted at the kill
        elif s.kind == "import":
            if rc == 0:
                self.n["imports_completed"] += 1
                self.committed.add(s.task)
            else:
                self.fail("importer_failures", "%s exit %d: %s" % (what, rc, s.text("err")))
        elif s.kind == "tune":
            if rc == 0:
                self.n["tune_runs_completed"] += 1
            else:
                self.fail("tuner_failures", "%s exit %d: %s" % (what, rc, s.text("err")))
        elif rc != 0:
            self.fail("reader_failures", "%s exit %d: %s" % (what, rc, s.text("err")))
        else:
            self.n["reads_completed"] += 1
            try:
                n = self.count_read(s)
            except (ValueError, KeyError, TypeError) as e:
                self.fail("reader_failures", "%s: unreadable output: %s" % (what, e))
                n = None
            # list and a whole export see the same trials, as do query and
            # export of one key: reads run one after another, so each sees
            # at least what the one before it saw
            scope = s.task[1]
            if n is not None and n < self.seen.get(scope, 0):
                self.fail("reader_decreases", "%s saw %d trials after %d" %
                          (what, n, self.seen[scope]))
            if n is not None:
                self.seen[scope] = max(n, self.seen.get(scope, 0))
        s.proc = None

    def kill(self, s):
        kids = {p: t for p, (st, t) in descendants(s.proc.pid).items()}
        try:
            os.kill(s.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        s.killed = True
        self.n["kills"] += 1
        self.n["kills_" + {"import": "importer", "tune": "tuner", "read": "reader"}[s.kind]] += 1
        if kids:
            self.pending.append((time.monotonic() + self.a.grace, kids))

    def check_orphans(self, due_all=False):
        """A killed process's descendants (a tuner's workers), a grace after
        the kill: none may run.
        Zombies among them are the soak's (a subreaper's) to reap."""
        now, left = time.monotonic(), []
        for due, kids in self.pending:
            if due > now and not due_all:
                left.append((due, kids))
                continue
            for pid, t in kids.items():
                if alive(pid, t):
                    self.fail("orphans_after_kill", "process %d alive %.1f s after its parent's"
                              " kill" % (pid, self.a.grace))
                try:
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass
        self.pending = left

    # ---- the run ----
    def setup(self):
        # every workload present before the readers start, so query has trials
        seed = os.path.join(self.work, "seed.jsonl")
        self.files[seed] = self.gen.file(seed, "seed", len(IMPORT_KEYS))
        r = subprocess.run(self.import_argv(seed), capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit("soak: the first import failed, exit %d: %s" %
                             (r.returncode, r.stderr.strip()))
        self.committed.add(seed)
        for i in range(self.a.importers):
            pool = []
            for k in range(self.a.files):
                p = os.path.join(self.work, "imp%d-%d.jsonl" % (i, k))
                self.files[p] = self.gen.file(p, "%d-%d" % (i, k), self.a.records)
                pool.append(p)
            self.pools.append(pool)
        self.n["records"] = len(self.gen.medians)

    def run(self):
        slots = [Slot("import", i, self.work) for i in range(self.a.importers)]
        slots += [Slot("tune", i, self.work) for i in range(self.a.tuners)]
        slots.append(Slot("read", 0, self.work))
        t0 = self.t0 = time.monotonic()
        deadline = t0 + self.a.seconds
        next_kill = t0 + self.rng.uniform(self.a.kill_min, self.a.kill_max)
        while True:
            now = time.monotonic()
            soaking = now < deadline
            for s in slots:
                if s.proc and s.proc.poll() is not None:
                    self.finish(s)
                if not s.proc and soaking:
                    self.start(s)
            if soaking and now >= next_kill:
                running = [s for s in slots if s.proc]
                if running:
                    self.kill(self.rng.choice(running))
                next_kill = now + self.rng.uniform(self.a.kill_min, self.a.kill_max)
            self.check_orphans()
            busy = [s for s in slots if s.proc]
            if not soaking and not busy and not self.pending:
                break
            if not soaking and now > deadline + self.a.drain:
                for s in busy:  # a process that does not finish is a hang
                    self.fail("hung", "%s still running %d s after the soak" %
                              (s.name, self.a.drain))
                    s.proc.kill()
                    s.proc.wait()
                    s.proc = None
                self.check_orphans(due_all=True)
                break
            time.sleep(0.02)
        return time.monotonic() - t0

    def db_uids(self):
        c = sqlite3.connect("file:%s?mode=ro" % self.db, uri=True)
        try:
            return dict(c.execute("SELECT uid, median_us FROM trials WHERE substr(uid, 1, %d) = ?"
                                  % len(UID_PREFIX), (UID_PREFIX,)))
        finally:
            c.close()

    def integrity(self):
        c = sqlite3.connect("file:%s?mode=ro" % self.db, uri=True)
        try:
            return "; ".join(r[0] for r in c.execute("PRAGMA integrity_check"))
        finally:
            c.close()

    def checks(self, soak_s):
        res = {}
        res["integrity_after_soak"] = self.integrity()
        have = self.db_uids()
        want = [u for p in sorted(self.committed) for u in self.files[p]]
        res["records_committed"] = len(want)
        res["records_lost_committed"] = sum(1 for u in want if u not in have)
        # every file once more, one at a time, to completion
        t = time.monotonic()
        for p in sorted(self.files):
            r = subprocess.run(self.import_argv(p), capture_output=True, text=True)
            if r.returncode != 0:
                self.fail("final_import_failures", "final import of %s exit %d: %s" %
                          (os.path.basename(p), r.returncode, r.stderr.strip()[:400]))
        res["final_imports_s"] = round(time.monotonic() - t, 1)
        have = self.db_uids()
        res["records_lost"] = sum(1 for u in self.gen.medians if u not in have)
        res["records_unknown"] = sum(1 for u in have if u not in self.gen.medians)
        res["records_changed"] = sum(1 for u, m in self.gen.medians.items()
                                     if u in have and have[u] != m)
        c = sqlite3.connect("file:%s?mode=ro" % self.db, uri=True)
        try:
            res["records_twice"] = c.execute(
                "SELECT count(*) - count(DISTINCT uid) FROM trials").fetchone()[0]
            res["configs_measured_twice"] = c.execute(
                "SELECT coalesce(sum(n - 1), 0) FROM (SELECT count(*) AS n FROM trials"
                " GROUP BY workload_id, device_id, template_id, config_index HAVING n > 1)"
            ).fetchone()[0]
            res["tuner_trials"] = c.execute(
                "SELECT count(*) FROM trials WHERE substr(uid, 1, %d) != ?" % len(UID_PREFIX),
                (UID_PREFIX,)).fetchone()[0]
            res["trials"] = c.execute("SELECT count(*) FROM trials").fetchone()[0]
        finally:
            c.close()
        res["integrity_final"] = self.integrity()
        # orphans: after a grace, no descendant may be running; then reap
        time.sleep(self.a.grace)
        left = {p: st for p, (st, _) in descendants(os.getpid()).items()}
        res["orphans"] = sum(1 for st in left.values() if st not in "ZX")
        res["zombies_reaped"] = 0
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            res["zombies_reaped"] += 1
        return res


def summary(a, soak, soak_s, res, wall_s):
    n = soak.n
    checks = {
        "integrity_check ok": res["integrity_after_soak"] == res["integrity_final"] == "ok",
        "importer failures 0": n["importer_failures"] == 0,
        "reader failures 0": n["reader_failures"] == 0 and n["reader_decreases"] == 0,
        "tuner failures 0": n["tuner_failures"] == 0,
        "final imports ok": n["final_import_failures"] == 0,
        "records lost 0": res["records_lost_committed"] == 0 and res["records_lost"] == 0,
        "records once and unchanged": res["records_twice"] == 0 and res["records_changed"] == 0
        and res["records_unknown"] == 0,
        "configs measured twice 0": res["configs_measured_twice"] == 0,
        "orphans 0": res["orphans"] == 0 and n["orphans_after_kill"] == 0,
        "no hang": n["hung"] == 0,
    }
    failed = [k for k, v in checks.items() if not v]
    out = {
        "ok": not failed, "failed_checks": failed, "seed": a.seed, "seconds": a.seconds,
        "soak_s": round(soak_s, 1), "wall_s": round(wall_s, 1), "tuners": a.tuners,
        "inputs": {"records_generated": n["records"], "files": len(soak.files),
                   "records_per_file": a.records, "imports_started": n["imports_started"],
                   "imports_completed": n["imports_completed"],
                   "reads_started": n["reads_started"], "reads_completed": n["reads_completed"],
                   "tune_runs_started": n["tune_runs_started"],
                   "tune_runs_completed": n["tune_runs_completed"],
                   "tuner_trials": res["tuner_trials"], "trials": res["trials"]},
        "kills": {"total": n["kills"], "importer": n["kills_importer"],
                  "tuner": n["kills_tuner"], "reader": n["kills_reader"]},
        "errors": {k: n[k] for k in ("importer_failures", "reader_failures", "reader_decreases",
                                     "tuner_failures", "final_import_failures", "hung",
                                     "database_locked")},
        "records_committed": res["records_committed"],
        "records_lost_committed": res["records_lost_committed"],
        "records_lost": res["records_lost"], "records_twice": res["records_twice"],
        "records_changed": res["records_changed"], "records_unknown": res["records_unknown"],
        "configs_measured_twice": res["configs_measured_twice"],
        "orphans": res["orphans"], "orphans_after_kill": n["orphans_after_kill"],
        "zombies_reaped": res["zombies_reaped"],
        "integrity_after_soak": res["integrity_after_soak"],
        "integrity_final": res["integrity_final"], "final_imports_s": res["final_imports_s"],
        "messages": soak.messages,
    }
    i, k, e = out["inputs"], out["kills"], out["errors"]
    print("soak: %g s of soak (%.1f s with the drain), %.1f s wall, seed %d, db %s" %
          (a.seconds, soak_s, wall_s, a.seed, soak.db))
    print("  inputs: %d records in %d files; imports %d started, %d completed; reads %d started,"
          " %d completed; tune runs %d started, %d completed, %d tuner trials" %
          (i["records_generated"], i["files"], i["imports_started"], i["imports_completed"],
           i["reads_started"], i["reads_completed"], i["tune_runs_started"],
           i["tune_runs_completed"], i["tuner_trials"]))
    print("  kills: %d (importer %d, tuner %d, reader %d)" %
          (k["total"], k["importer"], k["tuner"], k["reader"]))
    print("  errors: importer %d, reader %d (+%d decreases), tuner %d, final import %d, hung %d;"
          " 'database is locked' %d" %
          (e["importer_failures"], e["reader_failures"], e["reader_decreases"],
           e["tuner_failures"], e["final_import_failures"], e["hung"], e["database_locked"]))
    print("  records lost: %d of %d committed by an import that exited 0, %d of %d after the final"
          " imports (%.1f s); twice %d, changed %d, unknown %d" %
          (out["records_lost_committed"], out["records_committed"], out["records_lost"],
           i["records_generated"], out["final_imports_s"], out["records_twice"],
           out["records_changed"], out["records_unknown"]))
    print("  configs measured twice: %d; orphans: %d at the end, %d alive %.1f s after a kill;"
          " integrity_check: %s, %s" %
          (out["configs_measured_twice"], out["orphans"], out["orphans_after_kill"], a.grace,
           out["integrity_after_soak"], out["integrity_final"]))
    print("soak: %s" % ("PASS" if not failed else "FAIL: " + ", ".join(failed)))
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("convtune", help="the convtune command")
    p.add_argument("--seconds", type=float, default=40, help="how long to soak (40)")
    p.add_argument("--tuners", type=int, default=0, help="tuners (a GPU; 0)")
    p.add_argument("--importers", type=int, default=2, help="importers (2)")
    p.add_argument("--json", help="write the summary as JSON here")
    p.add_argument("--records", type=int, default=4000, help="records per import file (4000)")
    p.add_argument("--files", type=int, default=8,
                   help="import files per importer, begun evenly over the soak (8)")
    p.add_argument("--kill-min", type=float, default=1, help="least seconds between kills (1)")
    p.add_argument("--kill-max", type=float, default=4, help="most seconds between kills (4)")
    p.add_argument("--tune-trials", type=int, default=16, help="trials per tune run (16)")
    p.add_argument("--tune-workload", action="append",
                   help="a tuner's workload, once per tuner (default: two small conv2d)")
    p.add_argument("--tune-args", default="", help="more flags for every tune run")
    p.add_argument("--drain", type=float, default=240,
                   help="seconds the running ones get to finish after the soak (240)")
    p.add_argument("--grace", type=float, default=1.5,
                   help="seconds after which a killed tuner's workers must be gone (1.5)")
    p.add_argument("--seed", type=int, default=int(time.time()) % 100000)
    p.add_argument("--workdir", help="the folder of the database and files (default: a new"
                   " /tmp/soak-*, removed when every check held)")
    p.add_argument("--keep", action="store_true", help="keep the folder")
    a = p.parse_args()
    a.tune_workload = a.tune_workload or TUNE_WORKLOADS
    if (a.records < 1 or a.files < 1 or a.importers < 2 or a.tuners < 0 or
            not 0 < a.kill_min <= a.kill_max):
        p.error("--records and --files >= 1, --importers >= 2, --tuners >= 0,"
                " 0 < --kill-min <= --kill-max")
    if not os.access(a.convtune, os.X_OK):
        p.error("%s is not an executable" % a.convtune)
    a.convtune = os.path.abspath(a.convtune)
    # killed tuners' workers come to the soak, to be counted and reaped
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise SystemExit("soak: prctl(PR_SET_CHILD_SUBREAPER): %s" %
                         os.strerror(ctypes.get_errno()))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    t0 = time.monotonic()
    soak = Soak(a)
    try:
        soak.setup()
        soak_s = soak.run()
        res = soak.checks(soak_s)
    except BaseException:
        print("soak: stopped; kept %s" % soak.work, file=sys.stderr)
        raise
    finally:
        for pid in descendants(os.getpid()):  # only on an exception are any left
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    out = summary(a, soak, soak_s, res, time.monotonic() - t0)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")
    if out["ok"] and not a.keep and not a.workdir:
        shutil.rmtree(soak.work, ignore_errors=True)
    elif not out["ok"]:
        print("soak: kept %s" % soak.work)
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
