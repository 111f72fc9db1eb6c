#!/usr/bin/env python3
"""dw_ab.py OLD NEW TUNINGS OUT: the same tuned configs timed on two builds.

OLD and NEW are config_run binaries (bench/build_old_config_run.sh builds
one against an earlier commit's libraries); TUNINGS is a results JSON with
"tunings": {name: [{name, key, template, best_config}, ...]} (as
bench/results/h200-issue35/tune-397893f.json). Each layer's config runs on
both (a conv3d config without "depths" gets depths 1 on NEW, the knob's
value before it existed), 400 launches in a graph (config_run's timing), at
buffer offsets 0 and 32 MiB (CT_ALLOC_PAD), 2 rounds; a side's figure is
the minimum. Two requantizations, one CT_QUANT_FILE each: "asis", config_run's
values for the key, and "relu", the same with the clamp set to [zero point,
127] (the benchmark's int8 column: the depthwise family's borrow-free form).
Prints a line a layer and writes the rows to OUT. Runs on the GPU machine.
"""
import json, os, re, subprocess, sys

if len(sys.argv) != 5:
    sys.exit(__doc__.strip().split('\n')[0])
old, new, tunings, outp = sys.argv[1:5]
doc = json.load(open(tunings))
qdir = '/tmp/dw_ab_q'
os.makedirs(qdir, exist_ok=True)


def run(binary, tpl, key, cfg, qf, pad):
    env = dict(os.environ, CT_QUANT_FILE=qf, CT_ALLOC_PAD=str(pad))
    p = subprocess.run([binary, tpl, key, json.dumps(cfg), '400'], env=env, capture_output=True,
                       text=True, timeout=120)
    m = re.search(r' ([0-9.]+) us per launch', p.stdout)
    if not m:
        print('FAIL', binary, key, p.stderr.strip()[:300], flush=True)
        return None
    return float(m.group(1))


def relu_file(src, dst):
    """src's values with lo = the output zero point and hi = 127"""
    lines = open(src).read().split('\n')
    f = lines[0].split()
    f[f.index('lo') + 1] = f[f.index('ozp') + 1]
    f[f.index('hi') + 1] = '127'
    lines[0] = ' '.join(f)
    open(dst, 'w').write('\n'.join(lines))


def pct(a, b):
    return 100 * (a / b - 1) if a and b else float('nan')


rows = []
for set_name, layers in doc['tunings'].items():
    for i, w in enumerate(layers):
        key, tpl, cfg = w['key'], w['template'], dict(w['best_config'])
        ncfg = dict(cfg)
        if tpl.startswith('conv3d') and 'depths' not in ncfg:
            ncfg['depths'] = 1
        qa = '%s/%s-%d.q' % (qdir, set_name, i)
        r = {'name': w['name'], 'key': key, 'config': cfg}
        for var in ['asis', 'relu']:
            qf = qa if var == 'asis' else qa + '.relu'
            if var == 'relu':
                relu_file(qa, qf)  # qa exists: asis ran first and config_run wrote it
            for side, b, c in [('old', old, cfg), ('new', new, ncfg)]:
                ts = [v for rnd in range(2) for pad in [0, 32 << 20]
                      for v in [run(b, tpl, key, c, qf, pad)] if v is not None]
                r['%s_%s' % (var, side)] = min(ts) if ts else None
            if var == 'asis':
                r['asis_q'] = open(qa).read().split('\n')[0]
        print('%-34s asis %7.2f %7.2f (%+5.1f%%)  relu %7.2f %7.2f (%+5.1f%%)' % (
            w['name'], r['asis_old'] or -1, r['asis_new'] or -1, pct(r['asis_new'], r['asis_old']),
            r['relu_old'] or -1, r['relu_new'] or -1, pct(r['relu_new'], r['relu_old'])), flush=True)
        rows.append(r)
json.dump(rows, open(outp, 'w'), indent=1)
