/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Interleaved sessions: one recurrent memory per session key.
 *
 * A log such as HDFS interleaves many sessions (blocks, requests); each is
 * best modelled as its own stream.  TxlSessions finds a line's session key
 * with a GRegex, keeps per session only what a stream remembers (the
 * memory rows, exported from the stream) and the tokens waiting for their
 * segment, and runs every segment on one shared worker stream: the
 * session's memory is imported before and exported after (lazily: while
 * the same session keeps the worker nothing moves).  Import and export are
 * exact copies, so each session's scores are bit for bit those of a
 * TxlScorer fed that session's tokens alone.
 *
 * Segments are cut exactly as txl_scorer cuts them (inputs t0..t(N-1)
 * predict t1..tN); with flush_lines the pending partial segment is also run
 * at each line end, as txl_scorer_finish() would, so a line's score is
 * known when the line is pushed. */
#include "sessions_internal.h"
#include "record.h"
#include "stream_state.h"

#include <math.h>
#include <string.h>

gint
txl_sessions_cmp_deadline(gconstpointer a, gconstpointer b)
{
  const Session *x = a, *y = b;
  if (x->deadline != y->deadline)
    return x->deadline < y->deadline ? -1 : 1;
  return (x->r.first_line > y->r.first_line) -
         (x->r.first_line < y->r.first_line);
}

#define SESSION_OVERHEAD 160 /* hash entry and allocator slack, counted */

static void
collect_token(int32_t id, gint64 line, gsize start, gsize end, gpointer p)
{
  TxlSessions *s = p;
  g_array_append_val(s->ids, id);
}

static guint64
session_bytes(const TxlSessions *s, const Session *x)
{
  gsize state = txl_stream_state_floats(s->worker, x->mlen) * sizeof(float);
  return sizeof(Session) + SESSION_OVERHEAD + strlen(x->key) + 1 +
         (gsize)(s->seg + 1) * sizeof(int32_t) +
         x->lines.length * (sizeof(Line) + 3 * sizeof(gpointer)) + state;
}

void
txl_sessions_account(TxlSessions *s, Session *x)
{
  guint64 b = session_bytes(s, x);
  s->bytes = s->bytes - x->bytes + b;
  x->bytes = b;
}

guint64
txl_sessions_session_max_bytes(const TxlSessions *s)
{
  /* a session at full memory with every pending token its own line, and a
   * 64-byte key */
  gsize state = txl_stream_state_floats(s->worker,
                                        txl_stream_mem_len(s->worker));
  return sizeof(Session) + SESSION_OVERHEAD + 65 +
         (gsize)(s->seg + 1) * (sizeof(int32_t) + sizeof(Line) +
                                3 * sizeof(gpointer)) +
         state * sizeof(float);
}

