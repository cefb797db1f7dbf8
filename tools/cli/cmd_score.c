/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txl score: per-token log-probs of an id stream, or per-line scores of a
 * text through the model's tokenizer. */
#include "cmd.h"
#include "score_text.h"
#include "txl.h"
#include "txl_formats.h"
#include "txl_anomaly.h"
#include "txl_engine.h"
#include "txl_train.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define CHUNK 65536

/* txl score's snapshots name their writer, so that a pipeline's file is
 * not continued here nor ours in a pipeline (docs/snapshots.md) */
#define SCORE_WRITER "txl score"

static GHashTable *
writer_sections(void)
{
  GHashTable *t = g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
                                        (GDestroyNotify)g_bytes_unref);
  g_hash_table_insert(t, TXL_SNAPSHOT_WRITER_SECTION,
                      g_bytes_new_static(SCORE_WRITER, strlen(SCORE_WRITER)));
  return t;
}

/* ---- --ids --------------------------------------------------------- */

static void
print_token(gint64 pos, int32_t token, float logprob, gpointer data)
{
  Common *c = data;
  c->scored++;
  if (!isfinite(logprob)) {
    /* JSON has no NaN or infinity: null, and the run fails at the end */
    c->nonfinite++;
    printf("{\"pos\": %" G_GINT64_FORMAT ", \"token\": %d, \"logprob\": "
           "null}\n", pos, token);
    return;
  }
  c->nll_sum -= logprob;
  printf("{\"pos\": %" G_GINT64_FORMAT ", \"token\": %d, \"logprob\": %.9g}\n",
         pos, token, (double)logprob);
}

typedef struct {
  char word[32];
  gsize len;
  gboolean overlong;
  gint64 index;
} IdParser;

static gboolean
flush_id(Common *c, IdParser *p)
{
  if (p->len == 0 && !p->overlong)
    return TRUE;
  p->word[p->len] = '\0';
  char *end = NULL;
  errno = 0;
  long long v = strtoll(p->word, &end, 10);
  /* the whole word, a NUL byte in it included, must be the number */
  gboolean numeric = p->len > 0 && end == p->word + p->len &&
                     (g_ascii_isdigit(p->word[0]) ||
                      (p->word[0] == '-' && p->len > 1));
  if (!numeric) {
    /* shown as it is, bytes that are not printable escaped */
    g_autoptr(GString) shown = g_string_new(NULL);
    for (gsize i = 0; i < p->len; i++) {
      guchar ch = (guchar)p->word[i];
      if (g_ascii_isprint(ch))
        g_string_append_c(shown, (char)ch);
      else
        g_string_append_printf(shown, "\\x%02x", ch);
    }
    g_set_error(&c->error, TXL_ERROR, TXL_ERROR_INVALID,
                "input word %" G_GINT64_FORMAT " ('%s%s') is not a token id",
                p->index + 1, shown->str, p->overlong ? "..." : "");
    return FALSE;
  }
  if (p->overlong || errno == ERANGE || v < 0 || v > G_MAXINT32) {
    g_set_error(&c->error, TXL_ERROR, TXL_ERROR_INVALID,
                "input word %" G_GINT64_FORMAT " ('%s%s') is not a valid "
                "token id (out of range)", p->index + 1, p->word,
                p->overlong ? "..." : "");
    return FALSE;
  }
  int32_t id = (int32_t)v;
  p->len = 0;
  p->overlong = FALSE;
  p->index++;
  return txl_scorer_push(c->scorer, &id, 1, &c->error);
}

/* --save-snapshot could not be written at the end (save_err, taken): the
 * stream was ended instead, and c->error says so, and whether its last
 * lines (or tokens) went out (printed) or why not (c->error before). */
static void
ended_instead(Common *c, GError *save_err, gboolean printed,
              const char *what)
{
  GError *e = g_steal_pointer(&c->error);
  g_set_error(&c->error, save_err->domain, save_err->code,
              "no snapshot (%s): the stream ended instead, %s%s%s",
              save_err->message, printed ? "its last " : "and then: ",
              printed ? what : e->message, printed ? " printed" : "");
  g_clear_error(&e);
  g_error_free(save_err);
}

