/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Snapshot timing shared by txlmodel and txlsessions (txlsnapsched.h).
 * Both timers run on the system clock's thread and only try the stream
 * lock: a busy streaming thread runs the triggers after its buffer. */
#include "txlsnapsched.h"

#include <string.h>

#define SELF_LOCK(s) GST_OBJECT_LOCK((s)->element)
#define SELF_UNLOCK(s) GST_OBJECT_UNLOCK((s)->element)

G_DEFINE_QUARK(txl-snap-sched, sched)

static TxlSnapSched *
sched_of(gpointer element)
{
  return g_object_get_qdata(element, sched_quark());
}

void
txl_snap_sched_init(TxlSnapSched *s, GstElement *e, GstPad *sinkpad,
                    const TxlSnapOps *ops)
{
  memset(s, 0, sizeof *s);
  s->element = e;
  s->sinkpad = sinkpad;
  s->ops = ops;
  g_object_set_qdata(G_OBJECT(e), sched_quark(), s);
}

void
txl_snap_sched_clear(TxlSnapSched *s)
{
  g_clear_pointer(&s->location, g_free);
  g_clear_pointer(&s->snap_request, g_free);
  g_clear_pointer(&s->restore_request, g_free);
}

gchar *
txl_snap_sched_path(TxlSnapSched *s, const gchar *path)
{
  if (path && *path)
    return g_strdup(path);
  SELF_LOCK(s);
  gchar *p = g_strdup(s->location);
  SELF_UNLOCK(s);
  if (p && !*p)
    g_clear_pointer(&p, g_free);
  return p;
}

gboolean
txl_snap_sched_has_location(TxlSnapSched *s)
{
  SELF_LOCK(s);
  gboolean on = s->location && *s->location;
  SELF_UNLOCK(s);
  return on;
}

void
txl_snap_sched_mark(TxlSnapSched *s)
{
  s->time = g_get_monotonic_time();
  s->seen = s->ops->progress(s->element);
}

static void arm_request_timer(TxlSnapSched *s);

static void
warn_restore(TxlSnapSched *s, GError *err)
{
  GST_ELEMENT_WARNING(s->element, RESOURCE, READ,
                      ("Could not restore the snapshot: %s",
                       err ? err->message : "not started"), (NULL));
}

void
txl_snap_sched_triggers(TxlSnapSched *s)
{
  SELF_LOCK(s);
  gchar *restore_path = g_steal_pointer(&s->restore_request);
  gchar *snap_path = g_steal_pointer(&s->snap_request);
  gchar *loc = g_strdup(s->location);
  guint interval = s->interval;
  guint64 every = s->every;
  SELF_UNLOCK(s);
  if (restore_path) {
    GError *err = NULL;
    if (!s->ops->restore(s->element, restore_path, &err))
      warn_restore(s, err);
    g_clear_error(&err);
    g_free(restore_path);
  }
  if (snap_path) {
    if (s->ops->write(s->element, snap_path, "signal") == TXL_SNAP_DEFER) {
      SELF_LOCK(s);
      if (!s->snap_request)
        s->snap_request = g_steal_pointer(&snap_path);
      SELF_UNLOCK(s);
      arm_request_timer(s);
    }
    g_free(snap_path);
  }
  if (loc && *loc && s->ops->live(s->element)) {
    guint64 now = s->ops->progress(s->element);
    gboolean by_tokens = every && now - s->seen >= every;
    gboolean by_time = interval && now != s->seen &&
                       g_get_monotonic_time() - s->time >=
                           (gint64)interval * G_USEC_PER_SEC;
    if (by_tokens || by_time)
      s->ops->write(s->element, loc, by_tokens ? "tokens" : "interval");
  }
  g_free(loc);
}

/* From a clock thread: the triggers, under the stream lock when it is
 * free; FALSE when it is taken (the stream is busy). */
static gboolean
triggers_if_free(TxlSnapSched *s)
{
  if (!GST_PAD_STREAM_TRYLOCK(s->sinkpad))
    return FALSE;
  if (s->ops->live(s->element))
    txl_snap_sched_triggers(s);
  GST_PAD_STREAM_UNLOCK(s->sinkpad);
  return TRUE;
}

/* a busy stream sees the triggers at its next buffer */
static gboolean
on_snap_timer(GstClock *clock, GstClockTime time, GstClockID id,
              gpointer data)
{
  triggers_if_free(sched_of(data));
  return TRUE;
}

static gboolean
on_request_timer(GstClock *clock, GstClockTime time, GstClockID id,
                 gpointer data)
{
  TxlSnapSched *s = sched_of(data);
  SELF_LOCK(s);
  gboolean current = s->req_timer == id;
  gboolean pending = s->snap_request || s->restore_request;
  if (current)
    g_clear_pointer(&s->req_timer, gst_clock_id_unref);
  SELF_UNLOCK(s);
  if (current && pending && !triggers_if_free(s))
    arm_request_timer(s); /* a request must not wait for data */
  return TRUE;
}