TxlSessions *
txl_sessions_new(TxlModel *m, const TxlSessionOptions *opts,
                 TxlSessionLineFunc line_func, TxlSessionEndFunc end_func,
                 gpointer user_data, GError **error)
{
  TxlSessionOptions o = TXL_SESSION_OPTIONS_DEFAULT;
  if (opts)
    o = *opts;
  if ((int)o.score < 0 || o.score > TXL_SESSION_SCORE_MEAN) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                "unknown session score %d", (int)o.score);
    return NULL;
  }
  GRegex *re = NULL;
  if (o.key_regex && o.key_regex[0]) {
    GError *e = NULL;
    re = g_regex_new(o.key_regex, G_REGEX_OPTIMIZE, 0, &e);
    if (!re) {
      g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                  "bad session key regex '%s': %s", o.key_regex, e->message);
      g_error_free(e);
      return NULL;
    }
    int groups = g_regex_get_capture_count(re);
    if (o.key_group < 0 || o.key_group > groups) {
      g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                  "session key group %d: the regex '%s' has %d capture "
                  "group%s", o.key_group, o.key_regex, groups,
                  groups == 1 ? "" : "s");
      g_regex_unref(re);
      return NULL;
    }
  }
  int seg = o.segment > 0 ? o.segment : m->cfg.tgt_len;
  TxlStreamOptions so = o.stream;
  so.max_segment = seg;
  TxlStream *w = txl_stream_new(m, &so, error);
  if (!w) {
    if (re)
      g_regex_unref(re);
    return NULL;
  }
  TxlSessions *s = g_new0(TxlSessions, 1);
  s->m = txl_model_ref(m);
  s->o = o;
  s->o.key_regex = NULL; /* the caller's string is not kept */
  if (o.idle_after && o.n_idle_after > 0) {
    s->idle_after = g_memdup2(o.idle_after, sizeof(double) * o.n_idle_after);
    s->deadlines = g_tree_new(txl_sessions_cmp_deadline);
  } else {
    s->o.n_idle_after = 0;
  }
  s->o.idle_after = NULL;
  s->re = re;
  s->worker = w;
  s->seg = seg;
  s->lp = g_new(float, seg);
  s->by_key = g_hash_table_new(g_str_hash, g_str_equal);
  g_queue_init(&s->lru);
  s->line_func = line_func;
  s->end_func = end_func;
  s->data = user_data;
  s->ids = g_array_new(FALSE, FALSE, sizeof(int32_t));
  const TxlTokenizer *tok = txl_model_tokenizer(m);
  if (txl_tokenizer_type(tok) != TXL_TOKENIZER_NONE) {
    s->enc = txl_encoder_new(tok, collect_token, s);
    /* the tokens of a line end, for the primer and the end marker */
    txl_encoder_push(s->enc, "\n", 1);
    if (s->ids->len >= 1 && s->ids->len <= G_N_ELEMENTS(s->nl)) {
      s->n_nl = (int)s->ids->len;
      memcpy(s->nl, s->ids->data, sizeof(int32_t) * s->n_nl);
    }
    g_array_set_size(s->ids, 0);
  }
  if (s->o.max_bytes > 0 &&
      s->o.max_bytes < txl_sessions_session_max_bytes(s)) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                "max_bytes %" G_GUINT64_FORMAT " is below what one session "
                "can need (%" G_GUINT64_FORMAT " bytes)", s->o.max_bytes,
                txl_sessions_session_max_bytes(s));
    txl_sessions_free(s);
    return NULL;
  }
  return s;
}

void
txl_sessions_session_free(Session *x)
{
  g_free(x->key);
  g_free(x->pend);
  g_free(x->state);
  g_queue_clear_full(&x->lines, g_free);
  if (x->ids)
    g_array_unref(x->ids);
  if (x->kept)
    g_array_unref(x->kept);
  g_free(x);
}

void
txl_sessions_drop_ids(TxlSessions *s, Session *x)
{
  if (!x->ids)
    return;
  s->kept_ids -= x->ids->len;
  g_clear_pointer(&x->ids, g_array_unref);
  g_clear_pointer(&x->kept, g_array_unref);
}

void
txl_sessions_free(TxlSessions *s)
{
  if (!s)
    return;
  for (GList *it = s->lru.head; it;) {
    GList *next = it->next;
    txl_sessions_session_free(it->data);
    it = next;
  }
  g_hash_table_destroy(s->by_key);
  if (s->deadlines)
    g_tree_destroy(s->deadlines);
  g_free(s->idle_after);
  if (s->enc)
    txl_encoder_free(s->enc);
  g_array_free(s->ids, TRUE);
  g_free(s->lp);
  txl_stream_free(s->worker);
  if (s->re)
    g_regex_unref(s->re);
  txl_model_unref(s->m);
  g_free(s);
}

/* ---- the worker ------------------------------------------------------ */

static void
park(TxlSessions *s)
{
  Session *x = s->resident;
  if (!x)
    return;
  gsize nf = txl_stream_state_floats(s->worker, txl_stream_mem_used(s->worker));
  if (nf != x->state_floats) {
    g_free(x->state);
    x->state = g_new(float, nf);
    x->state_floats = nf;
  }
  txl_stream_state_export(s->worker, x->state, &x->mlen, &x->has_last);
  s->resident = NULL;
}

