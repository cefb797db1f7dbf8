/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Reading txl eval's log into sessions, and the split (eval.h).
 *
 * Sessions are the unit of the split, ordered by their first line: the
 * first --train-fraction of them is the training part, whose normal
 * sessions (the only labels ever read for it) train the model and, the
 * last --calib-fraction of them, set the threshold; the rest is the test
 * part, whose labels are read only to measure. */
#include "eval.h"
#include "txl_formats.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

const char *const eval_split_names[N_SPLIT] = { "train", "calibration",
                                                "test", "dropped",
                                                "unlabelled", "trimmed" };

void
eval_init(Eval *ev)
{
  memset(ev, 0, sizeof *ev);
  ev->sess = g_ptr_array_new();
  ev->by_key = g_hash_table_new(g_str_hash, g_str_equal);
  ev->push_line = g_array_new(FALSE, FALSE, sizeof(gint64));
}

void
eval_clear(Eval *ev)
{
  for (guint k = 0; k < ev->sess->len; k++) {
    EvalSession *s = ev->sess->pdata[k];
    txl_free_each(g_free, s->key, s);
  }
  g_ptr_array_free(ev->sess, TRUE);
  g_hash_table_destroy(ev->by_key);
  g_array_free(ev->push_line, TRUE);
  txl_free_each(g_free, ev->line_ptr, ev->line_len, ev->line_sess, ev->l_mean,
                ev->l_sum, ev->l_worst, ev->l_max, ev->l_tok);
}

gboolean
eval_line_in(const Eval *ev, gint64 i, int split)
{
  gint64 si = ev->line_sess[i];
  return si >= 0 && ((EvalSession *)ev->sess->pdata[si])->split == split;
}

gboolean
eval_read_sessions(Eval *ev, const char *text, gsize text_len, GRegex *re,
                   int key_group, GHashTable *labels, const char *log_name,
                   GError **error)
{
  gint64 cap = 1024;
  ev->line_ptr = g_new(const char *, cap);
  ev->line_len = g_new(gsize, cap);
  ev->line_sess = g_new(gint64, cap);
  gint64 no_key = 0, unlabelled = 0;
  for (gsize at = 0; at < text_len;) {
    const char *nl = memchr(text + at, '\n', text_len - at);
    gsize end = nl ? (gsize)(nl - text) : text_len;
    gsize len = end - at;
    if (len > 0 && text[at + len - 1] == '\r')
      len--;
    if (ev->n_lines == cap) {
      cap *= 2;
      ev->line_ptr = g_renew(const char *, ev->line_ptr, cap);
      ev->line_len = g_renew(gsize, ev->line_len, cap);
      ev->line_sess = g_renew(gint64, ev->line_sess, cap);
    }
    gint64 i = ev->n_lines++;
    ev->line_ptr[i] = text + at;
    ev->line_len[i] = len;
    ev->line_sess[i] = -1;
    GMatchInfo *mi = NULL;
    if (g_regex_match_full(re, text + at, len, 0, 0, &mi, NULL)) {
      char *key = g_match_info_fetch(mi, key_group);
      EvalSession *s = key ? g_hash_table_lookup(ev->by_key, key) : NULL;
      if (key && !s) {
        s = g_new0(EvalSession, 1);
        s->key = key;
        key = NULL;
        s->end_nll = NAN;
        s->first_line = i;
        gpointer lv = g_hash_table_lookup(labels, s->key);
        s->label = lv ? GPOINTER_TO_INT(lv) - 1 : -1;
        unlabelled += !lv;
        g_hash_table_insert(ev->by_key, s->key, s);
        g_ptr_array_add(ev->sess, s);
        s->split = (gint64)ev->sess->len; /* its index + 1, for now */
      }
      g_free(key);
      if (s) {
        ev->line_sess[i] = s->split - 1;
        s->n_lines++;
      }
    } else {
      no_key++;
    }
    g_match_info_free(mi);
    at = end + 1;
  }
  if (ev->sess->len < 4) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                "%s: the key regex '%s' finds %u session%s in %"
                G_GINT64_FORMAT " lines: too few to train and test on",
                log_name, g_regex_get_pattern(re), ev->sess->len,
                ev->sess->len == 1 ? "" : "s", ev->n_lines);
    return FALSE;
  }
  if (unlabelled == (gint64)ev->sess->len) {
    GHashTableIter it;
    gpointer k0 = NULL;
    g_hash_table_iter_init(&it, labels);
    g_hash_table_iter_next(&it, &k0, NULL);
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                "no session has a label: the key regex finds keys like "
                "'%s', the labels file has keys like '%s' (--key, "
                "--key-group)", ((EvalSession *)ev->sess->pdata[0])->key,
                (char *)k0);
    return FALSE;
  }
  fprintf(stderr, "txl eval: %" G_GINT64_FORMAT " lines, %u sessions, %"
          G_GINT64_FORMAT " lines without a key, %" G_GINT64_FORMAT
          " sessions without a label (left out)\n", ev->n_lines,
          ev->sess->len, no_key, unlabelled);
  return TRUE;
}

