/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The labels file of txl eval (labels.h). */
#include "labels.h"
#include "txl.h"
#include "txl_formats.h"

#include <string.h>

gboolean
eval_parse_label(const char *v, int *out)
{
  static const char *anom[] = { "anomaly", "anomalous", "abnormal", "1",
                                "true", "yes" };
  static const char *norm[] = { "normal", "0", "false", "no" };
  for (gsize i = 0; i < G_N_ELEMENTS(anom); i++)
    if (!g_ascii_strcasecmp(v, anom[i]))
      return *out = 1, TRUE;
  for (gsize i = 0; i < G_N_ELEMENTS(norm); i++)
    if (!g_ascii_strcasecmp(v, norm[i]))
      return *out = 0, TRUE;
  return FALSE;
}

GHashTable *
eval_read_labels(const char *path, GError **error)
{
  gsize len;
  /* a regular file within a budget: HDFS's 575,061 blocks take 17 MB */
  g_autofree char *text =
      txl_read_small_file(path, "a labels file", (gsize)1 << 30, &len, error);
  if (!text) {
    g_prefix_error(error, "labels: ");
    return NULL;
  }
  GHashTable *h = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  char **rows = g_strsplit(text, "\n", -1);
  int n = 0;
  for (int i = 0; rows[i]; i++) {
    char *row = g_strstrip(rows[i]);
    if (!*row)
      continue;
    char *comma = strrchr(row, ',');
    if (!comma) {
      g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                  "%s:%d: expected KEY,LABEL", path, i + 1);
      goto fail;
    }
    *comma = '\0';
    char *key = g_strstrip(row), *val = g_strstrip(comma + 1);
    int label;
    if (!eval_parse_label(val, &label)) {
      if (n == 0 && i == 0)
        continue; /* a header such as BlockId,Label */
      g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                  "%s:%d: label '%s' is neither normal (Normal, 0, false) "
                  "nor anomalous (Anomaly, 1, true)", path, i + 1, val);
      goto fail;
    }
    gpointer had = g_hash_table_lookup(h, key);
    if (had && GPOINTER_TO_INT(had) != label + 1) {
      g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                  "%s:%d: '%s' is labelled both normal and anomalous", path,
                  i + 1, key);
      goto fail;
    }
    g_hash_table_replace(h, g_strdup(key), GINT_TO_POINTER(label + 1));
    n++;
  }
  g_strfreev(rows);
  if (n == 0) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                "%s: no KEY,LABEL rows", path);
    g_hash_table_destroy(h);
    return NULL;
  }
  return h;
fail:
  g_strfreev(rows);
  g_hash_table_destroy(h);
  return NULL;
}