static gboolean
take_worker(TxlSessions *s, Session *x, GError **error)
{
  if (s->resident == x)
    return TRUE;
  park(s);
  if (!x->started) {
    txl_stream_reset(s->worker);
  } else if (!txl_stream_state_import(s->worker, x->state, x->mlen,
                                      x->has_last, error)) {
    return FALSE;
  }
  /* the copy in the session is stale from here on */
  g_clear_pointer(&x->state, g_free);
  x->state_floats = 0;
  s->resident = x;
  return TRUE;
}

/* A scored token's part in its session's result: the end marker's counts
 * in end_nll only, but a non-finite one breaks the session too. */
static void
result_add_token(TxlSessionResult *r, gboolean marker, double nll)
{
  if (!isfinite(nll)) {
    r->nonfinite++;
    r->tokens += !marker;
  } else if (!marker) {
    r->tokens++;
    r->nll += nll;
    r->max_token = MAX(r->max_token, nll);
  }
}

/* A line's part once its ntok tokens are scored: sum, their finite nll;
 * broken, one was not.  End marker: +inf, not NaN (NaN means "not scored"
 * here). */
static void
result_add_line(TxlSessionResult *r, gboolean marker, int ntok, double sum,
                gboolean broken)
{
  if (marker) {
    r->end_nll = broken ? INFINITY : sum;
  } else if (ntok > 0 && !broken) {
    r->max_line_mean = MAX(r->max_line_mean, sum / ntok);
    r->max_line_sum = MAX(r->max_line_sum, sum);
  }
}

static void
emit_ready_lines(TxlSessions *s, Session *x)
{
  Line *l;
  while ((l = g_queue_peek_head(&x->lines)) && l->done >= l->ntok) {
    g_queue_pop_head(&x->lines);
    TxlSessionResult *r = &x->r;
    const TxlLineScore *ls = &l->acc.s;
    result_add_line(r, l->seq == 0, l->ntok, ls->nll, ls->nonfinite > 0);
    if (l->seq > 0) {
      r->lines++;
      r->bytes += l->bytes;
      if (s->line_func) {
        TxlSessionLine out = { l->seq, x->key, l->ntok, l->bytes, ls->nll,
                               l->ntok > 0 ? ls->max_token : 0.0,
                               ls->norm_bytes, txl_line_bpb(ls), ls->window,
                               txl_line_worst(ls), ls->nonfinite };
        s->line_func(&out, s->data);
      }
    }
    g_free(l);
  }
}

static gboolean
run(TxlSessions *s, Session *x, int n, GError **error)
{
  if (!take_worker(s, x, error))
    return FALSE;
  if (!txl_stream_forward(s->worker, x->pend, n, x->pend + 1, s->lp, error))
    return FALSE;
  x->started = TRUE;
  x->mlen = txl_stream_mem_used(s->worker);
  GList *it = x->lines.head;
  for (int i = 0; i < n; i++) {
    while (it && ((Line *)it->data)->done >= ((Line *)it->data)->ntok)
      it = it->next;
    double nll = -(double)s->lp[i];
    if (it) { /* always: every scored token belongs to a pushed line */
      Line *l = it->data;
      l->done++;
      txl_line_acc_add(&l->acc, nll,
                       txl_token_norm_bytes(txl_model_tokenizer(s->m),
                                            x->pend[i + 1]));
      result_add_token(&x->r, l->seq == 0, nll);
    }
  }
  memmove(x->pend, x->pend + n, sizeof(int32_t) * (x->npend - n));
  x->npend -= n;
  emit_ready_lines(s, x);
  return TRUE;
}

/* rescore: keeps a line's ids, within the bounds (the session used
 * longest ago gives its up first; one over its own bound gives up its). */
