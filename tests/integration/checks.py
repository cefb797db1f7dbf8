# SPDX-License-Identifier: LGPL-2.1-or-later
"""What the integration tests share: one PASS or FAIL line per check (the
detail only when it fails) and the tally that decides the exit status."""

results = []


def check(name, cond, detail=''):
    """cond, after printing its line (flushed: long tests show progress)."""
    results.append(bool(cond))
    print(('PASS ' if cond else 'FAIL ') + name + ('' if cond else '  ' + str(detail)),
          flush=True)
    return cond


def tally():
    """Prints how many checks passed and failed; returns the number failed."""
    failed = results.count(False)
    print('%d passed, %d failed' % (len(results) - failed, failed))
    return failed
