/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* When a scoring element takes and restores its snapshots: the requests
 * the `snapshot`/`restore` action signals leave, the timer that serves
 * them once the streaming thread lets go of the stream lock, the periodic
 * (snapshot-interval) and token-count (snapshot-tokens) triggers and the
 * shutdown snapshot.  txlmodel and txlsessions say how to write, restore
 * and check their own state (TxlSnapOps); the timing is all here. */
#ifndef TXL_SNAPSCHED_H
#define TXL_SNAPSCHED_H

#include <gst/gst.h>

G_BEGIN_DECLS

typedef enum {
  TXL_SNAP_OK,
  TXL_SNAP_DEFER, /* a neighbour's state does not fit yet: try again */
  TXL_SNAP_FAIL,
} TxlSnapResult;

typedef struct {
  /* with the sink pad's stream lock held; a successful write or restore
   * calls txl_snap_sched_mark() */
  TxlSnapResult (*write)(GstElement *e, const gchar *path,
                         const gchar *reason);
  gboolean (*restore)(GstElement *e, const gchar *path, GError **error);
  /* without the lock: whether the file would load (a busy stream
   * restores it later, so a bad file is refused while the caller waits) */
  gboolean (*check)(GstElement *e, const gchar *path, GError **error);
  /* whether there is a stream, and how far it is (tokens) */
  gboolean (*live)(GstElement *e);
  guint64 (*progress)(GstElement *e);
} TxlSnapOps;

typedef struct {
  GstElement *element;
  GstPad *sinkpad;
  const TxlSnapOps *ops;
  /* properties, under the element's object lock */
  gchar *location;
  guint interval; /* seconds, 0: off */
  guint64 every;  /* tokens, 0: off */
  /* requests and timers, object lock */
  gchar *snap_request, *restore_request;
  GstClockID snap_timer, req_timer;
  /* the streaming thread's: the last snapshot or restore */
  gint64 time; /* monotonic, us */
  guint64 seen; /* progress then */
} TxlSnapSched;

void txl_snap_sched_init(TxlSnapSched *s, GstElement *e, GstPad *sinkpad,
                         const TxlSnapOps *ops);
void txl_snap_sched_clear(TxlSnapSched *s);
/* path when given, else snapshot-location; NULL when neither */
gchar *txl_snap_sched_path(TxlSnapSched *s, const gchar *path);
/* snapshot-location set (object lock taken) */
gboolean txl_snap_sched_has_location(TxlSnapSched *s);
void txl_snap_sched_mark(TxlSnapSched *s);
/* After each input buffer, stream lock held: requests, then the periodic
 * and token-count snapshots. */
void txl_snap_sched_triggers(TxlSnapSched *s);
/* The periodic timer (for a stream gone quiet), at the start. */
void txl_snap_sched_start(TxlSnapSched *s);
/* Timers off, a shutdown snapshot if anything changed since the last one
 * (stream lock held, pads inactive), requests dropped. */
void txl_snap_sched_stop(TxlSnapSched *s);
/* The action signals: never wait for the streaming thread; done at once
 * when the stream is idle, else right after the buffer being scored. */
gboolean txl_snap_sched_snapshot_action(TxlSnapSched *s, const gchar *path);
gboolean txl_snap_sched_restore_action(TxlSnapSched *s, const gchar *path);

G_END_DECLS

#endif