static gboolean
score_ids(Common *c, FILE *in, const char *save, gboolean resumed)
{
  IdParser p = { 0 };
  char buf[CHUNK];
  size_t got;
  while ((got = fread(buf, 1, sizeof buf, in)) > 0) {
    for (size_t i = 0; i < got; i++) {
      char ch = buf[i];
      if (g_ascii_isspace(ch)) {
        if (!flush_id(c, &p))
          return FALSE;
      } else if (p.len + 1 < sizeof p.word) {
        p.word[p.len++] = ch;
      } else {
        p.overlong = TRUE;
      }
    }
  }
  if (ferror(in)) {
    g_set_error(&c->error, TXL_ERROR, TXL_ERROR_IO, "read error: %s",
                g_strerror(errno));
    return FALSE;
  }
  if (!flush_id(c, &p))
    return FALSE;
  if (save) { /* the partial segment stays pending in the snapshot */
    GHashTable *sect = writer_sections();
    gboolean ok = txl_scorer_save_full(c->scorer, save, c->snap_opts, sect,
                                       NULL, &c->error);
    g_hash_table_unref(sect);
    if (ok)
      return TRUE;
    /* not written (a full disk): the pending tokens are scored rather
     * than lost; the run still fails */
    GError *save_err = g_steal_pointer(&c->error);
    ended_instead(c, save_err, txl_scorer_finish(c->scorer, &c->error),
                  "tokens");
    return FALSE;
  }
  if (resumed)
    return txl_scorer_finish(c->scorer, &c->error);
  if (p.index == 0) {
    g_set_error_literal(&c->error, TXL_ERROR, TXL_ERROR_INVALID,
                        "no token ids in the input");
    return FALSE;
  }
  if (p.index == 1) {
    g_set_error_literal(&c->error, TXL_ERROR, TXL_ERROR_INVALID,
                        "only one token id in the input: nothing to predict");
    return FALSE;
  }
  return txl_scorer_finish(c->scorer, &c->error);
}

/* ---- text ------------------------------------------------------------ */

static Line *
line_get(TextScore *t, gint64 line)
{
  /* lines are queued in order; the one wanted is almost always near the end */
  for (GList *it = t->lines.tail; it; it = it->prev) {
    Line *l = it->data;
    if (l->line == line)
      return l;
    if (l->line < line)
      break;
  }
  Line *l = g_new0(Line, 1);
  l->line = line;
  l->text = g_string_new(NULL);
  l->arrived = NAN;
  txl_line_acc_init(&l->acc);
  if (t->learner)
    l->ids = g_array_new(FALSE, FALSE, sizeof(int32_t));
  g_queue_push_tail(&t->lines, l);
  return l;
}


/* --learn: a printed line joins the recent scores (unless flagged or
 * warm-up) and the learner's lines; a round's weights take over here. */
static void
learn_line(TextScore *t, const Line *l, gboolean flag)
{
  g_autoptr(GError) err = NULL;
  txl_learner_set_time(t->learner, l->arrived);
  TxlModel *m = txl_learner_line(t->learner,
      l->ids ? (const int32_t *)l->ids->data : NULL,
      l->ids ? l->ids->len : 0, flag, &err);
  if (m && !t->c.error &&
      txl_scorer_set_model(t->c.scorer, m, &t->c.error)) {
    t->gen++;
    /* the new weights score differently: their own recent scores decide
     * once there are enough of them, the old ones until then */
    txl_baseline_restart(t->recent);
    TxlLearnStats st;
    txl_learner_stats(t->learner, &st);
    fprintf(stderr, "txl score: learnt round %d after line %" G_GINT64_FORMAT
            " (%" G_GINT64_FORMAT " steps, loss %.3f -> %.3f nats/token, "
            "%.1f s)\n", st.rounds, l->line, st.steps, st.loss_first,
            st.loss_last, st.seconds);
    if (t->learn_out &&
        !txl_learner_write_model(t->learner, t->learn_out, &err)) {
      /* scoring goes on; the run fails at its end */
      fprintf(stderr, "txl score: %s: %s\n", t->learn_out, err->message);
      t->learn_out_failed = TRUE;
    }
  } else if (err) {
    fprintf(stderr, "txl score: %s; scoring goes on with the last good "
            "weights\n", err->message);
  }
  txl_model_unref(m);
}

/* The model file's cost of a line that is judged while learning: the line
 * rule judges its worst part less a quarter of it
 * (lib/anomaly/reference.h).  NaN: none. */
static double
line_ref(TextScore *t, const Line *l)
{
  if (!t->ref || !l->ids || l->ids->len == 0)
    return NAN;
  return txl_line_ref_nll(t->ref, (const int32_t *)l->ids->data,
                          l->ids->len);
}

/* One line's JSON: mean NLL per token (nats), perplexity, bits per
 * normalised byte (bpb) and its worst part ("worst", what --flag-bpb
 * compares), lib/anomaly/lines.h; non-finite values are null. */