static void
keep_ids(TxlSessions *s, Session *x, gint64 seq, int ntok, const int32_t *ids,
         gsize n)
{
  if (!x->ids)
    return;
  if (x->ids->len + n > TXL_SESSIONS_RESCORE_MAX_ONE) {
    txl_sessions_drop_ids(s, x);
    return;
  }
  for (GList *it = s->lru.tail;
       it && s->kept_ids + n > TXL_SESSIONS_RESCORE_MAX_ALL; it = it->prev)
    if (it->data != x)
      txl_sessions_drop_ids(s, it->data);
  KeptLine k = { seq, ntok };
  g_array_append_val(x->kept, k);
  g_array_append_vals(x->ids, ids, (guint)n);
  s->kept_ids += n;
}

/* Adds one line's tokens (seq 0: the end marker) to a session. */
static gboolean
session_push(TxlSessions *s, Session *x, gint64 seq, const int32_t *ids,
             gsize n, gsize bytes, gboolean flush, GError **error)
{
  const int n_token = s->m->cfg.n_token;
  for (gsize i = 0; i < n; i++) {
    if (ids[i] < 0 || ids[i] >= n_token) {
      g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                  "token %zu of the line has id %d, outside the vocabulary "
                  "[0, %d)", i, ids[i], n_token);
      return FALSE;
    }
  }
  Line *l = g_new0(Line, 1);
  l->seq = seq;
  l->bytes = bytes;
  txl_line_acc_init(&l->acc);
  /* a session's very first token has nothing before it to be predicted from */
  l->ntok = (int)n - (x->seen == 0 && n > 0);
  g_queue_push_tail(&x->lines, l);
  keep_ids(s, x, seq, l->ntok, ids, n);
  for (gsize i = 0; i < n; i++) {
    x->pend[x->npend++] = ids[i];
    x->seen++;
    if (x->npend == s->seg + 1 && !run(s, x, s->seg, error))
      return FALSE;
  }
  if (flush && x->npend >= 2 && !run(s, x, x->npend - 1, error))
    return FALSE;
  emit_ready_lines(s, x);
  return TRUE;
}

static Session *
session_new(TxlSessions *s, const char *key)
{
  Session *x = g_new0(Session, 1);
  x->key = g_strdup(key);
  x->lru.data = x;
  x->pend = g_new(int32_t, s->seg + 1);
  g_queue_init(&x->lines);
  x->r.key = x->key;
  x->r.end_nll = NAN;
  g_hash_table_insert(s->by_key, x->key, x);
  g_queue_push_head_link(&s->lru, &x->lru);
  txl_sessions_account(s, x);
  /* the primer: a line end before the first line, as in training text
   * where a session follows a line end */
  if (s->o.prime && s->n_nl > 0) {
    for (int i = 0; i < s->n_nl; i++)
      x->pend[x->npend++] = s->nl[i];
    x->seen = s->n_nl;
  }
  if (s->o.rescore) {
    x->ids = g_array_new(FALSE, FALSE, sizeof(int32_t));
    x->kept = g_array_new(FALSE, FALSE, sizeof(KeptLine));
    g_array_append_vals(x->ids, x->pend, (guint)x->npend);
    s->kept_ids += (guint)x->npend;
  }
  return x;
}

/* rescore: the session's result again, from its kept ids run from an
 * empty memory through the weights in use, in segments as it was first
 * scored; each token and line counts as run() and emit_ready_lines()
 * count them (result_add_token, result_add_line; the lines in turn, each
 * its ntok tokens).  The worker's memory is the session's then: no
 * session is resident after it. */
