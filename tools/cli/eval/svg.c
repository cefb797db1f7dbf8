/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* scores.svg (svg.h). */
#include "svg.h"

#include <math.h>
#include <string.h>

/* Histograms of normal and anomalous test session scores, on a log count
 * axis, with the threshold. */
gboolean
eval_write_svg(const char *path, const double *sc, const int *lab, gsize n,
          double thr, const char *title, GError **error)
{
  double lo = INFINITY, hi = -INFINITY;
  for (gsize i = 0; i < n; i++) {
    lo = MIN(lo, sc[i]);
    hi = MAX(hi, sc[i]);
  }
  if (isfinite(thr)) {
    lo = MIN(lo, thr);
    hi = MAX(hi, thr);
  }
  if (!(hi > lo)) {
    lo -= 1;
    hi += 1;
  }
  const int B = 60;
  int cnt[2][60] = { { 0 } };
  int tot[2] = { 0, 0 };
  for (gsize i = 0; i < n; i++) {
    int b = (int)((sc[i] - lo) / (hi - lo) * B);
    cnt[lab[i]][CLAMP(b, 0, B - 1)]++;
    tot[lab[i]]++;
  }
  int maxc = 1;
  for (int k = 0; k < 2; k++)
    for (int b = 0; b < B; b++)
      maxc = MAX(maxc, cnt[k][b]);
  const double W = 720, H = 360, L = 60, R = 20, T = 40, Bm = 50;
  const double pw = W - L - R, ph = H - T - Bm, ymax = log10(maxc + 1.0);
  GString *s = g_string_new(NULL);
  g_string_append_printf(s,
    "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" "
    "font-family=\"sans-serif\" font-size=\"12\">\n"
    "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
    "<text x=\"%g\" y=\"20\" font-size=\"14\">", W, H, L);
  g_autofree char *esc = g_markup_escape_text(title, -1);
  g_string_append(s, esc);
  g_string_append(s, "</text>\n");
  const char *col[2] = { "#1f77b4", "#d62728" };
  for (int k = 0; k < 2; k++)
    for (int b = 0; b < B; b++) {
      if (!cnt[k][b])
        continue;
      double h = log10(cnt[k][b] + 1.0) / ymax * ph;
      g_string_append_printf(s,
        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
        "fill=\"%s\" fill-opacity=\"0.55\"/>\n", L + b * pw / B,
        T + ph - h, pw / B, h, col[k]);
    }
  g_string_append_printf(s,
    "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"black\"/>\n"
    "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"black\"/>\n",
    L, T + ph, L + pw, T + ph, L, T, L, T + ph);
  for (int t = 0; t <= 5; t++) {
    double v = lo + (hi - lo) * t / 5, x = L + pw * t / 5;
    g_string_append_printf(s, "<text x=\"%.1f\" y=\"%g\" text-anchor=\"middle\">%.3g</text>\n",
                           x, T + ph + 16, v);
  }
  for (int c = 1; c <= maxc; c *= 10) {
    double y = T + ph - log10(c + 1.0) / ymax * ph;
    g_string_append_printf(s, "<text x=\"%g\" y=\"%.1f\" text-anchor=\"end\">%d</text>\n",
                           L - 4, y + 4, c);
  }
  g_string_append_printf(s,
    "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">session score (nats)</text>\n"
    "<text x=\"14\" y=\"%g\" transform=\"rotate(-90 14 %g)\" text-anchor=\"middle\">sessions (log scale)</text>\n",
    L + pw / 2, H - 10, T + ph / 2, T + ph / 2);
  if (isfinite(thr)) {
    double x = L + (thr - lo) / (hi - lo) * pw;
    g_string_append_printf(s,
      "<line x1=\"%.1f\" y1=\"%g\" x2=\"%.1f\" y2=\"%g\" stroke=\"black\" "
      "stroke-dasharray=\"5,4\"/>\n<text x=\"%.1f\" y=\"%g\">threshold %.3g</text>\n",
      x, T, x, T + ph, x + 4, T + 12, thr);
  }
  g_string_append_printf(s,
    "<rect x=\"%g\" y=\"%g\" width=\"12\" height=\"12\" fill=\"%s\" fill-opacity=\"0.55\"/>"
    "<text x=\"%g\" y=\"%g\">normal (%d)</text>\n"
    "<rect x=\"%g\" y=\"%g\" width=\"12\" height=\"12\" fill=\"%s\" fill-opacity=\"0.55\"/>"
    "<text x=\"%g\" y=\"%g\">anomalous (%d)</text>\n</svg>\n",
    L + pw - 150, T, col[0], L + pw - 134, T + 10, tot[0],
    L + pw - 150, T + 18, col[1], L + pw - 134, T + 28, tot[1]);
  gboolean ok = g_file_set_contents(path, s->str, s->len, error);
  g_string_free(s, TRUE);
  return ok;
}
