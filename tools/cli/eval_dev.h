/* `txl eval --margin dev`: the threshold factor chosen on a development
 * split of the training part alone (docs/anomaly.md). */
#ifndef TXL_TOOLS_EVAL_DEV_H
#define TXL_TOOLS_EVAL_DEV_H

#include <glib.h>

typedef struct {
  double vmax;       /* highest development validation score */
  double vmedian;    /* their median */
  double anchor;     /* the one the factor divides by (max or median) */
  double lo, hi;     /* the chosen plateau: flagged = score > t, t in [lo, hi) */
  double threshold;  /* its geometric middle */
  double factor;     /* threshold / anchor */
  double f1;         /* the development F1 there */
  gint64 n, n_anom, tp, fp;
} EvalDevChoice;

/* From a development run's sessions.csv: its test sessions' scores and
 * labels, and the highest and the median validation score (with trim,
 * of those at most 3 x the median of all). */
gboolean eval_dev_read(const char *sessions_csv, GArray *scores,
                       GArray *labels, double *vmax, double *vmedian,
                       gboolean trim, GError **error);
/* The median of v (sorted in place); NAN when n is 0. */
double eval_median(double *v, gsize n);
/* The threshold with the highest F1 on the development test sessions,
 * taken in the middle (geometric) of the widest run of such thresholds,
 * as a factor of anchor (a statistic of the development validation
 * scores). */
gboolean eval_dev_choose(const double *scores, const int *labels, gsize n,
                         double anchor, EvalDevChoice *out, GError **error);

#endif
