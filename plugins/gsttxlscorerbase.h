/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* GstTxlScorerBase: what txlmodel and txlsessions have in common.
 *
 * Both take token buffers from txltokenizer and send scores with the
 * input text to txlsink; they differ only in how the tokens are scored
 * (one stream, or one stream per session).  The base class holds the
 * model, the stream options, the pads and their events and queries, the
 * input text passed through, the start (with restore) and the stop, and
 * the pipeline snapshots: when they are taken (txlsnapsched.c), which
 * parts the neighbours own (txlparts.h) and how the file is written and
 * read back.  A subclass fills in GstTxlScorerBaseClass: how to start a
 * stream, score tokens, finish, and save and load its own part. */
#ifndef GST_TXL_SCORER_BASE_H
#define GST_TXL_SCORER_BASE_H

#include "txl_formats.h"
#include "gsttxlcommon.h"
#include "txllearn.h"
#include "txlsnapsched.h"

G_BEGIN_DECLS

/* Declared by hand: G_DECLARE_DERIVABLE_TYPE would keep the instance
 * fields private, and the subclasses work on them directly. */
#define GST_TYPE_TXL_SCORER_BASE (gst_txl_scorer_base_get_type())
#define GST_TXL_SCORER_BASE(obj)                                              \
  (G_TYPE_CHECK_INSTANCE_CAST((obj), GST_TYPE_TXL_SCORER_BASE,               \
                              GstTxlScorerBase))
#define GST_TXL_SCORER_BASE_CLASS(klass)                                      \
  (G_TYPE_CHECK_CLASS_CAST((klass), GST_TYPE_TXL_SCORER_BASE,                \
                           GstTxlScorerBaseClass))
#define GST_TXL_SCORER_BASE_GET_CLASS(obj)                                    \
  (G_TYPE_INSTANCE_GET_CLASS((obj), GST_TYPE_TXL_SCORER_BASE,                \
                             GstTxlScorerBaseClass))
typedef struct _GstTxlScorerBase GstTxlScorerBase;
typedef struct _GstTxlScorerBaseClass GstTxlScorerBaseClass;
GType gst_txl_scorer_base_get_type(void);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(GstTxlScorerBase, gst_object_unref)

/* The input text on its way downstream: bytes received (text metas from
 * txltokenizer) and not yet sent on with the scores that cover them. */
typedef struct {
  GByteArray *data;
  guint64 offset;   /* stream offset of data[0] */
  gboolean started; /* a text meta has come */
  guint64 frontier; /* stream offset up to which scores went out */
} GstTxlText;

struct _GstTxlScorerBaseClass {
  GstElementClass parent_class;

  /* this element's section in its snapshots ("txlmodel") */
  const gchar *section;
  /* scores go out per line (caps per-line=true, session calibration) */
  gboolean per_line;
  /* "scoring", "session": the settings named in a start error */
  const gchar *settings;

  /* NULL_TO_READY, the model loaded (may be NULL) */
  void (*opened)(GstTxlScorerBase *self);
  /* READY_TO_PAUSED before the stream starts: FALSE, with an element
   * error posted, refuses to start (may be NULL) */
  gboolean (*prepare)(GstTxlScorerBase *self);
  /* A fresh stream (the base resets its own part first) */
  gboolean (*new_stream)(GstTxlScorerBase *self, GError **error);
  void (*free_stream)(GstTxlScorerBase *self);
  /* whether a stream exists, and how far it is (tokens) */
  gboolean (*live)(GstTxlScorerBase *self);
  guint64 (*progress)(GstTxlScorerBase *self);
  /* n token records of an input buffer; GST_FLOW_FLUSHING when what was
   * scored is held back (downstream flushing) but the tokens are taken */
  GstFlowReturn (*score)(GstTxlScorerBase *self, const guint8 *records,
                         gsize n);
  /* what is scored goes out (not the partial segment) */
  GstFlowReturn (*push_out)(GstTxlScorerBase *self);
  /* the end of the stream: everything scored and out */
  GstFlowReturn (*finish)(GstTxlScorerBase *self);
  /* STREAM_START of a new stream (not one restored at start) */
  gboolean (*stream_start)(GstTxlScorerBase *self, GError **error);
  /* the stream stops or flushes: cancel timers of its own (may be NULL) */
  void (*quiet)(GstTxlScorerBase *self);
  /* the read-only properties after a restore (may be NULL) */
  void (*publish)(GstTxlScorerBase *self);

