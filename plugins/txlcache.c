/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The process-wide model cache: path -> TxlModel, reference counted.
 * Plain GLib over libtxl so that tests can build it on its own. */
#include "gsttxlcommon.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <string.h>

typedef struct {
  char *path; /* canonical */
  TxlModel *model;
  guint users;
  /* identity of the file when it was loaded */
  guint64 dev, ino, mtime;
  gint64 size;
} Entry;

static GMutex cache_lock;
static GPtrArray *cache_entries; /* Entry* */

TxlModel *
txl_model_cache_acquire(const char *path, GError **error)
{
  g_autofree char *canon = g_canonicalize_filename(path, NULL);
  GStatBuf st;
  if (g_stat(canon, &st) != 0) {
    int e = errno;
    g_set_error(error, TXL_ERROR, TXL_ERROR_IO, "cannot open '%s': %s", path,
                g_strerror(e));
    return NULL;
  }
  TxlModel *m = NULL;
  g_mutex_lock(&cache_lock);
  if (!cache_entries)
    cache_entries = g_ptr_array_new();
  for (guint i = 0; i < cache_entries->len; i++) {
    Entry *e = g_ptr_array_index(cache_entries, i);
    if (strcmp(e->path, canon) == 0 && e->dev == (guint64)st.st_dev &&
        e->ino == (guint64)st.st_ino && e->mtime == (guint64)st.st_mtime &&
        e->size == (gint64)st.st_size) {
      e->users++;
      m = txl_model_ref(e->model);
      break;
    }
  }
  if (!m) {
    /* loading under the lock: two elements naming one file load it once */
    m = txl_model_load(canon, error);
    if (m) {
      Entry *e = g_new0(Entry, 1);
      e->path = g_steal_pointer(&canon);
      e->model = m;
      e->users = 1;
      e->dev = st.st_dev;
      e->ino = st.st_ino;
      e->mtime = st.st_mtime;
      e->size = st.st_size;
      g_ptr_array_add(cache_entries, e);
      m = txl_model_ref(m);
    }
  }
  g_mutex_unlock(&cache_lock);
  return m;
}

void
txl_model_cache_release(TxlModel *model)
{
  if (!model)
    return;
  g_mutex_lock(&cache_lock);
  for (guint i = 0; cache_entries && i < cache_entries->len; i++) {
    Entry *e = g_ptr_array_index(cache_entries, i);
    if (e->model != model)
      continue;
    if (--e->users == 0) {
      g_ptr_array_remove_index_fast(cache_entries, i);
      txl_model_unref(e->model);
      g_free(e->path);
      g_free(e);
    }
    break;
  }
  g_mutex_unlock(&cache_lock);
  txl_model_unref(model);
}

guint
txl_model_cache_size(void)
{
  g_mutex_lock(&cache_lock);
  guint n = cache_entries ? cache_entries->len : 0;
  g_mutex_unlock(&cache_lock);
  return n;
}

gchar *
gst_txl_element_model_path(GstElement *element)
{
  gchar *path = NULL;
  g_object_get(element, "model", &path, NULL);
  if (!path)
    path = g_strdup(txl_default_model_path());
  return path;
}

TxlModel *
gst_txl_element_load_model(GstElement *element, gboolean need_tokenizer)
{
  gchar *path = gst_txl_element_model_path(element);
  if (!path) {
    GST_ELEMENT_ERROR(element, RESOURCE, NOT_FOUND,
                      ("No model file: set the \"model\" property (the "
                       "bundled model is neither installed nor in the "
                       "source tree, and TXL_MODEL is not set)"), (NULL));
    return NULL;
  }
  GError *err = NULL;
  TxlModel *m = txl_model_cache_acquire(path, &err);
  if (!m) {
    GST_ELEMENT_ERROR(element, RESOURCE, OPEN_READ,
                      ("Could not load the model \"%s\".", path),
                      ("%s", err->message));
    g_clear_error(&err);
  } else if (need_tokenizer &&
             txl_tokenizer_type(txl_model_tokenizer(m)) ==
                 TXL_TOKENIZER_NONE) {
    GST_ELEMENT_ERROR(element, RESOURCE, SETTINGS,
                      ("The model \"%s\" has no tokenizer: it only scores "
                       "token ids, and %s works on text.", path,
                       GST_OBJECT_NAME(element)), (NULL));
    txl_model_cache_release(g_steal_pointer(&m));
  } else {
    GST_INFO_OBJECT(element, "model %s (%s, vocabulary %s)", path,
                    txl_model_id(m), txl_model_vocab_id(m));
  }
  g_free(path);
  return m;
}

GstStateChangeReturn
gst_txl_element_change_state(GstElement *element, GstElementClass *parent,
                             GstStateChange transition, TxlModel **model,
                             gboolean need_tokenizer)
{
  if (transition == GST_STATE_CHANGE_NULL_TO_READY &&
      !(*model = gst_txl_element_load_model(element, need_tokenizer)))
    return GST_STATE_CHANGE_FAILURE;
  GstStateChangeReturn ret = parent->change_state(element, transition);
  if (transition == GST_STATE_CHANGE_READY_TO_NULL &&
      ret != GST_STATE_CHANGE_FAILURE)
    txl_model_cache_release(g_steal_pointer(model));
  return ret;
}
