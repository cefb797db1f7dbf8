# SPDX-License-Identifier: LGPL-2.1-or-later
"""How this folder was made, by the build of 7f33652 (the last before lines
were judged against the model file: learning section version 1, txlsink's
part 3, txlsessions' 4), from its checkout, built in build/:

    /usr/bin/python3 PATH/TO/make.py OUTDIR

A small byte model (tests/integration/checks.py's learn_input), then
txlmodel learn=true and txlsessions learn=true pipelines and `txl score
--learn`, each cut after its round and its window (11 bytes into line
WARMUP + 61), the snapshot kept (model.snap, sessions.snap, score.snap),
then continued by the same build on the rest (model-b.log,
sessions-b.log; score continues model-b.log): the scores of the lines the
continued run wrote in expected.json.  test_old_snapshots.py
continues them with this build."""
import os, shutil, subprocess, sys
ROOT = os.getcwd()
sys.path.insert(0, os.path.join(ROOT, 'tests', 'integration'))
from checks import learn_input  # noqa
TXL = os.path.join(ROOT, 'build', 'tools', 'txl')
ENV = dict(os.environ, GST_PLUGIN_PATH=os.path.join(ROOT, 'build', 'plugins'), TXL_NUM_THREADS='1')
WARMUP = 150
out = os.path.abspath(sys.argv[1])
os.makedirs(out, exist_ok=True)
tmp = os.path.join(out, 'work')
os.makedirs(tmp, exist_ok=True)


def launch(el, model, src, o, extra):
    return (['gst-launch-1.0', '-q', 'filesrc', 'location=' + src, 'blocksize=997', '!',
             'txltokenizer', 'model=' + model, '!'] + el.split() +
            ['learn=true', 'learn-warmup=%d' % WARMUP] + extra.split() +
            ['!', 'txlsink', 'location=' + o, 'append=true'])


def split(data, name):
    nl = [i + 1 for i, b in enumerate(data) if b == 10]
    cut = nl[WARMUP + 60] + 11
    a, b = os.path.join(tmp, name + '-a.log'), os.path.join(tmp, name + '-b.log')
    open(a, 'wb').write(data[:cut])
    open(b, 'wb').write(data[cut:])
    return a, b


def pipeline(name, el, sessions, bug, model=None):
    m, data, src = learn_input(TXL, tmp, bug, sessions=sessions)
    if model is None:
        model = os.path.join(out, 'model.gguf')
        shutil.copy(m, model)
    a, b = split(data, name)
    shutil.copy(b, os.path.join(out, name + '-b.log'))
    snap, o = os.path.join(tmp, name + '.snap'), os.path.join(tmp, name + '-old.jsonl')
    for f in (snap, o):
        if os.path.exists(f):
            os.remove(f)
    el = el % model
    subprocess.run(launch(el, model, a, o, 'snapshot-location=' + snap), env=ENV, check=True)
    shutil.copy(snap, os.path.join(out, name + '.snap'))
    before = open(o, 'rb').read().count(b'\n')
    subprocess.run(launch(el, model, b, o, 'snapshot-location=%s hold-at-eos=false' % snap), env=ENV,
                   check=True)
    keep(name, o, before)
    return model, data


expected = {}


def keep(name, path, before=0):
    """The scores of the lines the continued run wrote, after the first
    `before` records of path (line, tokens, bpb, worst, flag), as the older
    build printed them."""
    import json
    rows = [json.loads(l) for l in open(path)][before:]
    expected[name] = [[r['line'], r['tokens'], r['bpb'], r['worst'], r['flag']]
                      for r in rows if 'line' in r and 'session' not in r]


bug = 'kernel: BUG: unable to handle page fault at ffff8880deadbeef ' + 'x' * 40
model, data = pipeline('model', 'txlmodel model=%s', 0, bug)
pipeline('sessions', 'txlsessions model=%s session-key=sess=[0-9]+', 6,
         'kernel: sess=3 BUG: unable to handle page fault at ffff8880deadbeef ' + 'x' * 40, model)
a, b = split(data, 'score')
snap = os.path.join(out, 'score.snap')
args = [TXL, 'score', '-m', model, '--learn', '--learn-warmup', str(WARMUP)]
subprocess.run(args + ['--save-snapshot', snap], stdin=open(a, 'rb'), stdout=subprocess.DEVNULL,
               env=ENV, check=True)
with open(os.path.join(tmp, 'score-old.jsonl'), 'wb') as o:
    subprocess.run(args + ['--load-snapshot', snap], stdin=open(b, 'rb'), stdout=o, env=ENV, check=True)
keep('score', os.path.join(tmp, 'score-old.jsonl'))
import json
with open(os.path.join(out, 'expected.json'), 'w') as f:
    json.dump(expected, f, separators=(',', ':'))
    f.write('\n')
shutil.rmtree(tmp)
