/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The token caps of a model, shared by the elements that take or make
 * application/x-txl-tokens: what they are, how a CAPS query is answered,
 * and how a CAPS event from another vocabulary is refused; and the one
 * check every element makes of a buffer of records. */
#include "gsttxlcommon.h"

#include <string.h>

static gint
vocab_size(TxlModel *model)
{
  gint n = txl_tokenizer_n_tokens(txl_model_tokenizer(model));
  return n > 0 ? n : txl_model_config(model)->n_token;
}

GstCaps *
gst_txl_tokens_caps(TxlModel *model)
{
  return gst_caps_new_simple(TXL_TOKENS_CAPS_NAME, "vocab-id", G_TYPE_STRING,
                             txl_model_vocab_id(model), "n-tokens",
                             G_TYPE_INT, vocab_size(model), NULL);
}

void
gst_txl_answer_caps_query(GstQuery *query, GstCaps *caps)
{
  GstCaps *filter;
  gst_query_parse_caps(query, &filter);
  if (filter) {
    GstCaps *c = gst_caps_intersect_full(filter, caps,
                                         GST_CAPS_INTERSECT_FIRST);
    gst_caps_unref(caps);
    caps = c;
  }
  gst_query_set_caps_result(query, caps);
  gst_caps_unref(caps);
}

gboolean
gst_txl_check_tokens_caps(GstElement *element, TxlModel *model,
                          GstCaps *caps, GstCaps **refused)
{
  const GstStructure *s = gst_caps_get_structure(caps, 0);
  const gchar *vocab = gst_structure_get_string(s, "vocab-id");
  gint n = 0;
  const gchar *want = txl_model_vocab_id(model);
  gint want_n = vocab_size(model);
  gst_structure_get_int(s, "n-tokens", &n);
  if (vocab && strcmp(vocab, want) == 0 && n == want_n)
    return TRUE;
  /* a refused sticky event comes back with every later push: say it once */
  if (refused && *refused && gst_caps_is_equal(*refused, caps))
    return FALSE;
  if (refused)
    gst_caps_replace(refused, caps);
  /* every txl element with a model names its file so */
  gchar *path = gst_txl_element_model_path(element);
  GST_ELEMENT_ERROR(element, CORE, NEGOTIATION,
      ("Vocabulary mismatch: the tokens come from vocabulary %s (%d tokens), "
       "but the model \"%s\" uses vocabulary %s (%d tokens). Tokenize with "
       "the same model file.", vocab ? vocab : "(none)", n,
       path ? path : "", want, want_n),
      ("caps %" GST_PTR_FORMAT, caps));
  g_free(path);
  return FALSE;
}

gboolean
gst_txl_map_records(GstElement *element, GstBuffer *buf, GstMapInfo *map,
                    gsize record_size, const gchar *kind)
{
  if (!gst_buffer_map(buf, map, GST_MAP_READ)) {
    GST_ELEMENT_ERROR(element, RESOURCE, READ,
                      ("Could not map the input buffer"), (NULL));
    return FALSE;
  }
  if (map->size % record_size != 0) {
    GST_ELEMENT_ERROR(element, STREAM, FORMAT,
                      ("A %s buffer of %" G_GSIZE_FORMAT " bytes is not a "
                       "whole number of %" G_GSIZE_FORMAT "-byte %s records",
                       kind, map->size, record_size, kind), (NULL));
    gst_buffer_unmap(buf, map);
    return FALSE;
  }
  return TRUE;
}

void
gst_txl_add_calibration_caps(GstCaps *caps, TxlModel *model,
                             gboolean sessions)
{
  /* A threshold calibrated one way is no use to the other: lines scored in
   * their own session's memory cost less than the same lines interleaved. */
  const TxlCalibration *cal = txl_model_calibration(model);
  if (cal && cal->sessions == sessions && cal->line_threshold_bpb > 0)
    gst_caps_set_simple(caps, "line-threshold", G_TYPE_DOUBLE,
                        cal->line_threshold_bpb, NULL);
}