  /* ---- snapshots: this element's part ---- */
  /* its section (gst_txl_text_put writes the text's part) */
  GBytes *(*save_own)(GstTxlScorerBase *self);
  /* the library's snapshot of the scorer, with the sections */
  gboolean (*save)(GstTxlScorerBase *self, const gchar *path,
                   const TxlSnapshotOptions *o, GHashTable *sect,
                   gsize *bytes, GError **error);
  /* the library's part of a file (check_only: never applied) */
  gpointer (*load)(GstTxlScorerBase *self, const gchar *path,
                   gboolean check_only, GHashTable **sect, GError **error);
  void (*drop_loaded)(gpointer loaded);
  /* its section, checked against what load returned */
  gpointer (*parse_own)(GstTxlScorerBase *self, GBytes *own,
                        gpointer loaded, GError **error);
  void (*drop_own)(gpointer own);
  /* both go in (taken) */
  void (*apply)(GstTxlScorerBase *self, gpointer loaded, gpointer own);
  /* the message for a file without its section, path as %s */
  const gchar *not_ours;
};

/* What became of txltokenizer's request to pause the stream in the
 * end-of-stream snapshot (TXL_PARTS_PAUSE), for the EOS that follows. */
typedef enum {
  GST_TXL_PAUSE_NONE,   /* not asked: EOS pauses by itself (hold-at-eos) */
  GST_TXL_PAUSE_DONE,   /* written: EOS only tells the sink to hold */
  GST_TXL_PAUSE_FAILED, /* not written: EOS ends the stream */
} GstTxlPause;

struct _GstTxlScorerBase {
  GstElement parent;
  GstPad *sinkpad, *srcpad;

  /* properties, object lock */
  gchar *model_path;
  gint segment, mem_len, same_length, clamp_len;
  gboolean flush_on_newline;
  guint64 state_bytes; /* read-only, published by the subclass */

  /* from READY */
  TxlModel *model;
  GstCaps *refused; /* caps already refused with an error */

  /* streaming state, under the sink pad's stream lock */
  GstTxlText text;
  gboolean text_first; /* the buffer being scored brought the first text */
  /* the last timestamps received: what goes out stamps, and a completed
   * line's time for learn-warmup-seconds */
  GstClockTime last_pts, last_dts;
  guint64 in_tokens; /* tokens received in this stream */
  guint64 out_count; /* buffers (and events) txlsink has taken */
  GstTxlLearn *learning; /* learn=true: the subclass starts it with its
                          * stream, the base frees it with the stream and
                          * ends it at EOS */

  /* snapshot settings, object lock */
  TxlSnapSched snap; /* location, interval, tokens; requests, timers */
  gboolean restore;
  gboolean hold_at_eos;
  TxlSnapshotPrecision snap_precision;
  /* snapshot state, under the sink pad's stream lock */
  GHashTable *restored;       /* neighbours' sections of a restore at start */
  gboolean tokenizer_fetched; /* txltokenizer took its restored state */
  gboolean restored_fresh;    /* the next STREAM_START continues the stream */
  gint64 expect_offset;       /* after a live restore: first token of the
                               * next input buffer (-1: any) */
  GstTxlPause pause;          /* txltokenizer's pause before EOS */
};

/* The hooks every scorer implements, by the convention that its file names
 * them as the hooks (static functions; push_out's is push_scored), filled
 * in by one line of its class_init instead of the same list in each; what
 * load() reads is a GstTxlLearnLoaded (txllearn.h) in both. */
