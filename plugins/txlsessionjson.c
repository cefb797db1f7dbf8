/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The JSON line txlsink writes for a session that txlsessions ended (its
 * "txl-session" structure), apart from the sink so that the sink's file
 * stays about lines.  A non-finite number is null, never 0, and such a
 * session is flagged: a session whose score broke must not read as a
 * quiet one (docs/line-scores.md). */
#include "gsttxlcommon.h"
#include "txl_formats.h"

#include <math.h>
#include <string.h>

GString *
gst_txl_session_json(const GstStructure *s)
{
  gint64 first = 0, last = 0, lines = 0, tokens = 0;
  gst_structure_get_int64(s, "last-line", &last);
  const gchar *key = gst_structure_get_string(s, "key");
  const gchar *reason = gst_structure_get_string(s, "reason");
  const gchar *kind = gst_structure_get_string(s, "score-kind");
  guint64 bytes = 0;
  gdouble nll = NAN, score = NAN, thr = 0, max_line = NAN, max_token = NAN;
  gboolean flag = FALSE;
  gst_structure_get_int64(s, "first-line", &first);
  gst_structure_get_int64(s, "lines", &lines);
  gst_structure_get_int64(s, "tokens", &tokens);
  gst_structure_get_uint64(s, "bytes", &bytes);
  gst_structure_get_double(s, "nll", &nll);
  gst_structure_get_double(s, "score", &score);
  gst_structure_get_double(s, "threshold", &thr);
  gst_structure_get_double(s, "max-line", &max_line);
  gst_structure_get_double(s, "max-token", &max_token);
  gst_structure_get_boolean(s, "flag", &flag);
  GString *o = g_string_new("{\"session\": ");
  txl_json_append_string(o, key ? key : "", key ? strlen(key) : 0);
  g_string_append_printf(o, ", \"first_line\": %" G_GINT64_FORMAT
                         ", \"last_line\": %" G_GINT64_FORMAT ", \"lines\": %"
                         G_GINT64_FORMAT ", \"tokens\": %" G_GINT64_FORMAT
                         ", \"bytes\": %" G_GUINT64_FORMAT, first, last, lines,
                         tokens, bytes);
  /* non-finite: null, and flagged */
  g_string_append(o, ", \"nll\": ");
  txl_json_append_double(o, "%.6f", nll);
  g_string_append(o, ", \"score\": ");
  txl_json_append_double(o, "%.6f", score);
  g_string_append_printf(o, ", \"score_kind\": \"%s\", \"max_line\": ",
                         kind ? kind : "mean");
  txl_json_append_double(o, "%.6f", max_line);
  g_string_append(o, ", \"max_token\": ");
  txl_json_append_double(o, "%.6f", max_token);
  gint64 nonfinite = 0;
  gst_structure_get_int64(s, "nonfinite", &nonfinite);
  if (nonfinite > 0 || !isfinite(score))
    flag = TRUE;
  if (nonfinite > 0)
    g_string_append_printf(o, ", \"nonfinite\": %" G_GINT64_FORMAT,
                           nonfinite);
  if (thr > 0)
    g_string_append_printf(o, ", \"threshold\": %.6f", thr);
  else
    g_string_append(o, ", \"threshold\": null");
  gdouble level = NAN;
  if (gst_structure_get_double(s, "level", &level)) {
    g_string_append(o, ", \"level\": ");
    txl_json_append_double(o, "%.6f", level);
  }
  gboolean warm = FALSE;
  if (gst_structure_get_boolean(s, "warmup", &warm))
    g_string_append_printf(o, ", \"warmup\": %s", warm ? "true" : "false");
  gboolean is_short = FALSE;
  if (gst_structure_get_boolean(s, "short", &is_short))
    g_string_append_printf(o, ", \"short\": %s",
                           is_short ? "true" : "false");
  g_string_append_printf(o, ", \"flag\": %s, \"reason\": \"%s\"}\n",
                         flag ? "true" : "false", reason ? reason : "ended");
  return o;
}
