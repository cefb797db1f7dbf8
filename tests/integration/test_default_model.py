# SPDX-License-Identifier: LGPL-2.1-or-later
"""Without a model named, txl and the elements use the bundled model
(txl_default_model_path, include/txl.h): `txl score FILE` prints what
`txl score -m models/default.gguf FILE` prints, byte for byte, and so does
`txltokenizer ! txlmodel ! txlsink` without model=; TXL_MODEL overrides it,
and one naming a missing file is an error that names it (not a silent
fallback); `meson install` puts the bundled model where libtxl looks for
it."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, '..', '..')
sys.path.insert(0, HERE)
from checks import check, finish  # noqa: E402

TXL = os.environ.get('TXL_BIN', os.path.join(ROOT, 'build', 'tools', 'txl'))
PLUGINS = os.environ.get('TXL_PLUGIN_DIR', os.path.join(ROOT, 'build', 'plugins'))
BUILD = os.environ.get('TXL_BUILD_ROOT', os.path.join(ROOT, 'build'))
LIBTXL = os.environ.get('LIBTXL', '')
MODEL = os.path.abspath(os.path.join(ROOT, 'models', 'default.gguf'))
ENV = {k: v for k, v in os.environ.items() if k != 'TXL_MODEL'}
ENV.update(GST_PLUGIN_PATH=PLUGINS, TXL_NUM_THREADS='1')


def run(args, env=None):
    p = subprocess.run(args, capture_output=True, env=env or ENV, timeout=300)
    return p.returncode, p.stdout, p.stderr.decode(errors='replace')


def pipeline(src, out, model):
    m = ['model=' + model] if model else []
    return (['gst-launch-1.0', '-q', 'filesrc', 'location=' + src, '!', 'txltokenizer'] + m +
            ['!', 'txlmodel'] + m + ['!', 'txlsink', 'location=' + out])


def main():
    tmp = tempfile.mkdtemp(prefix='txl-default-')
    src = os.path.join(tmp, 'in.log')
    with open(src, 'w') as f:
        f.writelines('Nov 27 22:%02d:%02d host sshd[%d]: Accepted publickey for u%d from 10.0.0.%d port %d\n'
                     % (i // 60, i % 60, 400 + i, i % 4, i % 200, 40000 + i) for i in range(120))
    rc, plain, err = run([TXL, 'score', src])
    rc2, named, err2 = run([TXL, 'score', '-m', MODEL, src])
    check('txl score without -m: the bundled model, byte for byte', rc == rc2 == 0 and plain == named
          and plain.count(b'\n') == 120, err + err2)
    copy = os.path.join(tmp, 'copy.gguf')
    shutil.copy(MODEL, copy)
    rc, out, err = run([TXL, 'score', src], dict(ENV, TXL_MODEL=copy))
    check('TXL_MODEL names the model used without -m', rc == 0 and out == named, err)
    missing = os.path.join(tmp, 'missing.gguf')
    rc, out, err = run([TXL, 'score', src], dict(ENV, TXL_MODEL=missing))
    check('TXL_MODEL naming a missing file: an error naming it, no fallback', rc != 0 and missing in err
          and not out, err)
    rc, out, err = run([TXL, 'score', '-m', MODEL, src], dict(ENV, TXL_MODEL=missing))
    check('-m wins over TXL_MODEL', rc == 0 and out == named, err)

    a, b = os.path.join(tmp, 'a.jsonl'), os.path.join(tmp, 'b.jsonl')
    rc, _, err = run(pipeline(src, a, None))
    rc2, _, err2 = run(pipeline(src, b, MODEL))
    got = open(a, 'rb').read() if rc == 0 else b''
    check('txltokenizer ! txlmodel without model=: the bundled model, byte for byte',
          rc == rc2 == 0 and got == open(b, 'rb').read() and got.count(b'\n') == 120, err + err2)
    rc, _, err = run(pipeline(src, a, None), dict(ENV, TXL_MODEL=missing))
    check('elements: TXL_MODEL naming a missing file is an error naming it', rc != 0 and missing in err, err)

    # where meson installs the bundled model is where libtxl looks first
    p = subprocess.run(['meson', 'introspect', '--installed', BUILD], capture_output=True, text=True)
    dest = [d for s, d in (json.loads(p.stdout).items() if p.returncode == 0 else [])
            if os.path.abspath(s) == MODEL]
    lib = open(LIBTXL, 'rb').read() if LIBTXL else b''
    check('meson install puts the bundled model where libtxl looks for it',
          len(dest) == 1 and dest[0].endswith('/txl/default.gguf') and dest[0].encode() + b'\0' in lib,
          (dest, p.stderr[-300:]))
    return finish(tmp)


if __name__ == '__main__':
    sys.exit(main())
