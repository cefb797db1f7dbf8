/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A model file put in place only once it loads (model_write.h). */
#include "model_write.h"
#include "filemap.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <unistd.h>

gboolean
txl_model_write_checked(const char *path, TxlModelWriteFunc write_fn,
                        gpointer data, gboolean keep, GError **error)
{
  if (!txl_path_replaceable(path, error))
    return FALSE;
  g_autofree char *tmp = g_strconcat(path, ".check-XXXXXX", NULL);
  int fd = g_mkstemp(tmp);
  if (fd < 0) {
    int e = errno;
    g_set_error(error, TXL_ERROR, TXL_ERROR_IO, "%s: cannot write beside "
                "it: %s", path, g_strerror(e));
    return FALSE;
  }
  close(fd);
  GError *err = NULL;
  gboolean ok = write_fn(tmp, data, &err);
  TxlModel *m = ok ? txl_model_load(tmp, &err) : NULL;
  if (ok && !m) {
    g_prefix_error(&err, "the model would be refused: ");
    ok = FALSE;
  }
  txl_model_unref(m);
  if (ok && keep && g_rename(tmp, path) != 0) {
    int e = errno;
    g_set_error(&err, TXL_ERROR, TXL_ERROR_IO, "%s: %s", path,
                g_strerror(e));
    ok = FALSE;
  }
  if (!ok || !keep)
    g_unlink(tmp);
  if (err) {
    /* the message names the file asked for, not the temporary */
    GString *msg = g_string_new(err->message);
    g_string_replace(msg, tmp, path, 0);
    g_set_error_literal(error, err->domain, err->code, msg->str);
    g_string_free(msg, TRUE);
    g_error_free(err);
  }
  return ok;
}