static gboolean
rescore(TxlSessions *s, Session *x, GError **error)
{
  park(s);
  txl_stream_reset(s->worker);
  const int32_t *ids = (const int32_t *)x->ids->data;
  const KeptLine *kl = (const KeptLine *)x->kept->data;
  int n_ids = (int)x->ids->len, n_lines = (int)x->kept->len;
  TxlSessionResult r = x->r;
  r.tokens = 0;
  r.nonfinite = 0;
  r.nll = r.max_line_mean = r.max_line_sum = r.max_token = 0.0;
  int li = 0, done = 0;
  double sum = 0.0; /* the line's finite tokens */
  gint64 bad = 0;   /* its non-finite ones */
  for (int at = 0; at + 1 < n_ids;) {
    int n = MIN(s->seg, n_ids - 1 - at);
    if (!txl_stream_forward(s->worker, ids + at, n, ids + at + 1, s->lp,
                            error))
      return FALSE;
    for (int i = 0; i < n; i++) {
      while (li < n_lines && done >= kl[li].ntok) {
        li++;
        done = 0;
      }
      if (li == n_lines)
        break; /* not reached: the lines hold every scored token */
      double nll = -(double)s->lp[i];
      gboolean marker = kl[li].seq == 0;
      result_add_token(&r, marker, nll);
      if (isfinite(nll))
        sum += nll;
      else
        bad++;
      if (++done == kl[li].ntok) {
        result_add_line(&r, marker, kl[li].ntok, sum, bad > 0);
        sum = 0.0;
        bad = 0;
      }
    }
    at += n;
  }
  x->r = r;
  return TRUE;
}

/* A result's score by the session-score option (the end marker counted
 * where it was scored).  A broken score never reads as a low one: +inf is
 * above any threshold (and is written as JSON null, flagged). */
static void
set_score(const TxlSessions *s, TxlSessionResult *r)
{
  switch (s->o.score) {
  case TXL_SESSION_SCORE_MAX_LINE:
    r->score = r->max_line_mean;
    break;
  case TXL_SESSION_SCORE_MAX_LINE_SUM:
    r->score = r->max_line_sum;
    break;
  case TXL_SESSION_SCORE_MAX_TOKEN:
    r->score = r->max_token;
    break;
  case TXL_SESSION_SCORE_MEAN:
    r->score = r->tokens ? r->nll / r->tokens : 0.0;
    break;
  }
  if (isfinite(r->end_nll))
    r->score = s->o.score == TXL_SESSION_SCORE_MEAN
                 ? (r->nll + r->end_nll) / (r->tokens + 1)
                 : MAX(r->score, r->end_nll);
  if (r->nonfinite)
    r->score = INFINITY;
}

/* Ends a session: scores what is pending (and the end marker), reports. */
static gboolean
session_end(TxlSessions *s, Session *x, TxlSessionEnd reason, GError **error)
{
  gboolean ok = TRUE;
  if (x->timed) {
    g_tree_remove(s->deadlines, x);
    x->timed = FALSE;
  }
  /* the end marker only where the session is known to be over */
  if (s->o.score_end && s->n_nl > 0 && x->seen > 0 &&
      (reason == TXL_SESSION_END_CLOSED || reason == TXL_SESSION_END_IDLE))
    ok = session_push(s, x, 0, s->nl, s->n_nl, 0, FALSE, error);
  if (ok && x->npend >= 2)
    ok = run(s, x, x->npend - 1, error);
  if (ok)
    emit_ready_lines(s, x);
  /* rescore: the lower of the two scores, as scored and scored again.
   * Weights that learnt after a session's first lines may find them
   * costlier than the weights that scored them did (they forgot), or
   * cheaper (the first weights were stale): a session is judged costly
   * only when both find it so. */
  if (ok && x->stale && x->ids) {
    TxlSessionResult before = x->r;
    set_score(s, &before);
    ok = rescore(s, x, error);
    if (ok) {
      set_score(s, &x->r);
      if (!(x->r.score < before.score))
        x->r = before;
    }
  }
  txl_sessions_drop_ids(s, x);
  if (s->resident == x)
    s->resident = NULL;
  g_hash_table_remove(s->by_key, x->key);
  g_queue_unlink(&s->lru, &x->lru);
  s->bytes -= x->bytes;
  if (ok) {
    TxlSessionResult *r = &x->r;
    r->reason = reason;
    set_score(s, r);
    s->ended[reason]++;
    if (s->end_func)
      s->end_func(r, s->data);
  }
  txl_sessions_session_free(x);
  return ok;
}