static void
print_line(TextScore *t, const Line *l)
{
  const TxlLineScore *s = &l->acc.s;
  g_autoptr(GString) o = g_string_new(NULL);
  g_string_append_printf(o, "{\"line\": %" G_GINT64_FORMAT
                         ", \"tokens\": %" G_GINT64_FORMAT
                         ", \"bytes\": %zu, ", l->line, s->tokens, l->bytes);
  txl_line_append_json(o, s);
  gboolean warm = FALSE, flag = FALSE, shown, repeat = FALSE;
  double ref = NAN;
  if (t->flag_bpb > 0) {
    flag = txl_line_flag(s, t->flag_bpb);
    t->flagged += flag;
    g_string_append_printf(o, ", \"flag\": %s", flag ? "true" : "false");
  } else {
    /* by default the threshold comes from the stream's own recent scores
     * (lib/anomaly/baseline.h); lines scored before it can (or, with
     * --learn, by the model file's weights) are warm-up, never flagged */
    if (t->learner && l->gen == 0)
      warm = TRUE; /* not the stream's weights yet: not its scores either */
    else if (s->tokens > 0) {
      ref = line_ref(t, l);
      warm = !txl_baseline_judge(t->recent, txl_line_judged(s, ref), &flag);
    }
    /* a burst of one kind of line is flagged once (lib/anomaly/repeats.h) */
    shown = txl_repeats_report(&t->repeats, l->text->str, l->text->len, s,
                               flag, &repeat);
    t->flagged += shown;
    t->warm += warm;
    g_string_append_printf(o, ", \"flag\": %s, \"warmup\": %s",
                           shown ? "true" : "false", warm ? "true" : "false");
    if (repeat)
      g_string_append(o, ", \"repeat\": true");
    txl_line_append_ref_json(o, s, ref);
  }
  if (s->nonfinite)
    g_string_append_printf(o, ", \"nonfinite\": %u", s->nonfinite);
  t->c.nonfinite += s->nonfinite;
  g_string_append(o, ", \"text\": ");
  txl_json_append_string(o, l->text->str, l->text->len);
  g_string_append(o, "}\n");
  fputs(o->str, stdout);
  /* the rule's own flag: a repeat stays out of learning too */
  if (t->learner)
    learn_line(t, l, flag);
}

static void
print_ready_lines(TextScore *t, gboolean all)
{
  Line *l;
  while ((l = g_queue_peek_head(&t->lines)) &&
         (all || (l->closed && l->acc.s.tokens >= l->pushed))) {
    g_queue_pop_head(&t->lines);
    print_line(t, l);
    txl_score_line_free(l);
  }
}

static void
text_scored(gint64 pos, int32_t token, float logprob, gpointer data)
{
  TextScore *t = data;
  t->c.scored++;
  if (isfinite(logprob))
    t->c.nll_sum -= logprob;
  if (pos < t->tok_base || pos - t->tok_base >= (gint64)t->tok_line->len) {
    if (!t->c.error) /* only a restored state that lies could get here */
      g_set_error(&t->c.error, TXL_ERROR, TXL_ERROR_FORMAT,
                  "token %" G_GINT64_FORMAT " has no line", pos);
    return;
  }
  gint64 line = g_array_index(t->tok_line, gint64, pos - t->tok_base);
  t->last_scored = pos;
  Line *l = line_get(t, line);
  if (l->acc.s.tokens == 0)
    l->gen = t->gen;
  txl_line_acc_add(&l->acc, -(double)logprob,
                   txl_token_norm_bytes(t->tok, token));
}

static void
text_token(int32_t id, gint64 line, gsize start, gsize end, gpointer data)
{
  TextScore *t = data;
  if (t->c.error)
    return;
  Line *l = line_get(t, line);
  /* the stream's first token has nothing before it to be predicted from */
  if (txl_scorer_tokens_seen(t->c.scorer) > 0)
    l->pushed++;
  if (l->ids)
    g_array_append_val(l->ids, id);
  g_array_append_val(t->tok_line, line);
  txl_scorer_push(t->c.scorer, &id, 1, &t->c.error);
  /* forget the lines of tokens already scored, so memory stays bounded */
  gint64 done = t->last_scored - t->tok_base + 1;
  if (done > 4096) {
    g_array_remove_range(t->tok_line, 0, (guint)done);
    t->tok_base += done;
  }
}

static void
text_bytes(TextScore *t, const char *buf, gsize len)
{
  t->c.bytes += len;
  for (gsize i = 0; i < len; i++) {
    Line *l = line_get(t, t->cur_line);
    l->bytes++;
    if (buf[i] == '\n') {
      l->closed = TRUE;
      l->arrived = t->now;
      t->cur_line++;
    } else if (l->text->len < TEXT_CAP) {
      g_string_append_c(l->text, buf[i]);
    }
  }
}

