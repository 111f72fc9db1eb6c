#!/usr/bin/env python3
"""Summary of bench/issue33_sanitize.sh's compute-sanitizer jobs (standard library only).

    python3 bench/issue33_sanitize_summary.py LOG_DIR SUMMARY.md

Reads LOG_DIR/*.meta (a job's tool, name, exit status and wall time, or why
it did not run) and each job's log (the test's output with the tool's
"=========" lines between), writes SUMMARY.md (per tool; per tool and case;
per template; per job; the jobs that are not clean, with the lines that say
why) and prints the per-tool table. Kernels launched: the test's "launch"
lines (the tool prints nothing per launch). Errors: "ERROR SUMMARY" less the
API errors ("Program hit") and the test's own failure ("Target application
returned an error"); racecheck: "RACECHECK SUMMARY" (errors, warnings). A job
without a summary line (timeout, tool failure) is never reported as clean.
"""
import collections
import glob
import os
import re
import sys

TOOLS = ["memcheck", "racecheck", "synccheck", "initcheck"]
RE_ERR = re.compile(r"ERROR SUMMARY: (\d+) errors?")
RE_RACE = re.compile(r"RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)")
RE_CFG = re.compile(r"^(\S+): (\d+) of (\d+) random valid configs exact over (\d+) workloads")
RE_REF = re.compile(r"^ref_conv: (\d+) workload variants exact over (\d+) workloads")
RE_CHECK = re.compile(r"(\d+)%: Checks: (\d+), Failures: (\d+), Errors: (\d+)")
RE_AT = re.compile(r"^=+\s+at (?:0x[0-9a-fA-F]+ in )?([A-Za-z_][\w:<>~]*)")
# lines of the tool that say it did not (fully) run
RE_TOOLFAIL = re.compile(
    r"^=+ (Error:|Internal|.*Internal Sanitizer Error|.*[Nn]ot supported|.*[Uu]nsupported"
    r"|.*[Nn]o attachable process|.*[Dd]idn.t track|.*[Tt]imed? ?out)")


def read_meta(path):
    meta = {}
    with open(path, errors="replace") as f:
        for line in f:
            key, _, value = line.rstrip("\n").partition("=")
            meta[key] = value
    return meta


def case_of(name):
    """The test case of a job name: onnx-0/4 -> onnx."""
    return re.sub(r"-\d+/\d+$", "", name)


def parse_log(path):
    r = {"launches": 0, "by_kernel": collections.Counter(), "configs": {}, "ref": None,
         "err": None, "race": None, "api": 0, "exit_err": 0, "toolfail": [], "headers": [],
         "err_kernels": collections.Counter(), "check": None, "fails": [], "exact_calls": 0,
         "tail": []}
    try:
        with open(path, errors="replace") as f:
            lines = f.read().splitlines()
    except OSError as e:
        r["toolfail"].append("no log: %s" % e)
        return r
    r["tail"] = lines[-12:]
    for line in lines:
        if line.startswith("launch "):
            r["launches"] += 1
            r["by_kernel"][line.split()[1]] += 1
            continue
        if line.startswith("========="):
            m = RE_ERR.search(line)
            if m:
                r["err"] = (r["err"] or 0) + int(m.group(1))
                continue
            m = RE_RACE.search(line)
            if m:
                h, e, w = (int(x) for x in m.groups())
                old = r["race"] or (0, 0, 0)
                r["race"] = (old[0] + h, old[1] + e, old[2] + w)
                continue
            if "Program hit " in line:
                r["api"] += 1
            elif "Target application returned an error" in line:
                r["exit_err"] += 1
            if RE_TOOLFAIL.match(line):
                r["toolfail"].append(line)
            m = RE_AT.match(line)
            if m:
                r["err_kernels"][m.group(1)] += 1
            body = line.lstrip("=")
            if body.startswith(" ") and not body.startswith("  ") and not body.strip().startswith(
                    ("COMPUTE-SANITIZER", "ERROR SUMMARY", "RACECHECK SUMMARY", "LEAK SUMMARY")):
                if len(r["headers"]) < 8:
                    r["headers"].append(line)
            continue
        m = RE_CFG.match(line)
        if m:
            t = m.group(1)
            old = r["configs"].get(t, (0, 0, 0))
            r["configs"][t] = (old[0] + int(m.group(2)), old[1] + int(m.group(3)),
                               old[2] + int(m.group(4)))
            continue
        m = RE_REF.match(line)
        if m:
            r["ref"] = (int(m.group(1)), int(m.group(2)))
            continue
        m = RE_CHECK.search(line)
        if m:
            r["check"] = tuple(int(x) for x in m.groups())
            continue
        if line.startswith("FAIL ") or ":F:" in line or ":E:" in line:
            r["fails"].append(line)
            continue
        # test_gpu_dispatch and test_gpu_quant: one line per workload
        r["exact_calls"] += len(re.findall(r"\bexact\b", line))
    return r


