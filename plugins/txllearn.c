/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Learning on the stream inside txlmodel and txlsessions (txllearn.h,
 * docs/learning.md). */
#include "txllearn.h"

#include "txl_anomaly.h"
#include "txl_formats.h"
#include "txl_train.h"

#include <math.h>
#include <string.h>

GST_DEBUG_CATEGORY_STATIC(gst_txl_learn_debug);
#define GST_CAT_DEFAULT gst_txl_learn_debug

/* 2: a model file's cost of each undelivered line meta beside its flags
 * (lib/anomaly/reference.h); a version 1 section loads, its metas without
 * one (judged by their worst part alone) */
#define SECTION_VERSION 2u
/* ids of the open line kept at most in a section (the learner bounds what
 * it keeps itself; a line longer than this is a hostile file) */
#define MAX_LINE_IDS (1u << 26)

/* A complete line on its way to the learner, or a session's end. */
typedef struct {
  GArray *ids;     /* int32_t; NULL: the end of session key */
  gchar *key;      /* grouping sessions: the line's session */
  gboolean flag;   /* an end: the session was flagged */
  gint64 line;
  TxlLineScore s;
  guint done_index;
  gboolean warm;   /* scored with the model file's weights */
  double t;        /* the stream's time, seconds (NaN: none) */
  double ref;      /* the model file's cost of it, nats (NaN: none) */
} Queued;

struct _GstTxlLearn {
  GstElement *owner;
  TxlLearner *learner;
  TxlBaseline *recent; /* unflagged lines scored since the weights changed */
  int gen;             /* adapted weights in use (0: the model file's) */
  GArray *cur_ids;     /* the open line's ids */
  int cur_gen;         /* weights its first record was scored with */
  GArray *queue;       /* Queued, closed since the last run */
  TxlLineRef *ref;     /* the model file's cost of a line: the line rule
                        * judges a line relative to it */
};

static void
init_debug(void)
{
  GST_TXL_DEBUG_CATEGORY_ONCE(gst_txl_learn_debug, "txllearn",
                              "learning on the stream");
}

static void
queued_clear(gpointer p)
{
  Queued *q = p;
  g_clear_pointer(&q->ids, g_array_unref);
  g_clear_pointer(&q->key, g_free);
}

GstTxlLearn *
gst_txl_learn_new(GstElement *owner, TxlModel *base, gint warmup_lines,
                  gdouble warmup_seconds, const GArray *primer,
                  GError **error)
{
  init_debug();
  TxlLearnOptions o = txl_learn_options_default();
  if (warmup_lines > 0)
    o.warmup_lines = warmup_lines;
  o.warmup_seconds = warmup_seconds;
  TxlLearner *learner = txl_learner_new(base, &o, error);
  if (!learner)
    return NULL;
  if (primer && !txl_learner_group_sessions(learner,
                                            (const int32_t *)primer->data,
                                            primer->len, error)) {
    txl_learner_free(learner);
    return NULL;
  }
  TxlLineRef *ref = txl_line_ref_new(base, error);
  if (!ref) {
    txl_learner_free(learner);
    return NULL;
  }
  GstTxlLearn *l = g_new0(GstTxlLearn, 1);
  l->owner = owner;
  l->learner = learner;
  l->ref = ref;
  l->recent = txl_baseline_new(TXL_BASELINE_MAD, TXL_STREAM_RULE_WINDOW,
                               TXL_STREAM_RULE_WARMUP, 0, NULL);
  l->cur_ids = g_array_new(FALSE, FALSE, sizeof(int32_t));
  l->queue = g_array_new(FALSE, FALSE, sizeof(Queued));
  g_array_set_clear_func(l->queue, queued_clear);
  return l;
}

void
gst_txl_learn_free(GstTxlLearn *l)
{
  if (!l)
    return;
  txl_learner_free(l->learner);
  txl_line_ref_free(l->ref);
  txl_baseline_free(l->recent);
  txl_free_each(g_array_unref, l->cur_ids, l->queue);
  g_free(l);
}