/* read(2), not fread: from a pipe, what has arrived is scored now (fread
 * waits for a whole chunk), and each line gets the time it arrived
 * (--learn-warmup-seconds). */
static gssize
read_some(FILE *in, char *buf, gsize n)
{
  for (;;) {
    gssize got = read(fileno(in), buf, n);
    if (got >= 0 || errno != EINTR)
      return got;
  }
}

/* --learn in snapshots: the learner's state bytes (lib/train/learner.h)
 * in section "learner"; a snapshot continues with --learn exactly when it
 * was written with it. */
static GBytes *
learn_save(TextScore *t)
{
  gsize n = txl_learner_state_get_size(t->learner);
  guint8 *b = g_malloc(n);
  txl_learner_state_get_data(t->learner, b, n);
  return g_bytes_new_take(b, n);
}

/* The kinds flagged lately (section "score-repeats"); refused when no
 * stream of lines could have written them. */
static void
repeats_restore(TextScore *t, GBytes *state)
{
  TxlReader r;
  txl_reader_init(&r, state);
  if (!txl_repeats_get(&r, &t->repeats) || !txl_reader_done(&r))
    g_set_error_literal(&t->c.error, TXL_ERROR, TXL_ERROR_FORMAT,
                        "snapshot section score-repeats: malformed");
}

static void
learn_restore(TextScore *t, GBytes *state)
{
  gsize n;
  const guint8 *b = g_bytes_get_data(state, &n);
  if (!txl_learner_state_set_data(t->learner, b, n, &t->c.error))
    return;
  TxlLearnStats st;
  txl_learner_stats(t->learner, &st);
  t->gen = st.rounds;
  TxlModel *m = txl_learner_model(t->learner);
  if (m)
    txl_scorer_set_model(t->c.scorer, m, &t->c.error);
  txl_model_unref(m);
}

static gboolean
score_text(TextScore *t, const TxlTokenizer *tok, FILE *in, const char *save,
           GHashTable *loaded)
{
  TxlEncoder *enc = txl_encoder_new(tok, text_token, t);
  if (loaded) {
    GBytes *es = g_hash_table_lookup(loaded, "tokenizer");
    GBytes *ts = g_hash_table_lookup(loaded, "score-text");
    GBytes *ls = g_hash_table_lookup(loaded, "learner");
    if (!es || !ts)
      g_set_error_literal(&t->c.error, TXL_ERROR, TXL_ERROR_INVALID,
                          "the snapshot holds an id stream (saved with "
                          "--ids); continue it with --ids");
    else if (!ls != !t->learner)
      g_set_error(&t->c.error, TXL_ERROR, TXL_ERROR_INVALID,
                  "the snapshot was written %s --learn; continue it %s "
                  "--learn", ls ? "with" : "without", ls ? "with" : "without");
    else if (txl_encoder_restore(enc, es, &t->c.error) &&
             txl_score_state_restore(t, ts, &t->c.error)) {
      /* the recent scores that set the threshold (absent in snapshots of
       * txl before 2026-11-25: it starts again) */
      GBytes *rs = g_hash_table_lookup(loaded, "score-recent");
      if (rs)
        txl_baseline_restore(t->recent, rs, &t->c.error);
      /* the kinds flagged lately (absent before 2026-11-29: none) */
      GBytes *ks = g_hash_table_lookup(loaded, "score-repeats");
      if (ks && !t->c.error)
        repeats_restore(t, ks);
      if (!t->c.error && ls)
        learn_restore(t, ls);
    }
    if (t->c.error) {
      txl_encoder_free(enc);
      return FALSE;
    }
  }
  char buf[CHUNK];
  gssize got;
  gboolean any = FALSE;
  GError *save_err = NULL;
  while (!t->c.error && (got = read_some(in, buf, sizeof buf)) > 0) {
    any = TRUE;
    t->now = g_get_monotonic_time() / (double)G_USEC_PER_SEC;
    /* --learn: line by line, so that new weights take over right after
     * the line that brought them, not at the end of the chunk */
    for (size_t at = 0, n; at < (size_t)got; at += n) {
      const char *nl = t->learner ? memchr(buf + at, '\n', got - at) : NULL;
      n = nl ? (size_t)(nl - (buf + at)) + 1 : (size_t)got - at;
      /* bytes first, so a token's line exists before the token arrives */
      text_bytes(t, buf + at, n);
      txl_encoder_push(enc, buf + at, n);
      print_ready_lines(t, FALSE);
    }
    fflush(stdout); /* a pipe's lines go out as they come in */
  }
  if (!t->c.error && got < 0)
    g_set_error(&t->c.error, TXL_ERROR, TXL_ERROR_IO, "read error: %s",
                g_strerror(errno));
  if (!t->c.error && !any && !loaded)
    g_set_error_literal(&t->c.error, TXL_ERROR, TXL_ERROR_INVALID,
                        "the input is empty");
  if (!t->c.error && save) {
    /* the stream stays open: pending bytes, tokens and lines are saved,
     * the lines already complete are printed */
    GHashTable *sect = writer_sections();
    g_hash_table_insert(sect, "tokenizer", txl_encoder_save(enc));
    g_hash_table_insert(sect, "score-text", txl_score_state_save(t));
    g_hash_table_insert(sect, "score-recent", txl_baseline_save(t->recent));
    GByteArray *kb = g_byte_array_new();
    txl_repeats_put(kb, &t->repeats);
    g_hash_table_insert(sect, "score-repeats", g_byte_array_free_to_bytes(kb));
    if (t->learner)
      g_hash_table_insert(sect, "learner", learn_save(t));
    gboolean saved = txl_scorer_save_full(t->c.scorer, save,
                                          t->c.snap_opts, sect, NULL,
                                          &t->c.error);
    g_hash_table_unref(sect);
    if (saved) {
      txl_encoder_free(enc);
      return TRUE;
    }
    /* not written (a full disk): the stream ends here instead, its last
     * lines printed rather than lost; the run still fails */
    save_err = g_steal_pointer(&t->c.error);
  }
  if (!t->c.error)
    txl_encoder_finish(enc);
  txl_encoder_free(enc);
  if (!t->c.error && !loaded && txl_scorer_tokens_seen(t->c.scorer) < 2)
    g_set_error_literal(&t->c.error, TXL_ERROR, TXL_ERROR_INVALID,
                        "the input has fewer than two tokens: nothing to "
                        "predict");
  if (!t->c.error)
    txl_scorer_finish(t->c.scorer, &t->c.error);
  if (!t->c.error) {
    for (GList *it = t->lines.head; it; it = it->next) {
      Line *l = it->data;
      l->closed = TRUE;
    }
    print_ready_lines(t, TRUE);
  }
  if (save_err)
    ended_instead(&t->c, save_err, t->c.error == NULL, "lines");
  return t->c.error == NULL;
}