def job_status(meta, r):
    """(status word, detail) of one job."""
    if "not_run" in meta:
        return "not run", meta["not_run"]
    rc = int(meta.get("rc", "-1"))
    has_summary = r["err"] is not None or r["race"] is not None
    if rc in (124, 137):
        return "TIMEOUT", "killed after %ss (exit %d)%s" % (
            meta.get("limit_s", "?"), rc, "" if has_summary else "; no summary: errors unknown")
    if rc == 77:
        return "SKIPPED", "the test found no GPU (exit 77)"
    if rc == 127 or (not has_summary and r["launches"] == 0 and not r["configs"]):
        why = r["toolfail"][0] if r["toolfail"] else (r["tail"][-1] if r["tail"] else "empty log")
        return "TOOL FAILED", "exit %d: %s" % (rc, why)
    if not has_summary:
        return "NO SUMMARY", "exit %d: the tool printed no summary (cut off?)" % rc
    kernel_err = kernel_errors(r)
    hazards = (r["race"][1] + r["race"][2]) if r["race"] else 0
    failed = r["fails"] or (r["check"] and (r["check"][2] or r["check"][3])) or rc not in (0, 86)
    if failed:
        return "TEST FAILED", "exit %d, %s" % (rc, r["fails"][0] if r["fails"] else "check failed")
    if kernel_err or hazards or r["api"]:
        return "ERRORS", "%d in kernels, %d API, %d hazards" % (kernel_err, r["api"], hazards)
    if r["toolfail"]:
        return "CHECK", r["toolfail"][0]
    return "clean", ""


def kernel_errors(r):
    return max(0, (r["err"] or 0) - r["api"] - r["exit_err"])