/* A pending callback holds a reference to the element, which owns the
 * scheduler; the callback finds the scheduler through the element. */
static void
wait_async(TxlSnapSched *s, GstClockID id, GstClockCallback cb)
{
  gst_clock_id_wait_async(id, cb, gst_object_ref(s->element),
                          (GDestroyNotify)gst_object_unref);
}

static void
arm_request_timer(TxlSnapSched *s)
{
  GstClock *clock = gst_system_clock_obtain();
  GstClockID id = gst_clock_new_single_shot_id(
      clock, gst_clock_get_time(clock) + 5 * GST_MSECOND);
  gst_object_unref(clock);
  SELF_LOCK(s);
  if (s->req_timer) { /* one is armed already */
    SELF_UNLOCK(s);
    gst_clock_id_unref(id);
    return;
  }
  s->req_timer = gst_clock_id_ref(id);
  SELF_UNLOCK(s);
  wait_async(s, id, on_request_timer);
  gst_clock_id_unref(id);
}

static void
stop_timer(TxlSnapSched *s, GstClockID *slot)
{
  SELF_LOCK(s);
  GstClockID id = g_steal_pointer(slot);
  SELF_UNLOCK(s);
  if (id) {
    gst_clock_id_unschedule(id);
    gst_clock_id_unref(id);
  }
}

void
txl_snap_sched_start(TxlSnapSched *s)
{
  stop_timer(s, &s->snap_timer);
  SELF_LOCK(s);
  guint interval = s->interval;
  gboolean on = s->location && *s->location && interval;
  SELF_UNLOCK(s);
  if (!on)
    return;
  GstClock *clock = gst_system_clock_obtain();
  GstClockID id = gst_clock_new_periodic_id(
      clock, gst_clock_get_time(clock) + interval * GST_SECOND,
      interval * GST_SECOND);
  gst_object_unref(clock);
  SELF_LOCK(s);
  s->snap_timer = gst_clock_id_ref(id);
  SELF_UNLOCK(s);
  wait_async(s, id, on_snap_timer);
  gst_clock_id_unref(id);
}

void
txl_snap_sched_stop(TxlSnapSched *s)
{
  stop_timer(s, &s->snap_timer);
  stop_timer(s, &s->req_timer);
  gchar *loc = txl_snap_sched_path(s, NULL);
  if (loc && s->ops->live(s->element) &&
      s->ops->progress(s->element) != s->seen)
    s->ops->write(s->element, loc, "shutdown");
  g_free(loc);
  SELF_LOCK(s);
  g_clear_pointer(&s->snap_request, g_free);
  g_clear_pointer(&s->restore_request, g_free);
  SELF_UNLOCK(s);
}

static gboolean
request(TxlSnapSched *s, gchar **slot, gchar *path)
{
  SELF_LOCK(s);
  g_free(*slot);
  *slot = path;
  SELF_UNLOCK(s);
  arm_request_timer(s);
  return TRUE;
}

gboolean
txl_snap_sched_snapshot_action(TxlSnapSched *s, const gchar *path)
{
  gchar *p = txl_snap_sched_path(s, path);
  if (!p) {
    GST_WARNING_OBJECT(s->element,
                       "snapshot: no path and no snapshot-location");
    return FALSE;
  }
  if (!GST_PAD_STREAM_TRYLOCK(s->sinkpad))
    return request(s, &s->snap_request, p);
  gboolean ok = s->ops->live(s->element);
  if (ok) {
    TxlSnapResult r = s->ops->write(s->element, p, "signal");
    if (r == TXL_SNAP_DEFER)
      request(s, &s->snap_request, g_steal_pointer(&p));
    ok = r != TXL_SNAP_FAIL;
  }
  GST_PAD_STREAM_UNLOCK(s->sinkpad);
  g_free(p);
  return ok;
}

gboolean
txl_snap_sched_restore_action(TxlSnapSched *s, const gchar *path)
{
  gchar *p = txl_snap_sched_path(s, path);
  if (!p)
    return FALSE;
  GError *err = NULL;
  if (!GST_PAD_STREAM_TRYLOCK(s->sinkpad)) {
    if (!s->ops->check(s->element, p, &err)) {
      warn_restore(s, err);
      g_clear_error(&err);
      g_free(p);
      return FALSE;
    }
    return request(s, &s->restore_request, p);
  }
  gboolean ok = s->ops->live(s->element) &&
                s->ops->restore(s->element, p, &err);
  if (!ok)
    warn_restore(s, err);
  g_clear_error(&err);
  GST_PAD_STREAM_UNLOCK(s->sinkpad);
  g_free(p);
  return ok;
}
