/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Anomaly calibration in the model file.  The thresholds `txl eval`
 * measures belong to the weights they were measured with: kept beside them
 * in the GGUF metadata, a retrained model cannot be paired with a stale
 * threshold, and the elements need no numbers copied from summary.json. */
#include "freeeach.h"
#include "gguf.h"
#include "model_internal.h"

#include <math.h>
#include <string.h>

#define PREFIX "txl.anomaly."

static const char *score_names[] = { "max-line", "max-line-sum", "max-token",
                                     "mean" };

static gboolean
bad(GError **error, const char *what)
{
  g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
              "anomaly calibration (" PREFIX "*): %s", what);
  return FALSE;
}

static gboolean
threshold(const GgufFile *f, const char *key, double *out, GError **error)
{
  *out = 0.0;
  if (!gguf_has_key(f, key))
    return TRUE;
  if (!gguf_get_float(f, key, out, error))
    return FALSE;
  if (!isfinite(*out) || *out < 0)
    return bad(error, "a threshold is negative or not finite");
  return TRUE;
}

void
txl_calibration_free(TxlCalibration *c)
{
  if (!c)
    return;
  txl_free_each(g_free, c->session_key, c->rule, c);
}

gboolean
txl_calibration_read(const GgufFile *f, TxlCalibration **out, GError **error)
{
  *out = NULL;
  if (!gguf_has_key(f, PREFIX "mode"))
    return TRUE;
  TxlCalibration *c = g_new0(TxlCalibration, 1);
  g_autofree char *mode = gguf_get_string(f, PREFIX "mode", error);
  if (!mode)
    goto fail;
  if (!strcmp(mode, "sessions"))
    c->sessions = TRUE;
  else if (strcmp(mode, "single-stream")) {
    bad(error, "mode is neither sessions nor single-stream");
    goto fail;
  }
  if (!threshold(f, PREFIX "session_threshold", &c->session_threshold,
                 error) ||
      !threshold(f, PREFIX "line_threshold_bpb", &c->line_threshold_bpb,
                 error))
    goto fail;
  c->session_score = 3; /* mean */
  if (gguf_has_key(f, PREFIX "session_score")) {
    g_autofree char *s = gguf_get_string(f, PREFIX "session_score", error);
    if (!s)
      goto fail;
    c->session_score = -1;
    for (int i = 0; i < (int)G_N_ELEMENTS(score_names); i++)
      if (!strcmp(s, score_names[i]))
        c->session_score = i;
    if (c->session_score < 0) {
      bad(error, "unknown session score kind");
      goto fail;
    }
  }
  if (gguf_has_key(f, PREFIX "session_end_marker") &&
      !gguf_get_bool(f, PREFIX "session_end_marker", &c->session_end_marker,
                     error))
    goto fail;
  if (c->sessions) {
    c->session_key = gguf_get_string(f, PREFIX "session_key", error);
    if (!c->session_key)
      goto fail;
    gint64 g = 0;
    if (gguf_has_key(f, PREFIX "session_key_group") &&
        !gguf_get_int(f, PREFIX "session_key_group", 0, 99, &g, error))
      goto fail;
    c->session_key_group = (int)g;
    GError *e = NULL;
    GRegex *re = g_regex_new(c->session_key, 0, 0, &e);
    if (!re) {
      g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                  "anomaly calibration (" PREFIX "*): bad session key regex: "
                  "%s", e->message);
      g_error_free(e);
      goto fail;
    }
    int groups = g_regex_get_capture_count(re);
    g_regex_unref(re);
    if (c->session_key_group > groups) {
      bad(error, "the session key group is beyond the regex's groups");
      goto fail;
    }
  }
  if (gguf_has_key(f, PREFIX "rule") &&
      !(c->rule = gguf_get_string(f, PREFIX "rule", error)))
    goto fail;
  *out = c;
  return TRUE;

fail:
  txl_calibration_free(c);
  return FALSE;
}

const TxlCalibration *
txl_model_calibration(const TxlModel *m)
{
  return m->calibration;
}

/* Every key but the old calibration's, which the new one replaces. */
static gboolean
not_calibration(const char *key, gconstpointer data)
{
  (void)data;
  return !g_str_has_prefix(key, PREFIX);
}

gboolean
txl_model_file_set_calibration(const char *in, const char *out,
                               const TxlCalibration *c, GError **error)
{
  if (c && (c->session_score < 0 || c->session_score >= (int)G_N_ELEMENTS(score_names) ||
      !isfinite(c->session_threshold) || c->session_threshold < 0 ||
      !isfinite(c->line_threshold_bpb) || c->line_threshold_bpb < 0 ||
      (c->sessions && !c->session_key)))
    return bad(error, "invalid values to write");
  GgufFile *f = gguf_open(in, error);
  if (!f)
    return FALSE;
  GgufWriter *w = gguf_writer_new();
  gguf_writer_copy_keys(w, f, not_calibration, NULL);
  if (!c)
    goto tensors;
  gguf_writer_add_string(w, PREFIX "mode",
                         c->sessions ? "sessions" : "single-stream");
  if (c->sessions) {
    gguf_writer_add_string(w, PREFIX "session_key", c->session_key);
    gguf_writer_add_u32(w, PREFIX "session_key_group",
                        (uint32_t)c->session_key_group);
  }
  gguf_writer_add_string(w, PREFIX "session_score",
                         score_names[c->session_score]);
  gguf_writer_add_bool(w, PREFIX "session_end_marker", c->session_end_marker);
  gguf_writer_add_f64(w, PREFIX "session_threshold", c->session_threshold);
  gguf_writer_add_f64(w, PREFIX "line_threshold_bpb", c->line_threshold_bpb);
  if (c->rule)
    gguf_writer_add_string(w, PREFIX "rule", c->rule);
tensors:
  gguf_writer_copy_tensors(w, f);
  gboolean ok = gguf_writer_write(w, out, error);
  gguf_writer_free(w);
  gguf_close(f);
  return ok;
}