def fmt_wall(ms):
    return "%.0f s" % (ms / 1000.0)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: issue33_sanitize_summary.py LOG_DIR SUMMARY.md")
    logdir, out_md = sys.argv[1], sys.argv[2]
    env = {}
    if os.path.exists(os.path.join(logdir, "run.env")):
        env = read_meta(os.path.join(logdir, "run.env"))
    version = ""
    vpath = os.path.join(logdir, "cs-version.txt")
    if os.path.exists(vpath):
        with open(vpath, errors="replace") as f:
            version = " ".join(l.strip() for l in f if l.strip())
    jobs = []
    for path in sorted(glob.glob(os.path.join(logdir, "*.meta")),
                       key=lambda p: int(re.sub(r"\D", "", os.path.basename(p)) or 0)):
        meta = read_meta(path)
        r = parse_log(os.path.join(logdir, meta["log"])) if "log" in meta else parse_log("")
        status, detail = job_status(meta, r)
        jobs.append((meta, r, status, detail))

    md = []
    md.append("# compute-sanitizer over the templates (issue 33)\n")
    md.append("Commit `%s`, %s, GPU: %s, %s cores. %s Kernels compiled by NVRTC %s.\n" % (
        env.get("commit", "?"), env.get("start", "?"), env.get("gpu", "?"), env.get("cores", "?"),
        version, env.get("nvrtc", "?")))
    md.append("Command: `bash bench/issue33_sanitize.sh %s`; tools %s; %s jobs at a time, each "
              "under `timeout` (at most %s s), none started after %s s. Options of every tool: "
              "`%s`; memcheck `%s`; racecheck `%s`.\n" % (
                  env.get("bin_dir", "?"), env.get("tools", "?"), env.get("slots", "?"),
                  env.get("cap_s", "?"), env.get("budget_s", "?"), env.get("common", ""),
                  env.get("opts_memcheck", "").strip(), env.get("opts_racecheck", "").strip()))
    end = max([int(m.get("start_s", 0)) + int(m.get("wall_ms", 0)) / 1000.0 for m, _, _, _ in jobs
               if "wall_ms" in m] or [0])
    md.append("Wall time from the first job's start to the last one's end: %.0f s.\n" % end)

    # per tool
    md.append("## Per tool\n")
    head = ("| tool | jobs run | kernels launched | configs tried (exact) | errors in kernels | "
            "API errors | racecheck hazards (errors, warnings) | tool or test problems | "
            "wall (sum of jobs) |")
    md.append(head)
    md.append("|" + " --- |" * 9)
    short = []
    for tool in TOOLS:
        tj = [j for j in jobs if j[0].get("tool") == tool]
        if not tj:
            continue
        run = [j for j in tj if "not_run" not in j[0]]
        launches = sum(j[1]["launches"] for j in run)
        tried = sum(v[1] for j in run for v in j[1]["configs"].values())
        exact = sum(v[0] for j in run for v in j[1]["configs"].values())
        kerr = sum(kernel_errors(j[1]) for j in run)
        api = sum(j[1]["api"] for j in run)
        haz = [j[1]["race"] for j in run if j[1]["race"]]
        hz = "%d, %d" % (sum(h[1] for h in haz), sum(h[2] for h in haz)) if haz else "-"
        problems = [j for j in tj if j[2] not in ("clean", "ERRORS")]
        wall = sum(int(j[0].get("wall_ms", 0)) for j in run)
        md.append("| %s | %d of %d | %d | %d (%d) | %d | %d | %s | %d | %s |" % (
            tool, len(run), len(tj), launches, tried, exact, kerr, api,
            hz if tool == "racecheck" else "-", len(problems), fmt_wall(wall)))
        short.append((tool, "%d/%d" % (len(run), len(tj)), launches, "%d/%d" % (exact, tried), kerr,
                      api, hz if tool == "racecheck" else "-", len(problems), fmt_wall(wall)))
    md.append("")

    # per tool and case
    md.append("## Per tool and case\n")
    md.append("Kernels launched: the test's `launch` lines (templates: one per config; case ref: "
              "ref_conv and two ref_compare per workload variant). test_gpu_dispatch and "
              "test_gpu_quant launch pack/unpack and conv kernels per call through the library: "
              "their column counts calls that came out exact.\n")
    md.append("| tool | case | jobs (run) | kernels launched | configs tried (exact) / calls exact | "
              "workloads | errors in kernels | API errors | hazards (e, w) | wall (sum, longest) | "
              "status |")
    md.append("|" + " --- |" * 11)
    groups = collections.OrderedDict()
    for j in jobs:
        groups.setdefault((j[0].get("tool"), case_of(j[0].get("name", "?"))), []).append(j)
    for (tool, case), gj in sorted(groups.items(), key=lambda kv: (TOOLS.index(kv[0][0])
                                                                     if kv[0][0] in TOOLS else 9,
                                                                     kv[0][1])):
        run = [j for j in gj if "not_run" not in j[0]]
        launches = sum(j[1]["launches"] for j in run)
        tried = sum(v[1] for j in run for v in j[1]["configs"].values())
        exact = sum(v[0] for j in run for v in j[1]["configs"].values())
        wl = sum(v[2] for j in run for v in j[1]["configs"].values())
        if any(j[1]["ref"] for j in run):
            exact = tried = sum(j[1]["ref"][0] for j in run if j[1]["ref"])
            wl = sum(j[1]["ref"][1] for j in run if j[1]["ref"])
        calls = sum(j[1]["exact_calls"] for j in run)
        cfg = "%d (%d)" % (tried, exact) if tried or not calls else "%d calls" % calls
        kerr = sum(kernel_errors(j[1]) for j in run)
        api = sum(j[1]["api"] for j in run)
        haz = [j[1]["race"] for j in run if j[1]["race"]]
        hz = "%d, %d" % (sum(h[1] for h in haz), sum(h[2] for h in haz)) if haz else "-"
        walls = [int(j[0].get("wall_ms", 0)) for j in run]
        st = collections.Counter(j[2] for j in gj)
        md.append("| %s | %s | %d (%d) | %d | %s | %s | %d | %d | %s | %s, %s | %s |" % (
            tool, case, len(gj), len(run), launches, cfg, wl or "-", kerr, api, hz,
            fmt_wall(sum(walls)), fmt_wall(max(walls or [0])),
            ", ".join("%s %d" % kv for kv in sorted(st.items()))))
    md.append("")

    # per template
    md.append("## Per template: configs tried under each tool\n")
    per_t = collections.defaultdict(lambda: collections.Counter())
    cases_t = collections.defaultdict(set)
    for m, r, _, _ in jobs:
        for t, v in r["configs"].items():
            per_t[t][m.get("tool")] += v[1]
            cases_t[t].add(case_of(m.get("name", "?")))
    tools_here = [t for t in TOOLS if any(j[0].get("tool") == t for j in jobs)]
    md.append("| template | " + " | ".join(tools_here) + " | cases |")
    md.append("|" + " --- |" * (len(tools_here) + 2))
    for t in sorted(per_t):
        md.append("| %s | %s | %s |" % (t, " | ".join(str(per_t[t][x]) for x in tools_here),
                                        ", ".join(sorted(cases_t[t]))))
    md.append("")

    # per job
    md.append("## Jobs\n")
    md.append("| id | tool | job | environment | start | wall | limit | exit | launched | "
              "configs | errors (kernel, API, exit) | hazards | status |")
    md.append("|" + " --- |" * 13)
    for m, r, status, detail in jobs:
        tried = sum(v[1] for v in r["configs"].values())
        hz = "%d, %d" % r["race"][1:] if r["race"] else "-"
        errs = "-" if r["err"] is None else "%d (%d, %d, %d)" % (
            r["err"], kernel_errors(r), r["api"], r["exit_err"])
        md.append("| %s | %s | %s | `%s` | %s | %s | %s | %s | %d | %d | %s | %s | %s |" % (
            m.get("id"), m.get("tool"), m.get("name"), (m.get("env") or "-") + (
                " " + m["args"] if m.get("args") else ""), m.get("start_s", "-"),
            fmt_wall(int(m["wall_ms"])) if "wall_ms" in m else "-", m.get("limit_s", "-"),
            m.get("rc", "-"), r["launches"], tried, errs, hz,
            status + (": " + detail if detail and status != "clean" else "")))
    md.append("")

    bad = [j for j in jobs if j[2] != "clean"]
    md.append("## Jobs that are not clean\n")
    if not bad:
        md.append("None: every job ran to its tool's summary with 0 errors and 0 hazards.\n")
    for m, r, status, detail in bad:
        md.append("### %s %s %s: %s\n" % (m.get("id"), m.get("tool"), m.get("name"), status))
        md.append("%s\n" % detail)
        if r["err_kernels"]:
            md.append("Kernels named in the reports: %s\n" % ", ".join(
                "%s (%d)" % kv for kv in r["err_kernels"].most_common(8)))
        lines = list(dict.fromkeys(r["toolfail"][:4] + r["headers"][:8] + r["fails"][:4]))
        if not lines:
            lines = r["tail"]
        if lines:
            md.append("```\n" + "\n".join(l[:300] for l in lines) + "\n```\n")
    md.append("## Notes\n")
    md.append(
        "- Not run under a tool: test_runner, test_tune_gpu and test_sched_gpu. Their forked "
        "workers run planted faults on purpose (templates/fault_dp4a.cu: an illegal address, a "
        "hang, an oversized block, a corrupt cubin), whose kernel is named conv_dp4a like the "
        "real dp4a template's, so a kernel-name filter would drop the real one too; their API "
        "errors would count whatever the filter. The GPU reference they use (ref_conv, "
        "ref_compare) runs here in-process (case ref), with no planted fault.\n"
        "- One config per workload per tool (onnx cases: two), each tool with its own seed "
        "(CT_GT_SEED), so the tools try different configs; half of them as on 1 to 3 SMs "
        "(persistent loops over many tiles). synccheck and initcheck take complementary halves "
        "of the workloads (CT_GT_SHAPES).\n"
        "- The templates are compiled by NVRTC without -lineinfo: a report names the kernel and "
        "a SASS offset; the test's `launch` line before it in the job's log names the template, "
        "workload and config.\n"
        "- Version caveats (NVIDIA's release notes): memcheck checks TMA loads only from "
        "Compute Sanitizer 2026.2; racecheck tracks cp.async.bulk from global to shared memory "
        "from 2024.4; false racecheck hazards with mbarrier (fixed in 2025.4) and with "
        "warpgroup-level synchronisation on Hopper (fixed in 2026.1) are possible with older "
        "versions: a hazard in a wgmma template is to be read with the version above. initcheck "
        "may flag global reads of tensormap instructions it does not support (known "
        "limitation).\n")
    with open(out_md, "w") as f:
        f.write("\n".join(md) + "\n")

    print("%-10s %-8s %9s %13s %7s %5s %13s %8s %8s" % (
        "tool", "jobs", "launched", "exact/tried", "errors", "API", "hazards e,w", "problems",
        "wall"))
    for row in short:
        print("%-10s %-8s %9d %13s %7d %5d %13s %8d %8s" % row)
    for m, r, status, detail in bad:
        print("  %s %s %s: %s %s" % (m.get("id"), m.get("tool"), m.get("name"), status, detail[:160]))
    if not bad:
        print("  every job clean")


if __name__ == "__main__":
    main()
