/* txlsessions inside the plugin: the element's state, shared by
 * gsttxlsessions.c (scoring) and gsttxlsessions_snap.c (snapshots), which
 * must see all of it. */
#ifndef GST_TXL_SESSIONS_H
#define GST_TXL_SESSIONS_H

#include "gsttxlcommon.h"
#include "txlsnapsched.h"

G_BEGIN_DECLS

GST_DEBUG_CATEGORY_EXTERN(gst_txl_sessions_debug);

#define GST_TYPE_TXL_SESSIONS (gst_txl_sessions_get_type())
G_DECLARE_FINAL_TYPE(GstTxlSessions, gst_txl_sessions, GST, TXL_SESSIONS,
                     GstElement)

/* a pushed line, waiting to go out in line order */
typedef struct {
  gint64 line;      /* the tokenizer's line number */
  guint64 text_end; /* stream offset just past its text */
  gboolean done;    /* scored */
  guint64 bytes;
  TxlLineScore s;   /* its scores (lib/anomaly/lines.h) */
} SLine;

/* first and last line of an open session */
typedef struct {
  gint64 first, last;
} Span;

/* an ended session, sent downstream once its last line has gone out */
typedef struct {
  gint64 last_seq;
  GstStructure *s;
} Ended;

struct _GstTxlSessions {
  GstElement parent;
  GstPad *sinkpad, *srcpad;

  /* properties, object lock */
  gchar *model_path;
  gchar *key;
  gint key_group;
  gint segment, mem_len, same_length, clamp_len;
  gboolean flush_on_newline;
  guint max_sessions;
  guint64 max_memory, idle_lines;
  TxlSessionScore score;
  gdouble threshold;
  gboolean end_marker;
  guint64 state_bytes; /* read-only properties, kept after every line */
  guint open_sessions;
  guint user_set; /* SET_* bits: what the application chose itself; the rest
                   * follows the model file's calibration when it has one */
  gchar *time_format, *idle_after_s, *open_thr_s;

  /* from READY */
  TxlModel *model;
  GstCaps *refused;
  /* streaming state, under the sink pad's stream lock */
  gdouble thr; /* threshold and score kind, read at start */
  TxlSessionScore kind;
  GArray *idle_after; /* doubles, parsed from session-idle-after */
  GArray *open_thr;   /* doubles, parsed from session-open-thresholds */
  gchar *tfmt;        /* session-time-format, NULL: the line clock */
  gdouble now;        /* the last timestamp read */
  TxlSessionOptions opts; /* those of sessions (opts_key, idle_after) */
  gchar *opts_key;
  TxlSessions *sessions;
  GArray *sl;         /* SLine, in push order */
  guint sl_head;      /* first not yet sent */
  gint64 sl_seq0;     /* push number of sl[0] */
  gint64 pushed;      /* lines pushed in this stream */
  GArray *ids;        /* tokens of the line being assembled */
  gint64 cur_line;    /* its line number, 0: none */
  guint64 cur_tok_bytes;
  guint64 line_start; /* stream offset of its first byte */
  GHashTable *spans;  /* key -> Span of the open sessions */
  GQueue ended;       /* Ended*, in the order the sessions ended */
  GArray *done_lines; /* GstTxlDoneLine values to push */
  GByteArray *text;   /* input bytes not yet forwarded */
  guint64 text_offset;
  gboolean text_started;
  guint64 frontier;   /* stream offset up to which lines went out */
  GstClockTime last_pts, last_dts;
  gboolean failed;    /* a callback could not go on */
  guint64 in_tokens;  /* tokens received in this stream */
  guint64 out_items;  /* buffers and session events delivered */

  /* snapshot settings, object lock */
  TxlSnapSched snap;    /* location, interval, tokens; requests, timers */
  gboolean restore;
  gboolean hold_at_eos;
  TxlSnapshotPrecision snap_precision;
  /* snapshot state, under the sink pad's stream lock */
  GHashTable *restored;     /* neighbours' sections of a restore at start */
  gboolean tokenizer_fetched;
  gboolean restored_fresh;  /* the next STREAM_START continues the stream */
  gint64 expect_offset;     /* after a live restore: first token of the
                             * next input buffer (-1: any) */
};

/* gsttxlsessions.c */
void gst_txl_sessions_on_line(const TxlSessionLine *l, gpointer data);
void gst_txl_sessions_on_session(const TxlSessionResult *r, gpointer data);
GstFlowReturn gst_txl_sessions_push_out(GstTxlSessions *self, gboolean all);

/* gsttxlsessions_snap.c: the same snapshots as txlmodel's (snapshot.md) */
/* how this element's state is written, restored and checked, for the
 * snapshot scheduler (txlsnapsched.c), which decides when */
extern const TxlSnapOps gst_txl_sessions_snap_ops;
/* Copies what the open sessions hold into state-bytes / open-sessions
 * (the streaming thread owns the TxlSessions; other threads read these). */
void gst_txl_sessions_note_state(GstTxlSessions *self);
void gst_txl_sessions_snap_install(GObjectClass *klass, guint first_prop);
gboolean gst_txl_sessions_snap_set_property(GstTxlSessions *self, guint id,
                                            const GValue *value);
gboolean gst_txl_sessions_snap_get_property(GstTxlSessions *self, guint id,
                                            GValue *value);
gboolean gst_txl_sessions_holds_at_eos(GstTxlSessions *self);
TxlSnapResult gst_txl_sessions_snapshot(GstTxlSessions *self,
                                        const gchar *path,
                                        const gchar *reason);
gboolean gst_txl_sessions_restore(GstTxlSessions *self, const gchar *path,
                                  gboolean at_start, GError **error);
/* before the first buffer reaches txlsink after a restore at start */
gboolean gst_txl_sessions_restore_sink_pending(GstTxlSessions *self);
/* PAUSED_TO_READY, with the stream lock: timers off, shutdown snapshot */
void gst_txl_sessions_snap_stop(GstTxlSessions *self);
/* txl-state-fetch and txl-state-hold on the sink pad */
gboolean gst_txl_sessions_snap_query(GstTxlSessions *self, GstQuery *query);
void gst_txl_sessions_snap_finalize(GstTxlSessions *self);

G_END_DECLS

#endif
