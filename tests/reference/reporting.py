# SPDX-License-Identifier: LGPL-2.1-or-later
"""What the reference tests share: one PASS or FAIL line per comparison,
its detail always shown (the differences are worth reading when they
pass too), and the tally that decides the exit status."""

RESULTS = []


def report(name, ok, detail='', width=0):
    """Records ok; width pads the name so that the details line up."""
    RESULTS.append(bool(ok))
    print('%s %-*s %s' % ('PASS' if ok else 'FAIL', width, name, detail), flush=True)


def tally():
    """Prints how many passed and failed; returns the number failed."""
    failed = RESULTS.count(False)
    print('%d passed, %d failed' % (len(RESULTS) - failed, failed))
    return failed