/* A line's time for the learner, in seconds (NaN: none). */
static double
seconds_of(GstClockTime pts)
{
  return GST_CLOCK_TIME_IS_VALID(pts) ? (double)pts / GST_SECOND : NAN;
}

void
gst_txl_learn_record(GstTxlLearn *l, const TxlScoreRecord *r,
                     gboolean line_start)
{
  if (line_start) {
    g_array_set_size(l->cur_ids, 0);
    l->cur_gen = l->gen;
  }
  g_array_append_val(l->cur_ids, r->id);
}

/* The model file's cost of a judged line (NaN for a warm-up line, which
 * is never judged). */
static double
reference(GstTxlLearn *l, gboolean warm, const int32_t *ids, guint n)
{
  return warm ? NAN : txl_line_ref_nll(l->ref, ids, n);
}

guint32
gst_txl_learn_close(GstTxlLearn *l, gint64 line, const TxlLineScore *s,
                    guint done_index, GstClockTime pts, gdouble *ref_nll)
{
  gboolean warm = l->cur_gen == 0;
  Queued q = { l->cur_ids, NULL, FALSE, line, *s, done_index, warm,
               seconds_of(pts),
               reference(l, warm, (const int32_t *)l->cur_ids->data,
                         l->cur_ids->len) };
  g_array_append_val(l->queue, q);
  l->cur_ids = g_array_new(FALSE, FALSE, sizeof(int32_t));
  l->cur_gen = l->gen;
  *ref_nll = q.ref;
  return q.warm ? TXL_LINE_WARMUP : 0;
}

guint32
gst_txl_learn_line(GstTxlLearn *l, const gchar *key, const int32_t *ids,
                   guint n, gint64 line, const TxlLineScore *s,
                   guint done_index, GstClockTime pts, gdouble *ref_nll)
{
  GArray *copy = g_array_sized_new(FALSE, FALSE, sizeof(int32_t), n);
  g_array_append_vals(copy, ids, n);
  gboolean warm = l->gen == 0;
  Queued q = { copy, g_strdup(key), FALSE, line, *s, done_index, warm,
               seconds_of(pts), reference(l, warm, ids, n) };
  g_array_append_val(l->queue, q);
  *ref_nll = q.ref;
  return q.warm ? TXL_LINE_WARMUP : 0;
}

void
gst_txl_learn_session_end(GstTxlLearn *l, const gchar *key, gboolean flagged)
{
  Queued q = { .ids = NULL, .key = g_strdup(key), .flag = flagged,
               .t = NAN, .ref = NAN };
  g_array_append_val(l->queue, q);
}

gboolean
gst_txl_learn_pending(const GstTxlLearn *l)
{
  return l->queue->len > 0;
}

gint
gst_txl_learn_rounds(GstTxlLearn *l)
{
  return l->gen;
}

void
gst_txl_learn_ended(GstTxlLearn *l)
{
  if (!l || l->gen > 0)
    return;
  TxlLearnStats st;
  txl_learner_stats(l->learner, &st);
  const TxlLearnOptions *o = txl_learner_options(l->learner);
  g_autofree gchar *secs = o->warmup_seconds > 0
      ? g_strdup_printf(" or learn-warmup-seconds=%g of timestamped "
                        "buffers", o->warmup_seconds)
      : g_strdup("");
  /* the lines were marked warm-up one by one; without this a stream too
   * short to learn from would end as if nothing in it were odd */
  GST_ELEMENT_WARNING(l->owner, STREAM, FAILED,
      ("The stream ended in the learning warm-up: none of its %"
       G_GINT64_FORMAT " lines was judged (learning starts after "
       "learn-warmup=%" G_GINT64_FORMAT " lines%s)", st.lines,
       (gint64)o->warmup_lines, secs), (NULL));
}