/* --snapshot-precision and --memory; FALSE (a message printed) when bad. */
static gboolean
parse_kinds(const char *snap_prec, const char *save_snap, const char *memory,
            TxlSnapshotOptions *snap_opts, TxlMemoryKind *kind)
{
  if (snap_prec) {
    if (!strcmp(snap_prec, "f16"))
      snap_opts->precision = TXL_SNAPSHOT_F16;
    else if (!strcmp(snap_prec, "bf16"))
      snap_opts->precision = TXL_SNAPSHOT_BF16;
    else if (strcmp(snap_prec, "f32") != 0) {
      fprintf(stderr, "txl score: --snapshot-precision takes f32, f16 or "
                      "bf16, not '%s'\n", snap_prec);
      return FALSE;
    }
    if (!save_snap) {
      fprintf(stderr, "txl score: --snapshot-precision goes with "
                      "--save-snapshot\n");
      return FALSE;
    }
  }
  if (memory && !strcmp(memory, "hidden"))
    *kind = TXL_MEMORY_HIDDEN;
  else if (memory && strcmp(memory, "kv") != 0) {
    fprintf(stderr, "txl score: --memory takes kv or hidden, not '%s'\n",
            memory);
    return FALSE;
  }
  return TRUE;
}

/* A new scorer, or the one saved in load_snap when it was written by
 * txl score (a snapshot of an element continues in its pipeline); NULL
 * with t->c.error set. */
