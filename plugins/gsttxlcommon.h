/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Inside the txl plugin: the element types, the text meta and the
 * process-wide model cache. */
#ifndef GST_TXL_COMMON_H
#define GST_TXL_COMMON_H

#include <gst/gst.h>

#include "txl_anomaly.h"
#include "txl_formats.h"
#include "txl.h"
#include "txltokens.h"

G_BEGIN_DECLS

/* ---- text meta --------------------------------------------------------- */

GType gst_txl_text_meta_api_get_type(void);
const GstMetaInfo *gst_txl_text_meta_get_info(void);
#define GST_TXL_TEXT_META_API_TYPE (gst_txl_text_meta_api_get_type())
/* takes a reference to bytes */
GstTxlTextMeta *gst_buffer_add_txl_text_meta(GstBuffer *buffer, guint64 offset,
                                             GBytes *bytes);
#define gst_buffer_get_txl_text_meta(b)                                        \
  ((GstTxlTextMeta *)gst_buffer_get_meta((b), GST_TXL_TEXT_META_API_TYPE))

GType gst_txl_line_meta_api_get_type(void);
const GstMetaInfo *gst_txl_line_meta_get_info(void);
#define GST_TXL_LINE_META_API_TYPE (gst_txl_line_meta_api_get_type())
/* A line's scores (lib/anomaly/lines.h) and the input bytes it stands for. */
GstTxlLineMeta *gst_buffer_add_txl_line_meta(GstBuffer *buffer, gint64 line,
                                             guint64 bytes,
                                             const TxlLineScore *s);
/* Starts reading an element's part of a snapshot: r over bytes, its
 * leading version in *version.  FALSE when that version is not one this
 * build reads (oldest to newest), with an error naming it and what to do
 * ("remove the snapshot to start <afresh>"; a version 1 below oldest held
 * line scores per raw byte).  A part too short for a version is left to
 * the caller's checks (r->ok is FALSE). */
gboolean gst_txl_part_begin(TxlReader *r, GBytes *bytes, guint32 *version,
                            const gchar *element, guint32 oldest,
                            guint32 newest, const gchar *afresh,
                            GError **error);
/* txlsink's JSON line (with its '\n') for an ended session's
 * "txl-session" structure (txlsessionjson.c). */
GString *gst_txl_session_json(const GstStructure *s);

/* A line scored, waiting for the buffer its meta goes on. */
typedef struct {
  gint64 line;
  guint64 bytes;
  TxlLineScore s;
  guint32 flags; /* TXL_LINE_* of its meta (txlsessions; txlmodel keeps its
                  * own done_flags) */
  gdouble ref_nll; /* its meta's ref_nll */
} GstTxlDoneLine;

/* ---- debug categories -------------------------------------------------- */

/* Registers a debug category once, for code that no class_init runs
 * before (txllearn.c, the scorers' snapshots): its first use, from any
 * thread.  A macro, as GST_DEBUG_CATEGORY_INIT is (a no-op where GStreamer
 * is built without debugging). */
#define GST_TXL_DEBUG_CATEGORY_ONCE(cat, name, description)                   \
  G_STMT_START {                                                              \
    static gsize done_ = 0;                                                   \
    if (g_once_init_enter(&done_)) {                                          \
      GST_DEBUG_CATEGORY_INIT(cat, name, 0, description);                     \
      g_once_init_leave(&done_, 1);                                           \
    }                                                                         \
  } G_STMT_END

/* ---- model cache ------------------------------------------------------- */

/* One TxlModel per model file and process, shared by every element and
 * pipeline that names the file.  Returns a reference that must go back
 * through txl_model_cache_release().  A file replaced on disk (another
 * inode, size or mtime) is loaded afresh; elements still holding the old
 * one keep it until they release it. */
TxlModel *txl_model_cache_acquire(const char *path, GError **error);
void txl_model_cache_release(TxlModel *model);
/* number of distinct models held (for tests) */
guint txl_model_cache_size(void);
/* The element's "model" property, or where it is unset the bundled model
 * (txl_default_model_path; NULL when there is none).  g_free it. */
gchar *gst_txl_element_model_path(GstElement *element);
/* For NULL_TO_READY: loads the model named by the element's "model"
 * property (unset: the bundled model), posting a readable element error
 * when it cannot (no file, unreadable, or, with need_tokenizer, a model
 * that only knows ids).  Returns a cache reference or NULL. */
TxlModel *gst_txl_element_load_model(GstElement *element,
                                     gboolean need_tokenizer);
/* The parent class's change_state with the element's model held over the
 * READY state: loaded into *model (as above) before the parent's
 * NULL_TO_READY, released after a READY_TO_NULL.  An element with a model
 * calls it where it would call the parent's. */
GstStateChangeReturn gst_txl_element_change_state(GstElement *element,
                                                  GstElementClass *parent,
                                                  GstStateChange transition,
                                                  TxlModel **model,
                                                  gboolean need_tokenizer);

/* ---- token caps (txlcaps.c) -------------------------------------------- */

/* application/x-txl-tokens with the model's vocab-id and n-tokens. */
GstCaps *gst_txl_tokens_caps(TxlModel *model);
/* Answers a CAPS query with caps (taken) intersected with its filter. */
void gst_txl_answer_caps_query(GstQuery *query, GstCaps *caps);
/* Checks token caps against the model; otherwise posts an element error
 * naming both vocabularies and the model file (the element's "model"),
 * once per refused caps (refused, may be NULL, remembers the last ones). */
gboolean gst_txl_check_tokens_caps(GstElement *element, TxlModel *model,
                                   GstCaps *caps, GstCaps **refused);
/* Adds line-threshold (bits per byte) to score caps when the model file's
 * calibration (txl eval) is for this way of scoring: per session
 * (txlsessions) or one stream (txlmodel).  txlsink takes it as its default
 * threshold. */
void gst_txl_add_calibration_caps(GstCaps *caps, TxlModel *model,
                                  gboolean sessions);
/* Maps a buffer of `kind` ("token", "score") records for reading; one that
 * cannot be mapped or is not a whole number of records gets an element
 * error (and is left unmapped). */
gboolean gst_txl_map_records(GstElement *element, GstBuffer *buf,
                             GstMapInfo *map, gsize record_size,
                             const gchar *kind);

/* ---- elements ---------------------------------------------------------- */

/* For instance_init: a pad from templ, named as the template, with the
 * functions given (NULL keeps GStreamer's default), added to element. */
GstPad *gst_txl_add_pad(GstElement *element, GstStaticPadTemplate *templ,
                        GstPadChainFunction chain, GstPadEventFunction event,
                        GstPadQueryFunction query);

GType gst_txl_tokenizer_get_type(void);
GType gst_txl_model_get_type(void);
GType gst_txl_sink_get_type(void);
GType gst_txl_sampler_get_type(void);
GType gst_txl_sessions_get_type(void);
GType gst_txl_syslog_src_get_type(void);
GType gst_txl_journal_src_get_type(void);
GType gst_txl_json_get_type(void);
/* GstTxlSnapshotPrecision (f32, f16, bf16), shared by the elements that
 * write snapshots */
GType gst_txl_snapshot_precision_get_type(void);

G_END_DECLS

#endif