/* New weights took over after line: the message, the model file. */
static void
landed(GstTxlLearn *l, gint64 line, const gchar *model_out)
{
  TxlLearnStats st;
  txl_learner_stats(l->learner, &st);
  GST_INFO_OBJECT(l->owner, "learnt round %d after line %" G_GINT64_FORMAT
                  " (%" G_GINT64_FORMAT " steps, loss %.3f -> %.3f "
                  "nats/token, %.1f s)", st.rounds, line, st.steps,
                  st.loss_first, st.loss_last, st.seconds);
  GstStructure *s = gst_structure_new("txl-learn",
      "round", G_TYPE_INT, st.rounds,
      "line", G_TYPE_INT64, line,
      "steps", G_TYPE_INT64, st.steps,
      "loss-first", G_TYPE_DOUBLE, st.loss_first,
      "loss-last", G_TYPE_DOUBLE, st.loss_last,
      "seconds", G_TYPE_DOUBLE, st.seconds, NULL);
  gst_element_post_message(l->owner,
                           gst_message_new_element(GST_OBJECT(l->owner), s));
  GError *err = NULL;
  if (model_out && *model_out &&
      !txl_learner_write_model(l->learner, model_out, &err)) {
    GST_ELEMENT_WARNING(l->owner, RESOURCE, WRITE,
                        ("Could not write the adapted model to \"%s\".",
                         model_out), ("%s", err->message));
    g_clear_error(&err);
  }
}

/* One line, as `txl score --learn` and txlsink's threshold-mode stream
 * judge it (txl_baseline_judge): flagged or not for the learner.  Lines
 * scored with the model file's weights are not the stream's scores. */
static gboolean
judge(GstTxlLearn *l, const Queued *q)
{
  gboolean flag = FALSE;
  if (!q->warm && q->s.tokens > 0)
    txl_baseline_judge(l->recent, txl_line_judged(&q->s, q->ref), &flag);
  return flag;
}

gboolean
gst_txl_learn_run(GstTxlLearn *l, GstTxlSetModelFunc set_model,
                  gpointer target, GArray *landings, const gchar *model_out,
                  GError **error)
{
  gboolean ok = TRUE;
  for (guint i = 0; i < l->queue->len && ok; i++) {
    Queued *q = &g_array_index(l->queue, Queued, i);
    if (!q->ids) {
      txl_learner_session_end(l->learner, q->key, q->flag);
      continue;
    }
    gboolean flag = judge(l, q);
    GError *err = NULL;
    txl_learner_set_time(l->learner, q->t);
    TxlModel *m =
        q->key ? txl_learner_session_line(l->learner, q->key,
                                          (const int32_t *)q->ids->data,
                                          q->ids->len, flag, &err)
               : txl_learner_line(l->learner, (const int32_t *)q->ids->data,
                                  q->ids->len, flag, &err);
    if (m) {
      ok = set_model(target, m, error);
      if (ok) {
        l->gen++;
        /* the new weights score differently: their own scores decide
         * once there are enough of them */
        txl_baseline_restart(l->recent);
        if (landings)
          g_array_append_val(landings, q->done_index);
        landed(l, q->line, model_out);
      }
      txl_model_unref(m);
    } else if (err) {
      GST_ELEMENT_WARNING(l->owner, STREAM, FAILED,
                          ("A round of learning failed: %s", err->message),
                          ("scoring goes on with the last good weights"));
      g_clear_error(&err);
    }
  }
  g_array_set_size(l->queue, 0);
  return ok;
}

/* ---- snapshots ---------------------------------------------------------- */

/* What this section keeps of a line meta: its flags and the model
 * file's cost of its line. */
typedef struct {
  guint32 flags;
  double ref;
} MetaPart;

static gboolean
count_meta(GstBuffer *buf, GstMeta **meta, gpointer data)
{
  if ((*meta)->info->api == GST_TXL_LINE_META_API_TYPE) {
    GstTxlLineMeta *m = (GstTxlLineMeta *)*meta;
    MetaPart p = { m->flags, m->ref_nll };
    g_array_append_val((GArray *)data, p);
  }
  return TRUE;
}

typedef struct {
  GArray *parts; /* MetaPart */
  guint at;
} SetParts;