static TxlScorer *
open_scorer(TextScore *t, TxlModel *m, const TxlStreamOptions *o, int segment,
            gboolean ids, const char *load_snap, GHashTable **loaded)
{
  if (load_snap) {
    t->c.scorer = txl_scorer_load_full(m, load_snap,
                                       ids ? print_token : text_scored,
                                       ids ? (gpointer)&t->c : (gpointer)t,
                                       loaded, &t->c.error);
    /* a snapshot is continued by what made it: its other sections would
     * be dropped otherwise */
    gboolean element = t->c.scorer &&
        (g_hash_table_contains(*loaded, "txlmodel") ||
         g_hash_table_contains(*loaded, "sampler"));
    if (t->c.scorer && !element &&
        !txl_snapshot_check_writer(load_snap, *loaded, SCORE_WRITER,
                                   &t->c.error)) {
      g_clear_pointer(&t->c.scorer, txl_scorer_free);
    } else if (element) {
      g_set_error_literal(&t->c.error, TXL_ERROR, TXL_ERROR_INVALID,
                          "the snapshot was written by a GStreamer element "
                          "(txlmodel or txlsampler); continue it with the "
                          "pipeline (snapshot-location=...)");
      g_clear_pointer(&t->c.scorer, txl_scorer_free);
    } else if (t->c.scorer && ids &&
               g_hash_table_contains(*loaded, "tokenizer")) {
      g_set_error_literal(&t->c.error, TXL_ERROR, TXL_ERROR_INVALID,
                          "the snapshot holds a text stream; continue it "
                          "without --ids");
      g_clear_pointer(&t->c.scorer, txl_scorer_free);
    }
  } else
    t->c.scorer = txl_scorer_new(m, o, segment,
                                 ids ? print_token : text_scored,
                                 ids ? (gpointer)&t->c : (gpointer)t,
                                 &t->c.error);
  return t->c.scorer;
}

/* The run's summary on standard error, or its error; FALSE for an error
 * (scores that were not finite make the run one). */
static gboolean
report(TextScore *t, gboolean ok, gboolean ids, const char *path)
{
  if (ok && t->c.nonfinite > 0) {
    /* every line and token went out, as valid JSON (null), its line
     * flagged; the run itself is an error: such scores mean nothing */
    g_set_error(&t->c.error, TXL_ERROR, TXL_ERROR_INVALID,
                "%" G_GINT64_FORMAT " token scores were not finite (NaN or "
                "infinite: the model's weights or its arithmetic overflowed); "
                "printed as null%s", t->c.nonfinite,
                ids ? "" : ", their lines marked \"nonfinite\" (and flagged)");
    ok = FALSE;
  }
  if (ok && t->learn_out_failed) {
    g_set_error(&t->c.error, TXL_ERROR, TXL_ERROR_IO, "the adapted model "
                "could not be written to %s (above)", t->learn_out);
    ok = FALSE;
  }
  if (!ok) {
    fprintf(stderr, "txl score: %s%s%s\n", path[0] == '-' ? "" : path,
            path[0] == '-' ? "" : ": ", t->c.error->message);
  } else {
    double mean = t->c.nll_sum / MAX(t->c.scored, 1);
    fprintf(stderr, "txl score: %" G_GINT64_FORMAT " tokens scored, mean NLL "
                    "%.4f nats/token, perplexity %.3f", t->c.scored, mean,
            exp(mean));
    if (!ids && t->c.bytes)
      fprintf(stderr, ", %.4f bits/byte", t->c.nll_sum / G_LN2 / t->c.bytes);
    if (!ids && t->flag_bpb > 0)
      fprintf(stderr, ", %" G_GINT64_FORMAT " lines above %g bits/byte",
              t->flagged, t->flag_bpb);
    else if (!ids)
      fprintf(stderr, ", %" G_GINT64_FORMAT " lines flagged, %"
              G_GINT64_FORMAT " warm-up", t->flagged, t->warm);
    fprintf(stderr, "\n");
    /* every line warm-up: no line was judged, which a count of 0 flagged
     * alone would hide */
    if (!ids && t->learner && t->warm > 0 && t->warm >= t->cur_line - 1)
      fprintf(stderr, "txl score: the input ended in the warm-up: none of "
                      "its %" G_GINT64_FORMAT " lines was judged (learning "
                      "needs %" G_GINT64_FORMAT " lines, then %d to fill "
                      "the threshold's window; --learn-warmup=N or "
                      "--learn-warmup-seconds=S starts sooner)\n", t->warm,
              (gint64)txl_learner_options(t->learner)->warmup_lines,
              TXL_STREAM_RULE_WARMUP);
  }
  return ok;
}

/* The stream's lengths; FALSE (a message printed) when bad. */
static gboolean
check_lengths(int segment, int mem_len, int same_length, int clamp_len,
              const char *memory, const char *load_snap)
{
  if (segment < 0 || (same_length != -1 && same_length != 0 &&
                      same_length != 1) || mem_len < -1 || clamp_len < -1) {
    fprintf(stderr, "txl score: --segment, --mem-len and --clamp-len take "
                    "non-negative numbers, --same-length 0 or 1\n");
    return FALSE;
  }
  if (load_snap && (segment || mem_len != -1 || same_length != -1 ||
                    clamp_len != -1 || memory)) {
    fprintf(stderr, "txl score: --load-snapshot continues the saved stream "
                    "with its own segment, memory and position settings; "
                    "drop --segment, --mem-len, --same-length, --clamp-len "
                    "and --memory\n");
    return FALSE;
  }
  return TRUE;
}