#define GST_TXL_SCORER_BASE_SET_COMMON_HOOKS(base_class)                     \
  G_STMT_START {                                                             \
    (base_class)->new_stream = new_stream;                                   \
    (base_class)->free_stream = free_stream;                                 \
    (base_class)->live = live;                                               \
    (base_class)->progress = progress;                                       \
    (base_class)->score = score;                                             \
    (base_class)->push_out = push_scored;                                    \
    (base_class)->finish = finish;                                           \
    (base_class)->stream_start = stream_start;                               \
    (base_class)->save = save;                                               \
    (base_class)->load = load;                                               \
    (base_class)->drop_loaded = gst_txl_learn_loaded_free;                   \
  } G_STMT_END

/* The stream options of the properties (object lock taken). */
void gst_txl_scorer_base_stream_options(GstTxlScorerBase *self,
                                        TxlStreamOptions *o, int *segment,
                                        gboolean *flush_on_newline);
/* A fresh stream in place of the old one (for stream_start, after the
 * old one is finished). */
gboolean gst_txl_scorer_base_new_stream(GstTxlScorerBase *self,
                                        GError **error);
/* state-bytes for other threads to read */
void gst_txl_scorer_base_set_state_bytes(GstTxlScorerBase *self,
                                         guint64 bytes);
/* hold-at-eos with a snapshot-location */
gboolean gst_txl_scorer_base_holds_at_eos(GstTxlScorerBase *self);
/* Writes a snapshot now (stream lock held): TXL_SNAP_DEFER while a
 * neighbour's state does not fit ours (buffers in flight). */
TxlSnapResult gst_txl_scorer_base_snapshot(GstTxlScorerBase *self,
                                           const gchar *path,
                                           const gchar *reason);
/* Loads a snapshot: ours now, the neighbours' parts now (live) or when
 * they start (at_start).  Nothing changes unless every part checks out. */
gboolean gst_txl_scorer_base_restore(GstTxlScorerBase *self,
                                     const gchar *path, gboolean at_start,
                                     GError **error);
/* The rest of a restore once the file is loaded and this element's
 * section parsed (parse_own): the neighbours' parts of sect checked (live),
 * then loaded and own (taken) go in; sect is not taken.  Apart from
 * restore() so that fuzz/fuzz_elements.c applies a parsed section the
 * same way without writing a file. */
gboolean gst_txl_scorer_base_restore_parsed(GstTxlScorerBase *self,
                                            GHashTable *sect, gpointer loaded,
                                            gpointer own, gboolean at_start,
                                            GError **error);
/* For the apply hook: the restored stream's counts, its text and its
 * learning in place of the stream's (taken: text is left without data,
 * *learning NULL). */
void gst_txl_scorer_base_apply_stream(GstTxlScorerBase *self,
                                      guint64 in_tokens, guint64 out_count,
                                      GstTxlText *text,
                                      GstTxlLearn **learning);
/* gsttxlscorerbase_snap.c's, for the scheduler */
extern const TxlSnapOps gst_txl_scorer_base_snap_ops;
GstFlowReturn gst_txl_scorer_base_score_error(GstTxlScorerBase *self,
                                              GError *err);

/* ---- the text passed through (txltext.c) ---- */

void gst_txl_text_reset(GstTxlText *t);
void gst_txl_text_clear(GstTxlText *t);
/* Takes a buffer's text meta; a gap in the offsets starts over when
 * restart_on_gap, else is only logged.  TRUE at the first text. */
gboolean gst_txl_text_take(GstTxlText *t, GstBuffer *buf,
                           gboolean restart_on_gap, GstElement *log);
/* Bytes that may go out: all, or up to frontier. */
gsize gst_txl_text_ready(const GstTxlText *t, guint64 frontier,
                         gboolean all);
/* Puts the first n bytes on buf as a text meta (when text came). */
void gst_txl_text_attach(const GstTxlText *t, GstBuffer *buf, gsize n);
/* The first n bytes went out. */
void gst_txl_text_consume(GstTxlText *t, gsize n);
/* In a snapshot section: started, offset, the bytes, frontier. */
void gst_txl_text_put(GByteArray *b, const GstTxlText *t);
gboolean gst_txl_text_get(TxlReader *r, GstTxlText *t);

G_END_DECLS

#endif