static gboolean
set_meta(GstBuffer *buf, GstMeta **meta, gpointer data)
{
  SetParts *f = data;
  if ((*meta)->info->api == GST_TXL_LINE_META_API_TYPE &&
      f->at < f->parts->len) {
    const MetaPart *p = &g_array_index(f->parts, MetaPart, f->at++);
    ((GstTxlLineMeta *)*meta)->flags = p->flags;
    ((GstTxlLineMeta *)*meta)->ref_nll = p->ref;
  }
  return TRUE;
}

/* Version, the open line (weights, ids), the recent scores, the flags and
 * model file's costs of the undelivered buffer's line metas, then the
 * learner's state bytes (which wait for a round in flight). */
GBytes *
gst_txl_learn_save(GstTxlLearn *l, GstBuffer *undelivered)
{
  /* the element runs the learner after every call into its scorer, so
   * between buffers nothing waits (an error may have cut a run short) */
  if (l->queue->len)
    GST_WARNING_OBJECT(l->owner, "%u complete lines not yet learnt from "
                       "are left out of the snapshot", l->queue->len);
  GByteArray *b = g_byte_array_new();
  txl_put_u32(b, SECTION_VERSION);
  txl_put_u32(b, l->cur_gen == 0);
  txl_put_u32(b, l->cur_ids->len);
  for (guint i = 0; i < l->cur_ids->len; i++)
    txl_put_u32(b, (guint32)g_array_index(l->cur_ids, int32_t, i));
  GBytes *bl = txl_baseline_save(l->recent);
  gsize bn;
  const guint8 *bd = g_bytes_get_data(bl, &bn);
  txl_put_blob(b, bd, bn);
  g_bytes_unref(bl);
  GArray *parts = g_array_new(FALSE, FALSE, sizeof(MetaPart));
  if (undelivered)
    gst_buffer_foreach_meta(undelivered, count_meta, parts);
  txl_put_u32(b, parts->len);
  for (guint i = 0; i < parts->len; i++) {
    const MetaPart *p = &g_array_index(parts, MetaPart, i);
    txl_put_u32(b, p->flags);
    txl_put_f64(b, p->ref);
  }
  g_array_unref(parts);
  gsize n = txl_learner_state_get_size(l->learner);
  guint at = b->len;
  txl_put_u64(b, n);
  g_byte_array_set_size(b, at + 8 + (guint)n);
  txl_learner_state_get_data(l->learner, b->data + at + 8, n);
  return g_byte_array_free_to_bytes(b);
}

static gboolean
bad(GError **error)
{
  g_set_error_literal(error, TXL_ERROR, TXL_ERROR_FORMAT,
                      "the snapshot's learning state is malformed");
  return FALSE;
}

