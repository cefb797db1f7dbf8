# SPDX-License-Identifier: LGPL-2.1-or-later
"""Loss curve of a `txl train` log as an SVG (standard library only).

    /usr/bin/python3 tools/plot_loss.py TRAIN.log OUT.svg [--title T] [--target Y]

Plots the smoothed training loss ("step N/M loss L" lines) and the
validation loss ("validation step N: X nats/token"), with an optional
horizontal target line."""
import argparse
import re


def parse(path):
    train, val = [], []
    for line in open(path, encoding='utf-8', errors='replace'):
        m = re.search(r'step (\d+)/\d+\s+loss ([0-9.]+)', line)
        if m:
            train.append((int(m.group(1)), float(m.group(2))))
        m = re.search(r'validation step (\d+): ([0-9.]+) nats/token', line)
        if m:
            val.append((int(m.group(1)), float(m.group(2))))
    return train, val


def svg(train, val, title, target):
    W, H, L, R, T, B = 720, 420, 60, 20, 40, 50
    pts = train + val + ([(0, target)] if target else [])
    xmax = max(p[0] for p in pts) or 1
    ylo = min(p[1] for p in pts)
    yhi = max(p[1] for p in pts)
    ylo, yhi = max(0.0, ylo - 0.1), yhi + 0.1

    def X(s):
        return L + (W - L - R) * s / xmax

    def Y(v):
        return T + (H - T - B) * (yhi - v) / (yhi - ylo)

    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="12">' % (W, H),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="22" font-size="15">%s</text>' % (L, title)]
    for i in range(6):
        v = ylo + (yhi - ylo) * i / 5
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>' % (L, W - R, Y(v), Y(v)))
        out.append('<text x="%d" y="%.1f" text-anchor="end">%.2f</text>' % (L - 6, Y(v) + 4, v))
    for i in range(6):
        s = xmax * i / 5
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%d</text>' % (X(s), H - B + 18, s))
    out.append('<text x="%d" y="%d" text-anchor="middle">step</text>' % ((L + W - R) // 2, H - 10))
    out.append('<text x="14" y="%d" transform="rotate(-90 14 %d)" text-anchor="middle">'
               'nats / token</text>' % ((T + H - B) // 2, (T + H - B) // 2))
    if target:
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#c00" stroke-dasharray="6 4"/>'
                   % (L, W - R, Y(target), Y(target)))
        out.append('<text x="%d" y="%.1f" fill="#c00" text-anchor="end">target %.2f</text>'
                   % (W - R, Y(target) - 5, target))
    for series, colour, name in ((train, '#1f77b4', 'training (smoothed)'),
                                 (val, '#ff7f0e', 'validation')):
        if series:
            out.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>'
                       % (colour, ' '.join('%.1f,%.1f' % (X(s), Y(v)) for s, v in series)))
            for s, v in (series if colour == '#ff7f0e' else []):
                out.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' % (X(s), Y(v), colour))
    out.append('<text x="%d" y="%d" fill="#1f77b4">training (smoothed)</text>' % (W - 250, T + 16))
    out.append('<text x="%d" y="%d" fill="#ff7f0e">validation</text>' % (W - 250, T + 32))
    out.append('</svg>')
    return '\n'.join(out) + '\n'


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('log')
    ap.add_argument('out')
    ap.add_argument('--title', default='txl train')
    ap.add_argument('--target', type=float)
    a = ap.parse_args()
    train, val = parse(a.log)
    if not train and not val:
        raise SystemExit('no loss lines in ' + a.log)
    with open(a.out, 'w') as f:
        f.write(svg(train, val, a.title, a.target))


if __name__ == '__main__':
    main()