/* --learn and its options; FALSE (a message printed) when they do not fit
 * the other options. */
static gboolean
check_learn(gboolean learn, int warmup, double seconds, const char *out,
            gboolean ids)
{
  if (!learn && (warmup != -1 || seconds != 0 || out)) {
    fprintf(stderr, "txl score: --learn-warmup, --learn-warmup-seconds and "
                    "--learn-model go with --learn\n");
    return FALSE;
  }
  if (!(seconds >= 0 && seconds <= TXL_LEARN_MAX_SECONDS)) {
    fprintf(stderr, "txl score: --learn-warmup-seconds takes seconds from 0 "
                    "to %g\n", TXL_LEARN_MAX_SECONDS);
    return FALSE;
  }
  if (learn && ids) {
    fprintf(stderr, "txl score: --learn learns from text, not --ids\n");
    return FALSE;
  }
  g_autoptr(GError) err = NULL;
  if (out && !txl_path_writable_later(out, &err)) {
    fprintf(stderr, "txl score: --learn-model: %s\n", err->message);
    return FALSE;
  }
  if (warmup == 0 || warmup < -1) {
    fprintf(stderr, "txl score: --learn-warmup takes a number of lines >= 1\n");
    return FALSE;
  }
  return TRUE;
}

static void
learn_start(TextScore *t, TxlModel *m, int warmup, double seconds,
            const char *out)
{
  TxlLearnOptions lo = txl_learn_options_default();
  if (warmup > 0)
    lo.warmup_lines = warmup;
  lo.warmup_seconds = seconds;
  t->learn_out = out;
  t->learner = txl_learner_new(m, &lo, &t->c.error);
  if (t->learner)
    t->ref = txl_line_ref_new(m, &t->c.error);
}

