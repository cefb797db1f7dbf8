# SPDX-License-Identifier: LGPL-2.1-or-later
"""The code stays readable in pieces (issue 13, docs/layout.md): no source
file over 1,000 lines, no C or Python function over 150.

C functions are found by this project's style (GNU: the body's opening and
closing braces alone at the start of a line); Python's by its syntax tree.
The detectors are first run on made-up sources, so that a detector that
finds nothing fails here rather than passing the tree."""
import ast
import os
import sys

from checks import check, tally

ROOT = os.environ.get('TXL_SOURCE_ROOT',
                      os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
FOLDERS = ('lib', 'include', 'plugins', 'tools', 'tests', 'fuzz')
SOURCE = ('.c', '.h', '.py', '.sh', '.cjs')
MAX_FILE_LINES = 1000
MAX_FUNCTION_LINES = 150


def sources():
    """Every source file below FOLDERS (the fuzzers' seed folders, corpus-*,
    hold inputs, not sources)."""
    for top in FOLDERS:
        for d, subdirs, files in os.walk(os.path.join(ROOT, top)):
            subdirs[:] = sorted(s for s in subdirs if s != '__pycache__'
                                and not s.startswith(('build', 'corpus-')))
            for f in sorted(files):
                if f.endswith(SOURCE):
                    yield os.path.join(d, f)


def c_functions(text):
    """(first line, lines) of each function body in C text."""
    start = None
    for i, line in enumerate(text.split('\n'), 1):
        if line.startswith('{'):
            start = i
        elif line.startswith('}') and start is not None:
            yield start, i - start + 1
            start = None


def py_functions(text):
    """(first line, lines) of each function in Python text."""
    for n in ast.walk(ast.parse(text)):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield n.lineno, n.end_lineno - n.lineno + 1


def functions(path, text):
    if path.endswith(('.c', '.h')):
        return c_functions(text)
    if path.endswith('.py'):
        return py_functions(text)
    return []


def main():
    # the detectors on made-up sources
    long_c = 'static int\nf(void)\n{\n' + '  x++;\n' * 160 + '}\n'
    table = 'static const int t[] = {\n  1,\n};\n'
    check('C: a 160-line function is found, a table is not',
          [n for _, n in c_functions(long_c + table)] == [162])
    long_py = 'def f():\n' + '    x = 1\n' * 160 + '\n\ndef g():\n    pass\n'
    check('Python: a 161-line function is found beside a short one',
          sorted(n for _, n in py_functions(long_py)) == [2, 161])

    files = list(sources())
    check('the tree has sources (%d)' % len(files), len(files) > 100, ROOT)
    too_long, too_big = [], []
    for path in files:
        with open(path, encoding='utf-8', errors='replace') as f:
            text = f.read()
        rel = os.path.relpath(path, ROOT)
        n = text.count('\n')
        if n > MAX_FILE_LINES:
            too_big.append('%s: %d lines' % (rel, n))
        too_long += ['%s:%d: %d lines' % (rel, at, k)
                     for at, k in functions(path, text) if k > MAX_FUNCTION_LINES]
    check('no source file over %d lines' % MAX_FILE_LINES, not too_big, too_big)
    check('no function over %d lines' % MAX_FUNCTION_LINES, not too_long, too_long)
    return tally()


if __name__ == '__main__':
    sys.exit(1 if main() else 0)