gboolean
eval_assign_split(Eval *ev, double train_fraction, double calib_fraction,
                  gboolean normal_only, GError **error)
{
  /* the split: the first train_fraction of the sessions; of those that
   * learn (all of them, or the normal ones with normal_only) the last
   * calib_fraction validate */
  gint64 n_train_part = (gint64)(train_fraction * ev->sess->len);
  gint64 n_learn = 0, *counts = ev->counts;
  for (gint64 k = 0; k < n_train_part; k++) {
    int lab = ((EvalSession *)ev->sess->pdata[k])->label;
    n_learn += normal_only ? lab == 0 : TRUE;
  }
  gint64 n_fit = n_learn - (gint64)ceil(calib_fraction * n_learn), seen = 0;
  for (guint k = 0; k < ev->sess->len; k++) {
    EvalSession *s = ev->sess->pdata[k];
    if ((gint64)k >= n_train_part)
      s->split = s->label < 0 ? SPLIT_UNLABELLED : SPLIT_TEST;
    else if (normal_only && s->label != 0)
      s->split = s->label < 0 ? SPLIT_UNLABELLED : SPLIT_DROPPED;
    else
      s->split = seen++ < n_fit ? SPLIT_TRAIN : SPLIT_CALIB;
    /* the folds of cross-fitted trimming (trim.c): alternate sessions */
    s->fold = !normal_only && s->split == SPLIT_TRAIN ? (int)(seen % 2) : -1;
    counts[s->split]++;
  }
  if (counts[SPLIT_TRAIN] < 1 || counts[SPLIT_CALIB] < 1 ||
      counts[SPLIT_TEST] < 1) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                "need at least one training, one validation and one test "
                "session (have %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                ", %" G_GINT64_FORMAT ")", counts[SPLIT_TRAIN],
                counts[SPLIT_CALIB], counts[SPLIT_TEST]);
    return FALSE;
  }
  if (normal_only)
    fprintf(stderr, "txl eval: sessions: %" G_GINT64_FORMAT " train "
            "(normal), %" G_GINT64_FORMAT " validation (normal), %"
            G_GINT64_FORMAT " test, %" G_GINT64_FORMAT " anomalous ones of "
            "the training part left out\n", counts[SPLIT_TRAIN],
            counts[SPLIT_CALIB], counts[SPLIT_TEST], counts[SPLIT_DROPPED]);
  else
    fprintf(stderr, "txl eval: sessions: %" G_GINT64_FORMAT " train, %"
            G_GINT64_FORMAT " validation (labels not read), %"
            G_GINT64_FORMAT " test\n", counts[SPLIT_TRAIN],
            counts[SPLIT_CALIB], counts[SPLIT_TEST]);
  return TRUE;
}

static gboolean
in_fold(const Eval *ev, gint64 i, int split, int fold)
{
  return eval_line_in(ev, i, split) &&
         (fold < 0 ||
          ((EvalSession *)ev->sess->pdata[ev->line_sess[i]])->fold == fold);
}

gboolean
eval_write_split_text(const Eval *ev, int split, int fold,
                      gboolean interleaved, const char *path, gint64 *n_out,
                      GError **error)
{
  FILE *f = fopen(path, "wb");
  if (!f) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_IO, "cannot write %s: %s", path,
                g_strerror(errno));
    return FALSE;
  }
  gint64 n = 0;
  if (interleaved) {
    /* the lines as they came, interleaved */
    for (gint64 i = 0; i < ev->n_lines; i++) {
      if (in_fold(ev, i, split, fold)) {
        fwrite(ev->line_ptr[i], 1, ev->line_len[i], f);
        fputc('\n', f);
        n++;
      }
    }
  } else {
    /* grouped: each session's lines in order, then an empty line */
    GPtrArray *per = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);
    for (guint k = 0; k < ev->sess->len; k++)
      g_ptr_array_add(per, g_array_new(FALSE, FALSE, sizeof(gint64)));
    for (gint64 i = 0; i < ev->n_lines; i++)
      if (in_fold(ev, i, split, fold))
        g_array_append_val((GArray *)per->pdata[ev->line_sess[i]], i);
    for (guint k = 0; k < ev->sess->len; k++) {
      GArray *a = per->pdata[k];
      if (!a->len)
        continue;
      for (guint j = 0; j < a->len; j++) {
        gint64 i = g_array_index(a, gint64, j);
        fwrite(ev->line_ptr[i], 1, ev->line_len[i], f);
        fputc('\n', f);
        n++;
      }
      fputc('\n', f); /* the primer before a session's first line */
    }
    g_ptr_array_free(per, TRUE);
  }
  *n_out = n;
  if (fclose(f) != 0) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_IO, "cannot write %s: %s", path,
                g_strerror(errno));
    return FALSE;
  }
  return TRUE;
}