int
txl_cmd_score(int argc, char **argv)
{
  g_autofree char *model_path = NULL;
  gboolean ids = FALSE;
  int segment = 0, mem_len = -1, same_length = -1, clamp_len = -1;
  g_autofree char *memory = NULL;
  double flag_bpb = 0;
  g_autofree char *save_snap = NULL, *load_snap = NULL, *snap_prec = NULL;
  gboolean learn = FALSE;
  int learn_warmup = -1; /* the learner's default */
  double learn_seconds = 0;
  g_autofree char *learn_out = NULL;
  GOptionEntry entries[] = {
    { "model", 'm', 0, G_OPTION_ARG_FILENAME, &model_path, "Model file (default: the bundled model, or TXL_MODEL)", "MODEL" },
    { "ids", 0, 0, G_OPTION_ARG_NONE, &ids,
      "Read whitespace-separated token ids; print one JSON object per token", NULL },
    { "segment", 0, 0, G_OPTION_ARG_INT, &segment,
      "Segment length in tokens (default: the model's tgt_len)", "N" },
    { "mem-len", 0, 0, G_OPTION_ARG_INT, &mem_len,
      "Memory length in positions (default: the model's)", "N" },
    { "same-length", 0, 0, G_OPTION_ARG_INT, &same_length,
      "1: every query sees mem_len keys; 0: all earlier keys (default: the model's)", "0|1" },
    { "clamp-len", 0, 0, G_OPTION_ARG_INT, &clamp_len,
      "Cap relative distances at N; 0: no cap (default: the model's)", "N" },
    { "flag-bpb", 0, 0, G_OPTION_ARG_DOUBLE, &flag_bpb,
      "Text mode: mark lines scoring above this many bits per byte (\"flag\")", "X" },
    { "save-snapshot", 0, 0, G_OPTION_ARG_FILENAME, &save_snap,
      "At the end of the input, save the stream (memory, pending tokens; in "
      "text mode also the tokenizer's pending bytes and the lines not yet "
      "printed) to FILE instead of ending it", "FILE" },
    { "load-snapshot", 0, 0, G_OPTION_ARG_FILENAME, &load_snap,
      "Continue the stream saved in FILE (its lengths and options apply; "
      "text or --ids as it was saved); results continue bit for bit", "FILE" },
    { "snapshot-precision", 0, 0, G_OPTION_ARG_STRING, &snap_prec,
      "How --save-snapshot stores the memory: f32 (default, resumes bit for "
      "bit), f16 or bf16 (about half the size, slight score drift)", "P" },
    { "memory", 0, 0, G_OPTION_ARG_STRING, &memory,
      "kv (default, fastest) or hidden (half the state, slower)", "KIND" },
    { "learn", 0, 0, G_OPTION_ARG_NONE, &learn,
      "Text mode: fine-tune the model on the stream as it is scored, and "
      "flag lines against the stream's own recent scores (docs/learning.md)",
      NULL },
    { "learn-warmup", 0, 0, G_OPTION_ARG_INT, &learn_warmup,
      "--learn: lines before the first round of learning (default 1000)", "N" },
    { "learn-warmup-seconds", 0, 0, G_OPTION_ARG_DOUBLE, &learn_seconds,
      "--learn: end the warm-up sooner, at the line that arrives S seconds "
      "after the first (reading a pipe; default 0: lines only)", "S" },
    { "learn-model", 0, 0, G_OPTION_ARG_FILENAME, &learn_out,
      "--learn: write the adapted model to FILE after each round (atomic)",
      "FILE" },
    { NULL },
  };
  g_autoptr(GOptionContext) ctx = txl_cmd_options("[FILE|-]",
    "Score a token stream segment by segment with recurrent memory.\n"
    "Text mode prints one JSON object per input line (mean NLL per token in\n"
    "nats, perplexity, bits per byte); --ids prints ln P for every token from\n"
    "the second on.  A summary goes to standard error.",
    entries);
  if (!txl_cmd_parse("txl score", ctx, &model_path, &argc, &argv))
    return 2;
  if (argc > 2) {
    fprintf(stderr, "txl score: at most one input FILE\n");
    return 2;
  }
  if (!(flag_bpb >= 0 && isfinite(flag_bpb))) {
    fprintf(stderr, "txl score: --flag-bpb takes a positive number\n");
    return 2;
  }
  if (!check_lengths(segment, mem_len, same_length, clamp_len, memory,
                     load_snap))
    return 2;
  if (!check_learn(learn, learn_warmup, learn_seconds, learn_out, ids))
    return 2;
  TxlSnapshotOptions snap_opts = TXL_SNAPSHOT_OPTIONS_DEFAULT;
  TxlMemoryKind kind = TXL_MEMORY_KV;
  if (!parse_kinds(snap_prec, save_snap, memory, &snap_opts, &kind))
    return 2;
  const char *path = argc == 2 ? argv[1] : "-";
  FILE *in = stdin;
  if (strcmp(path, "-") != 0 && !(in = fopen(path, "rb"))) {
    fprintf(stderr, "txl score: cannot open '%s': %s\n", path,
            g_strerror(errno));
    return 1;
  }
  TxlModel *m = txl_cmd_load_model("txl score", model_path);
  if (!m) {
    if (in != stdin)
      fclose(in);
    return 1;
  }
  const TxlTokenizer *tok = txl_model_tokenizer(m);
  if (!ids && txl_tokenizer_type(tok) == TXL_TOKENIZER_NONE) {
    fprintf(stderr, "txl score: %s has no tokenizer; score token ids with "
                    "--ids\n", model_path);
    txl_model_unref(m);
    if (in != stdin)
      fclose(in);
    return 1;
  }
  TxlStreamOptions o = { mem_len, clamp_len, same_length, 0, kind };
  if (save_snap) { /* what a run killed while saving left beside the file */
    GError *serr = NULL;
    if (!txl_snapshot_remove_stale(save_snap, NULL, &serr)) {
      fprintf(stderr, "txl score: warning: %s\n", serr->message);
      g_error_free(serr);
    }
  }
  TextScore t = { 0 };
  t.tok = tok;
  t.flag_bpb = flag_bpb;
  t.c.snap_opts = &snap_opts;
  txl_score_lines_init(&t);
  t.recent = txl_baseline_new(TXL_BASELINE_MAD, TXL_STREAM_RULE_WINDOW,
                              TXL_STREAM_RULE_WARMUP, 0, NULL);
  txl_repeats_init(&t.repeats);
  gboolean ok = FALSE;
  GHashTable *loaded = NULL;
  t.c.scorer = open_scorer(&t, m, &o, segment, ids, load_snap, &loaded);
  if (t.c.scorer && learn)
    learn_start(&t, m, learn_warmup, learn_seconds, learn_out);
  if (t.c.scorer && !t.c.error)
    ok = ids ? score_ids(&t.c, in, save_snap, load_snap != NULL)
             : score_text(&t, tok, in, save_snap, loaded);
  g_clear_pointer(&loaded, g_hash_table_unref);
  fflush(stdout);
  int rc = report(&t, ok, ids, path) ? 0 : 1;
  g_clear_error(&t.c.error);
  txl_scorer_free(t.c.scorer);
  txl_learner_free(t.learner);
  txl_line_ref_free(t.ref);
  txl_baseline_free(t.recent);
  txl_score_lines_clear(&t);
  txl_model_unref(m);
  if (in != stdin)
    fclose(in);
  return rc;
}
