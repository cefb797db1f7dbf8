/* The development-split choice of `txl eval --margin dev`.  The factor
 * between the highest normal validation score and a good threshold is a
 * property of the log (how far healthy test sessions drift from complete
 * validation ones, e.g. cut off by the end of the recording), so it is
 * measured where labels may be read: on a split of the training part
 * alone, with the same protocol.  No list of candidates: every threshold
 * is tried, and the middle of the best plateau is taken, so that the
 * choice does not sit on the edge where one more session flips it. */
#include "eval_dev.h"
#include "txl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  double v;
  int label;
} Pair;

static int
cmp_pair(const void *a, const void *b)
{
  const Pair *x = a, *y = b;
  return x->v < y->v ? -1 : x->v > y->v;
}

static int
cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double
eval_median(double *v, gsize n)
{
  if (n == 0)
    return NAN;
  qsort(v, n, sizeof(double), cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

gboolean
eval_dev_read(const char *path, GArray *scores, GArray *labels, double *vmax,
              double *vmedian, gboolean trim, GError **error)
{
  g_autofree char *text = NULL;
  if (!g_file_get_contents(path, &text, NULL, error))
    return FALSE;
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  g_autoptr(GArray) val = g_array_new(FALSE, FALSE, sizeof(double));
  *vmax = -INFINITY;
  for (int i = 1; lines[0] && lines[i]; i++) {
    if (!*lines[i])
      continue;
    g_auto(GStrv) f = g_strsplit(lines[i], ",", -1);
    guint n = g_strv_length(f);
    if (n < 11) {
      g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                  "%s line %d: expected 11 columns", path, i + 1);
      return FALSE;
    }
    /* key,label,split,lines,score,...: a key may hold commas, the rest
     * cannot, so count from the end */
    const char *label = f[n - 10], *split = f[n - 9], *score = f[n - 7];
    if (!*score)
      continue;
    double v = g_ascii_strtod(score, NULL);
    if (!strcmp(split, "calibration")) {
      *vmax = MAX(*vmax, v);
      g_array_append_val(val, v);
    } else if (!strcmp(split, "test")) {
      int l = atoi(label);
      g_array_append_val(scores, v);
      g_array_append_val(labels, l);
    }
  }
  /* as txl eval's threshold sees them: without the sessions above 3 x the
   * median when trim (eval_median sorts) */
  gsize nv = val->len;
  double *vv = (double *)val->data;
  double med = eval_median(vv, nv);
  if (trim)
    while (nv > 1 && vv[nv - 1] > 3.0 * med)
      nv--;
  if (nv > 0)
    *vmax = vv[nv - 1];
  *vmedian = eval_median(vv, nv);
  if (!isfinite(*vmax) || *vmax <= 0 || !(*vmedian > 0) || scores->len == 0) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                "%s: the development split has no scored validation or test "
                "sessions", path);
    return FALSE;
  }
  return TRUE;
}

gboolean
eval_dev_choose(const double *scores, const int *labels, gsize n,
                double anchor, EvalDevChoice *out, GError **error)
{
  memset(out, 0, sizeof *out);
  out->anchor = anchor;
  Pair *p = g_new(Pair, n);
  gint64 anom = 0;
  for (gsize i = 0; i < n; i++) {
    p[i].v = scores[i];
    p[i].label = labels[i] == 1;
    anom += p[i].label;
  }
  out->n = (gint64)n;
  out->n_anom = anom;
  if (anom == 0 || !(anchor > 0)) {
    g_free(p);
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                "the development split has %s: no threshold can be chosen "
                "on it", anom ? "no validation score above 0"
                              : "no anomalous test session");
    return FALSE;
  }
  qsort(p, n, sizeof(Pair), cmp_pair);
  /* gap k lies below the k-th distinct score u_k (k = 0..m-1, u sorted):
   * a threshold in [u_{k-1}, u_k) flags every session from u_k up */
  GArray *u = g_array_new(FALSE, FALSE, sizeof(double));
  GArray *f1 = g_array_new(FALSE, FALSE, sizeof(double));
  gint64 tp = anom, fp = (gint64)n - anom; /* flagged from p[i] up */
  for (gsize i = 0; i < n;) {
    double f = 2.0 * tp / (2.0 * tp + fp + (anom - tp));
    g_array_append_val(u, p[i].v);
    g_array_append_val(f1, f);
    double v = p[i].v;
    for (; i < n && p[i].v == v; i++) {
      if (p[i].label)
        tp--;
      else
        fp--;
    }
  }
  guint m = u->len;
  double best = 0;
  for (guint k = 0; k < m; k++)
    best = MAX(best, g_array_index(f1, double, k));
  /* the widest run of best gaps, by ratio of its ends */
  double best_w = -1;
  for (guint k = 0; k < m;) {
    if (fabs(g_array_index(f1, double, k) - best) > 1e-12) {
      k++;
      continue;
    }
    guint a = k;
    while (k < m && fabs(g_array_index(f1, double, k) - best) <= 1e-12)
      k++;
    guint b = k - 1; /* gaps a..b */
    double lo = a > 0 ? g_array_index(u, double, a - 1) : 0.0;
    double hi = g_array_index(u, double, b);
    double w = lo > 0 ? log(hi / lo) : INFINITY;
    if (w > best_w) {
      best_w = w;
      out->lo = lo;
      out->hi = hi;
    }
  }
  out->f1 = best;
  out->threshold = out->lo > 0 ? sqrt(out->lo * out->hi) : 0.5 * out->hi;
  out->factor = out->threshold / anchor;
  for (gsize i = 0; i < n; i++)
    if (p[i].v > out->threshold) {
      out->tp += p[i].label;
      out->fp += !p[i].label;
    }
  g_array_unref(u);
  g_array_unref(f1);
  g_free(p);
  return TRUE;
}
