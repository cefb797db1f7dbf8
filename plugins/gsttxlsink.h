/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txlsink inside the plugin: the element's state, shared by gsttxlsink.c
 * (writing the lines) and gsttxlsink_snap.c (its part of the pipeline's
 * snapshots), which must see all of it. */
#ifndef GST_TXL_SINK_H
#define GST_TXL_SINK_H

#include "txl_anomaly.h"
#include "gsttxlcommon.h"
#include "txlparts.h"
#include "txl_text.h"

#include <gst/base/gstbasesink.h>
#include <stdio.h>

G_BEGIN_DECLS

#define GST_TYPE_TXL_SINK (gst_txl_sink_get_type())
G_DECLARE_FINAL_TYPE(GstTxlSink, gst_txl_sink, GST, TXL_SINK, GstBaseSink)

/* How a line is judged: against a fixed cost, or against the lines before
 * it (lib/anomaly/baseline.c) so that no threshold has to be known in advance. */
typedef enum {
  TXL_THRESHOLD_FIXED = 0,
  TXL_THRESHOLD_MAD = 1,
  TXL_THRESHOLD_QUANTILE = 2,
  TXL_THRESHOLD_ZSCORE = 3,
  /* the label-free rule over the stream's own recent unflagged lines
   * (txl_baseline_threshold, lib/anomaly/baseline.h), as `txl score`
   * applies it: the default */
  TXL_THRESHOLD_STREAM = 4,
} GstTxlThresholdMode;

#define TEXT_CAP 4096 /* bytes of a line kept for the output */
/* ... and of a record line, whose header comes on top (record.h) */
#define TEXT_CAP_RECORD (TEXT_CAP + TXL_RECORD_MAX_HEADER)

typedef struct {
  gint64 line;
  guint64 bytes;  /* bytes of the line, its line end included */
  guint64 tok_bytes;
  TxlLineAcc acc; /* its score records (the stream's first is not one),
                   * each token counted as its raw bytes */
  gboolean has_meta; /* the scoring element's line scores came: they win */
  TxlLineScore meta;
  guint32 meta_flags; /* TXL_LINE_* of its meta (txlmodel learn=true) */
  gdouble meta_ref;   /* its meta's ref_nll: the model file's cost of the
                       * line, which the stream rule judges relative to
                       * (NaN: none) */
  GString *text;  /* without the line end, at most TEXT_CAP bytes */
  gboolean closed;
} Line;

/* Where txljson takes the output instead of a file (inside it, the
 * stream thread): FALSE when it could not be sent. */
typedef gboolean (*GstTxlSinkEmit)(GstTxlSink *sink, const char *data,
                                   gsize len, gpointer user_data);

struct _GstTxlSink {
  GstBaseSink parent;
  GstTxlSinkEmit emit; /* NULL: the file or standard output */
  gpointer emit_data;

  /* properties, object lock */
  gchar *location;
  gdouble threshold;
  gboolean threshold_set; /* by the application; else the model's calibration
                           * (caps field line-threshold) when it has one */
  GstTxlThresholdMode mode;
  gboolean mode_set; /* by the application; else setting threshold
                      * chooses fixed */
  gdouble z_threshold, quantile;
  gdouble mean, stddev; /* zscore mode: a fixed baseline, bits per byte */
  gint window, warmup;
  gboolean post_scores;
  gboolean text_mode; /* generation: plain text in, written as it comes */
  gboolean per_line;  /* scores as GstTxlLineMeta, no records (txlsessions) */
  TxlBaseline *baseline; /* mad, quantile and stream modes, from start() */

  /* streaming state */
  FILE *out;
  GQueue lines;        /* Line*, in line order, not yet written */
  gint64 written_upto; /* last line written */
  gint64 closed_upto;  /* every line up to this one is complete */
  gint64 text_line;    /* line of the next text byte */
  gboolean have_text;  /* the stream carries text metas */
  TxlRepeats repeats;  /* stream mode with text: kinds flagged lately, a
                        * burst of one kind reported once */
  GstClockTime last_pts;
  /* snapshots: the state above is also read by txlmodel's queries, maybe
   * from another thread (recursive: a signal handler may ask for one) */
  GRecMutex state_lock;
  guint64 records;      /* score records rendered in this stream */
  gboolean held;        /* the stream goes on in a snapshot: keep the
                         * unfinished lines at EOS */
  GBytes *stopped;      /* the state when the element stopped */
  guint64 stopped_records;
  gboolean append;
  /* the file is opened without truncating it, and emptied only at the
   * first write of a stream that is not a restored one: a run that
   * continues a snapshot never wipes the output of the runs before */
  gboolean truncate_pending;
};

/* gsttxlsink.c */
/* Its signals (gsttxlsink.c documents them), by index */
enum {
  GST_TXL_SINK_LINE_SCORED,
  GST_TXL_SINK_TEXT,
  GST_TXL_SINK_SESSION_SCORED,
  GST_TXL_SINK_N_SIGNALS
};
/* Installs them on klass (txlsink's, or txljson's, which are the same),
 * their ids into ids. */
void gst_txl_sink_install_signals(gpointer klass,
                                  guint ids[GST_TXL_SINK_N_SIGNALS]);
void gst_txl_sink_set_emit(GstTxlSink *sink, GstTxlSinkEmit emit,
                           gpointer data);
void gst_txl_sink_line_free(gpointer p);
/* The baseline of the threshold-mode in the properties (object lock
 * taken), NULL for a mode without one (and error unset) or bad settings. */
TxlBaseline *gst_txl_sink_new_baseline(GstTxlSink *self, GError **error);

/* gsttxlsink_snap.c: its part of the snapshots (txlparts.h) */
extern const TxlPart gst_txl_sink_part;
/* its state now (state lock held), kept when it stops: the owner's
 * shutdown snapshot comes after */
GBytes *gst_txl_sink_save_state(GstTxlSink *self);

G_END_DECLS

#endif