/* The section's fields into l (a fresh one) and the metas' parts. */
static gboolean
parse(GstTxlLearn *l, int n_token, GBytes *section, GArray *parts,
      GError **error)
{
  TxlReader r;
  guint32 version;
  if (!gst_txl_part_begin(&r, section, &version, "learning", 1,
                          SECTION_VERSION, "afresh", error))
    return FALSE;
  guint32 warm = txl_get_u32(&r), nids = txl_get_u32(&r);
  if (!r.ok || warm > 1 ||
      nids > MAX_LINE_IDS ||
      nids > txl_reader_left(&r) / 4)
    return bad(error);
  for (guint32 i = 0; i < nids; i++) {
    int32_t id = (int32_t)txl_get_u32(&r);
    if (id < 0 || id >= n_token)
      return bad(error);
    g_array_append_val(l->cur_ids, id);
  }
  gsize bn;
  const guint8 *bd = txl_get_blob(&r, &bn, G_MAXUINT32);
  guint32 nflags = r.ok ? txl_get_u32(&r) : 0;
  gsize per = version >= 2 ? 12 : 4;
  if (!r.ok || nflags > txl_reader_left(&r) / per)
    return bad(error);
  for (guint32 i = 0; i < nflags; i++) {
    /* two statements: the fields are read in order (the expressions of
     * an initializer list are not sequenced) */
    MetaPart p = { .ref = NAN };
    p.flags = txl_get_u32(&r);
    if (version >= 2)
      p.ref = txl_get_f64(&r);
    if (p.flags & ~(guint32)(TXL_LINE_WARMUP | TXL_LINE_NEW_WEIGHTS) ||
        !txl_line_ref_valid(p.ref))
      return bad(error);
    g_array_append_val(parts, p);
  }
  gsize ln;
  const guint8 *ld = txl_get_blob(&r, &ln, G_MAXSIZE);
  if (!r.ok || !txl_reader_done(&r))
    return bad(error);
  GBytes *bl = g_bytes_new_static(bd, bn);
  gboolean ok = txl_baseline_restore(l->recent, bl, error) &&
                txl_learner_state_set_data(l->learner, ld, ln, error);
  g_bytes_unref(bl);
  if (!ok)
    return FALSE;
  TxlLearnStats st;
  txl_learner_stats(l->learner, &st);
  l->gen = st.rounds;
  /* only whether the open line began with the model file's weights
   * matters: that makes it a warm-up line */
  l->cur_gen = warm ? 0 : MAX(l->gen, 1);
  return TRUE;
}

GstTxlLearn *
gst_txl_learn_load(GstElement *owner, TxlModel *base, gint warmup_lines,
                   gdouble warmup_seconds, const GArray *primer,
                   GBytes *section, GstTxlSetModelFunc set_model,
                   gpointer target, GstBuffer *undelivered, GError **error)
{
  GstTxlLearn *l = gst_txl_learn_new(owner, base, warmup_lines,
                                     warmup_seconds, primer, error);
  if (!l)
    return NULL;
  GArray *parts = g_array_new(FALSE, FALSE, sizeof(MetaPart));
  gboolean ok = parse(l, txl_model_config(base)->n_token, section, parts,
                      error);
  if (ok) {
    TxlModel *m = txl_learner_model(l->learner);
    if (m)
      ok = set_model(target, m, error);
    txl_model_unref(m);
  }
  if (ok) {
    /* one part per line meta of the buffer a failed push kept */
    SetParts f = { parts, 0 };
    GArray *have = g_array_new(FALSE, FALSE, sizeof(MetaPart));
    if (undelivered)
      gst_buffer_foreach_meta(undelivered, count_meta, have);
    if (have->len != parts->len)
      ok = bad(error);
    else if (undelivered)
      gst_buffer_foreach_meta(undelivered, set_meta, &f);
    g_array_unref(have);
  }
  g_array_unref(parts);
  if (!ok)
    g_clear_pointer(&l, gst_txl_learn_free);
  return l;
}

/* A snapshot's learning section (NULL in *out when it has none) checked
 * against whether the element learns (want); the error names element and
 * path. */
static gboolean
take_section(GHashTable *sect, const gchar *section, gboolean want,
             const gchar *element, const gchar *path, GBytes **out,
             GError **error)
{
  GBytes *learn = g_hash_table_lookup(sect, section);
  *out = NULL;
  if (!learn != !want) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                "%s was written by a %s %s learning: continue it with "
                "learn=%s (or remove it to start afresh)", path, element,
                learn ? "with" : "without", learn ? "true" : "false");
    return FALSE;
  }
  *out = learn ? g_bytes_ref(learn) : NULL;
  return TRUE;
}

gboolean
gst_txl_learn_start(GstElement *owner, GstTxlLearnProps *p, TxlModel *base,
                    const GArray *primer, GstTxlLearn **out, GError **error)
{
  GST_OBJECT_LOCK(owner);
  gboolean on = p->on;
  gint warmup = p->warmup;
  gdouble seconds = p->warmup_seconds;
  p->rounds = 0;
  GST_OBJECT_UNLOCK(owner);
  *out = on ? gst_txl_learn_new(owner, base, warmup, seconds, primer, error)
            : NULL;
  return !on || *out != NULL;
}