static gboolean
enforce_bounds(TxlSessions *s, Session *keep, GError **error)
{
  for (;;) {
    GList *tail = s->lru.tail;
    if (!tail)
      return TRUE;
    Session *x = tail->data;
    TxlSessionEnd why;
    if (s->o.idle_lines > 0 && s->seq - x->last_seq >= (gint64)s->o.idle_lines &&
        x != keep)
      why = TXL_SESSION_END_IDLE;
    else if (x != keep &&
             ((s->o.max_sessions > 0 && s->lru.length > s->o.max_sessions) ||
              (s->o.max_bytes > 0 && s->bytes > s->o.max_bytes)))
      why = TXL_SESSION_END_EVICTED;
    else
      return TRUE;
    if (!session_end(s, x, why, error))
      return FALSE;
  }
}

/* Ends the sessions whose idle_after deadline the clock has passed, those
 * that passed it first first. */
static gboolean
expire(TxlSessions *s, GError **error)
{
  if (!s->deadlines)
    return TRUE;
  for (;;) {
    GTreeNode *n = g_tree_node_first(s->deadlines);
    if (!n)
      return TRUE;
    Session *x = g_tree_node_key(n);
    if (!(s->now > x->deadline))
      return TRUE;
    if (!session_end(s, x, TXL_SESSION_END_IDLE, error))
      return FALSE;
  }
}

gboolean
txl_sessions_set_time(TxlSessions *s, double t, GError **error)
{
  s->time_set = TRUE;
  if (t > s->now)
    s->now = t;
  return expire(s, error);
}

char *
txl_sessions_key(TxlSessions *s, const char *line, gssize len)
{
  if (!s->re)
    return g_strdup("");
  if (len < 0)
    len = strlen(line);
  GMatchInfo *mi = NULL;
  char *key = NULL;
  if (g_regex_match_full(s->re, line, len, 0, 0, &mi, NULL))
    key = g_match_info_fetch(mi, s->o.key_group);
  g_match_info_free(mi);
  return key;
}

gint64
txl_sessions_push_tokens(TxlSessions *s, const char *key,
                         const int32_t *ids, gsize n, gsize bytes,
                         GError **error)
{
  if (!key)
    key = "";
  if (!s->time_set) /* the clock counts lines */
    s->now = (double)(s->seq + 1);
  /* a session idle beyond its timeout has ended, this line's too */
  if (!expire(s, error))
    return -1;
  Session *x = g_hash_table_lookup(s->by_key, key);
  gboolean fresh = x == NULL;
  if (!x)
    x = session_new(s, key);
  else if (s->lru.head != &x->lru) {
    g_queue_unlink(&s->lru, &x->lru);
    g_queue_push_head_link(&s->lru, &x->lru);
  }
  gint64 seq = ++s->seq;
  if (fresh)
    x->r.first_line = seq;
  x->r.last_line = seq;
  x->last_seq = seq;
  x->n_lines++;
  if (!session_push(s, x, seq, ids, n, bytes, s->o.flush_lines, error))
    return -1;
  if (s->deadlines) {
    if (x->timed)
      g_tree_remove(s->deadlines, x);
    x->deadline = s->now + s->idle_after[MIN((guint64)x->n_lines,
                                             s->o.n_idle_after) - 1];
    g_tree_insert(s->deadlines, x, x);
    x->timed = TRUE;
  }
  txl_sessions_account(s, x);
  if (!enforce_bounds(s, x, error))
    return -1;
  return seq;
}

