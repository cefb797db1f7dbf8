# SPDX-License-Identifier: LGPL-2.1-or-later
"""The public API is what include/txl.h marks TXL_API, and exactly that is
what libtxl.so exports (docs/api.md); the plugin exports only its entry
points; tools and plugins reach libtxl's internals only through one header
per layer (docs/layout.md)."""
import glob
import os
import re
import shutil
import subprocess
import sys

from checks import check, tally

ROOT = os.environ.get('TXL_SOURCE_ROOT',
                      os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
LIBTXL = os.environ.get('LIBTXL', '')
PLUGIN = os.environ.get('TXL_PLUGIN', '')


def header_functions():
    """(marked, unmarked): function names declared in include/txl.h with and
    without TXL_API.  Declarations start at column 0; typedefs do not count."""
    marked, unmarked = set(), set()
    decl = re.compile(r'^(TXL_API )?[A-Za-z_][A-Za-z0-9_ ]*[ *](txl_[a-z0-9_]+)\(')
    with open(os.path.join(ROOT, 'include', 'txl.h')) as f:
        for line in f:
            m = decl.match(line)
            if m and not line.startswith('typedef'):
                (marked if m.group(1) else unmarked).add(m.group(2))
    return marked, unmarked


def exported(path):
    out = subprocess.run(['nm', '-D', '--defined-only', path], capture_output=True,
                         text=True, check=True).stdout
    return {f[2] for f in (l.split() for l in out.splitlines()) if len(f) == 3}


def check_exports():
    marked, unmarked = header_functions()
    check('txl.h declares functions', len(marked) > 50, str(len(marked)))
    check('every txl.h function is TXL_API', not unmarked, ' '.join(sorted(unmarked)))
    got = exported(LIBTXL)
    print('libtxl.so exports %d symbols, txl.h marks %d' % (len(got), len(marked)))
    check('libtxl.so exports every TXL_API function', marked <= got,
          ' '.join(sorted(marked - got)))
    check('libtxl.so exports nothing else', got <= marked, ' '.join(sorted(got - marked)))
    if PLUGIN:
        plug = exported(PLUGIN)
        check('the plugin exports only its entry points',
              plug == {'gst_plugin_txl_get_desc', 'gst_plugin_txl_register'},
              ' '.join(sorted(plug)))


def check_includes():
    """A quoted include in tools/ or plugins/ names the public header, a
    layer's internal header (lib/<layer>/txl_<layer>.h) or a file beside
    the including one."""
    layers = {os.path.basename(p) for p in glob.glob(os.path.join(ROOT, 'lib', '*', 'txl_*.h'))}
    check('one internal header per layer', len(layers) >= 8, ' '.join(sorted(layers)))
    bad = []
    for d in ('tools', 'plugins'):
        for path in glob.glob(os.path.join(ROOT, d, '**', '*.[ch]'), recursive=True):
            with open(path) as f:
                for name in re.findall(r'^#include "([^"]+)"', f.read(), re.M):
                    beside = os.path.exists(os.path.join(os.path.dirname(path), name))
                    if name != 'txl.h' and name not in layers and not beside:
                        bad.append('%s: %s' % (os.path.relpath(path, ROOT), name))
    check('tools and plugins include only txl.h and txl_<layer>.h from lib', not bad,
          '; '.join(bad))


def main():
    if '.so' not in os.path.basename(LIBTXL) or shutil.which('nm') is None:
        print('SKIP: needs LIBTXL (shared) and nm (binutils)')
        sys.exit(77)
    check_exports()
    check_includes()
    sys.exit(1 if tally() else 0)


if __name__ == '__main__':
    main()