/* learn-warmup and learn-warmup-seconds, read under owner's lock (a
 * snapshot's learning continues with them). */
static gint
props_warmup(GstElement *owner, GstTxlLearnProps *p, gdouble *seconds)
{
  GST_OBJECT_LOCK(owner);
  gint warmup = p->warmup;
  *seconds = p->warmup_seconds;
  GST_OBJECT_UNLOCK(owner);
  return warmup;
}

gboolean
gst_txl_learn_step(GstTxlLearn *l, GstTxlLearnProps *p,
                   GstTxlSetModelFunc set_model, gpointer target,
                   GArray *landings, GError **error)
{
  if (!l || !gst_txl_learn_pending(l))
    return TRUE;
  GST_OBJECT_LOCK(l->owner);
  gchar *out = g_strdup(p->model_out);
  GST_OBJECT_UNLOCK(l->owner);
  gboolean ok = gst_txl_learn_run(l, set_model, target, landings, out, error);
  g_free(out);
  gst_txl_learn_publish(l, p);
  return ok;
}

void
gst_txl_learn_publish(GstTxlLearn *l, GstTxlLearnProps *p)
{
  if (!l)
    return;
  guint rounds = (guint)gst_txl_learn_rounds(l);
  GST_OBJECT_LOCK(l->owner);
  p->rounds = rounds;
  GST_OBJECT_UNLOCK(l->owner);
}

/* The element named in a mismatch error: the section's first part
 * ("txlmodel.learn": txlmodel). */
static gchar *
section_element(const gchar *section)
{
  const gchar *dot = strchr(section, '.');
  return dot ? g_strndup(section, (gsize)(dot - section)) : g_strdup(section);
}

GstTxlLearnLoaded *
gst_txl_learn_loaded_new(GstElement *owner, GstTxlLearnProps *p,
                         gpointer state, GDestroyNotify free_state,
                         GHashTable **sect, const gchar *section,
                         const gchar *path, GError **error)
{
  if (!state)
    return NULL;
  GstTxlLearnLoaded *ld = g_new0(GstTxlLearnLoaded, 1);
  ld->state = state;
  ld->free_state = free_state;
  GST_OBJECT_LOCK(owner);
  gboolean want = p->on;
  GST_OBJECT_UNLOCK(owner);
  gchar *element = section_element(section);
  gboolean ok = take_section(*sect, section, want, element, path, &ld->learn,
                             error);
  g_free(element);
  if (!ok) {
    gst_txl_learn_loaded_free(ld);
    g_clear_pointer(sect, g_hash_table_unref);
    return NULL;
  }
  return ld;
}

void
gst_txl_learn_loaded_free(gpointer loaded)
{
  GstTxlLearnLoaded *ld = loaded;
  if (ld->state)
    ld->free_state(ld->state);
  g_clear_pointer(&ld->learn, g_bytes_unref);
  g_free(ld);
}

gpointer
gst_txl_learn_loaded_take(gpointer loaded)
{
  GstTxlLearnLoaded *ld = loaded;
  gpointer state = g_steal_pointer(&ld->state);
  gst_txl_learn_loaded_free(ld);
  return state;
}

GstTxlLearn *
gst_txl_learn_resume(GstElement *owner, GstTxlLearnProps *p, TxlModel *base,
                     const GArray *primer, GstTxlLearnLoaded *loaded,
                     GstTxlSetModelFunc set_model, GstBuffer *undelivered,
                     GError **error)
{
  gdouble seconds;
  gint warmup = props_warmup(owner, p, &seconds);
  return gst_txl_learn_load(owner, base, warmup, seconds, primer,
                            loaded->learn,
                            set_model,
                            loaded->state, undelivered, error);
}

void
gst_txl_learn_save_section(GstTxlLearn *l, GHashTable *sect,
                           const gchar *section, GstBuffer *undelivered)
{
  if (l)
    g_hash_table_insert(sect, g_strdup(section),
                        gst_txl_learn_save(l, undelivered));
}