gint64
txl_sessions_push_line(TxlSessions *s, const char *line, gssize len,
                       GError **error)
{
  if (!s->enc) {
    g_set_error_literal(error, TXL_ERROR, TXL_ERROR_UNSUPPORTED,
                        "the model has no tokenizer: push token ids with "
                        "txl_sessions_push_tokens()");
    return -1;
  }
  if (len < 0)
    len = strlen(line);
  gboolean has_nl = len > 0 && line[len - 1] == '\n';
  gsize body = has_nl ? (gsize)len - 1 : (gsize)len;
  if (memchr(line, '\n', body)) {
    g_set_error_literal(error, TXL_ERROR, TXL_ERROR_INVALID,
                        "a line may hold a line end only at its end");
    return -1;
  }
  g_autofree char *key = txl_sessions_key(s, line, body);
  g_array_set_size(s->ids, 0);
  txl_encoder_push(s->enc, line, body);
  txl_encoder_push(s->enc, "\n", 1);
  /* a line end is always a token boundary: every token of the line has
   * been reported now */
  /* a record line's header (record.h) is not part of what is scored */
  return txl_sessions_push_tokens(s, key, (const int32_t *)s->ids->data,
                                  s->ids->len,
                                  body + 1 - txl_record_header_len(line, body),
                                  error);
}

gboolean
txl_sessions_end(TxlSessions *s, const char *key, GError **error)
{
  Session *x = g_hash_table_lookup(s->by_key, key ? key : "");
  if (!x)
    return TRUE;
  return session_end(s, x, TXL_SESSION_END_CLOSED, error);
}

gboolean
txl_sessions_finish(TxlSessions *s, GError **error)
{
  /* oldest first, so results come in order of last activity */
  GList *tail;
  while ((tail = s->lru.tail))
    if (!session_end(s, tail->data, s->o.finish_open ? TXL_SESSION_END_OPEN
                                                     : TXL_SESSION_END_CLOSED,
                     error))
      return FALSE;
  return TRUE;
}

/* Only the worker's weights change: s->m stays the model the sessions were
 * made with, whose tokenizer (normalised bytes, primer, end marker) and
 * identity the adapted weights share, but which a model made from trained
 * weights (lib/train/learner.c: a view with no tokenizer of its own) does
 * not carry.  The sessions' exported memories keep their shapes. */
gboolean
txl_sessions_set_model(TxlSessions *s, TxlModel *m, GError **error)
{
  g_return_val_if_fail(s != NULL && m != NULL, FALSE);
  if (!txl_stream_set_model(s->worker, m, error))
    return FALSE;
  /* rescore: what these sessions scored so far came from other weights */
  if (s->o.rescore)
    for (GList *it = s->lru.head; it; it = it->next)
      ((Session *)it->data)->stale |= ((Session *)it->data)->started;
  return TRUE;
}

guint
txl_sessions_count(const TxlSessions *s)
{
  return s->lru.length;
}

const int32_t *
txl_sessions_primer(const TxlSessions *s, gsize *n)
{
  *n = s->o.prime ? (gsize)s->n_nl : 0;
  return s->nl;
}

gint64
txl_sessions_lines(const TxlSessions *s)
{
  return s->seq;
}

static gint
cmp_seq(gconstpointer a, gconstpointer b, gpointer unused)
{
  gint64 x = *(const gint64 *)a, y = *(const gint64 *)b;
  return x < y ? -1 : x > y;
}

void
txl_sessions_waiting_lines(const TxlSessions *s, GArray *out)
{
  guint first = out->len;
  for (GList *it = s->lru.head; it; it = it->next) {
    const Session *x = it->data;
    for (GList *l = x->lines.head; l; l = l->next)
      if (((const Line *)l->data)->seq > 0) /* not the end marker */
        g_array_append_val(out, ((const Line *)l->data)->seq);
  }
  /* each session's lines ascend, the sessions interleave */
  g_qsort_with_data(out->data + (gsize)first * sizeof(gint64),
                    (gint)(out->len - first), sizeof(gint64), cmp_seq, NULL);
}

guint64
txl_sessions_bytes(const TxlSessions *s)
{
  return s->bytes;
}

guint64
txl_sessions_ended(const TxlSessions *s, TxlSessionEnd reason)
{
  return (guint)reason < G_N_ELEMENTS(s->ended) ? s->ended[reason] : 0;
}
