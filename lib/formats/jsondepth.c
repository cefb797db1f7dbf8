/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "jsondepth.h"
#include "txl.h"

gboolean
txl_json_check_depth(const char *text, gsize len, int max_depth,
                     const char *label, GError **error)
{
  return txl_json_check_bounds(text, len, max_depth, G_MAXUINT64, label,
                               error);
}

gboolean
txl_json_check_bounds(const char *text, gsize len, int max_depth,
                      guint64 max_values, const char *label, GError **error)
{
  int depth = 0;
  guint64 values = 1; /* each ',' and each container adds one */
  gboolean in_string = FALSE;
  for (gsize i = 0; i < len; i++) {
    char ch = text[i];
    if (in_string) {
      if (ch == '\\')
        i++; /* the escaped character cannot end the string */
      else if (ch == '"')
        in_string = FALSE;
      continue;
    }
    if ((ch == ',' || ch == '[' || ch == '{') && ++values > max_values) {
      g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                  "%s: JSON of more than %" G_GUINT64_FORMAT " values "
                  "(at byte %zu); refused before parsing: send smaller "
                  "batches", label, max_values, i);
      return FALSE;
    }
    if (ch == '"') {
      in_string = TRUE;
    } else if (ch == '[' || ch == '{') {
      if (++depth > max_depth) {
        g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                    "%s: JSON nested more than %d levels deep (at byte %zu); "
                    "refused before parsing", label, max_depth, i);
        return FALSE;
      }
    } else if (ch == ']' || ch == '}') {
      /* unbalanced closers are the parser's to report; never go negative,
       * so that "]]]][[[[" is still measured from zero */
      if (depth > 0)
        depth--;
    }
  }
  return TRUE;
}
