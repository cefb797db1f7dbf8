/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* TxlSessions snapshots: a run saved at any line, freed, loaded into a
 * fresh object (with a freshly loaded model) and continued reports every
 * line and every session exactly as the uninterrupted run, in the same
 * order, bit for bit; damaged, truncated, other-model and single-stream
 * files are refused with an error. */
#include "../../fuzz/sessions_seed.h"
#include "stream_state.h"
#include "testutil.h"

#include <math.h>
#include "tu_test.h"

/* ---- a log and what a run reports ---------------------------------------- */

/* n lines over k sessions "s<i>", some sessions much busier than others,
 * lines of very different lengths (a line can fill several segments) */
static GPtrArray *
make_lines(int n, int k, guint32 seed)
{
  GRand *r = g_rand_new_with_seed(seed);
  GPtrArray *a = g_ptr_array_new_with_free_func(g_free);
  const char *words[] = { "open", "read", "write block", "close", "retry",
                          "deleting file /data/x1234567/part-00001 from "
                          "node 10.251.43.21:50010 after replication" };
  for (int i = 0; i < n; i++) {
    int s = g_rand_int_range(r, 0, k);
    if (g_rand_boolean(r))
      s = s % 3; /* three busy sessions */
    g_ptr_array_add(a, g_strdup_printf("%02d %s k=s%d %d", i % 60,
        words[g_rand_int_range(r, 0, G_N_ELEMENTS(words))], s,
        g_rand_int_range(r, 0, 1000)));
  }
  g_rand_free(r);
  return a;
}

static void
bits(GString *o, double v)
{
  guint64 u;
  memcpy(&u, &v, 8);
  g_string_append_printf(o, " %016" G_GINT64_MODIFIER "x", u);
}

static void
on_line(const TxlSessionLine *l, gpointer p)
{
  GString *o = p;
  g_string_append_printf(o, "L %" G_GINT64_FORMAT " %s %d %zu", l->line,
                         l->key, l->tokens, l->bytes);
  bits(o, l->nll);
  bits(o, l->max_token);
  g_string_append_c(o, '\n');
}

static void
on_end(const TxlSessionResult *r, gpointer p)
{
  GString *o = p;
  g_string_append_printf(o, "S %s %d %" G_GINT64_FORMAT " %" G_GINT64_FORMAT
                         " %" G_GINT64_FORMAT " %" G_GINT64_FORMAT " %zu",
                         r->key, r->reason, r->first_line, r->last_line,
                         r->lines, r->tokens, r->bytes);
  const double v[] = { r->nll,       r->max_line_mean, r->max_line_sum,
                       r->max_token, r->end_nll,       r->score };
  for (gsize i = 0; i < G_N_ELEMENTS(v); i++)
    bits(o, v[i]);
  g_string_append_c(o, '\n');
}

/* got and want, record for record, the same but for the numbers written by
 * bits(), which may differ by rel of the larger (NaN only with NaN). */
static void
assert_close(const char *got, const char *want, double rel)
{
  g_auto(GStrv) a = g_strsplit_set(got, " \n", -1);
  g_auto(GStrv) b = g_strsplit_set(want, " \n", -1);
  g_assert_cmpuint(g_strv_length(a), ==, g_strv_length(b));
  for (guint i = 0; a[i]; i++) {
    if (strlen(a[i]) != 16 || strlen(b[i]) != 16 ||
        !g_ascii_isxdigit(a[i][0])) {
      g_assert_cmpstr(a[i], ==, b[i]);
      continue;
    }
    guint64 ua = g_ascii_strtoull(a[i], NULL, 16);
    guint64 ub = g_ascii_strtoull(b[i], NULL, 16);
    double x, y;
    memcpy(&x, &ua, 8);
    memcpy(&y, &ub, 8);
    if (isnan(x) || isnan(y)) {
      g_assert_true(isnan(x) && isnan(y));
      continue;
    }
    g_assert_cmpfloat(fabs(x - y), <=, rel * MAX(fabs(x), fabs(y)));
  }
}

typedef struct {
  const char *name;
  TxlSessionOptions o;
  gboolean clock; /* log time from the line's first field */
  double after[3];
} Variant;

/* Line i of the log: its clock tick (with v->clock), the line, and every
 * 17th line closes its session explicitly. */
static void
feed(TxlSessions *s, const Variant *v, GPtrArray *lines, guint from, guint to,
     GString *out)
{
  g_autoptr(GError) err = NULL;
  for (guint i = from; i < to; i++) {
    const char *line = lines->pdata[i];
    if (v->clock)
      g_assert_true(txl_sessions_set_time(s, i * 0.5 + (i % 7), &err));
    g_assert_cmpint(txl_sessions_push_line(s, line, -1, &err), ==,
                    (gint64)i + 1);
    g_assert_no_error(err);
    if (i % 17 == 16) {
      g_autofree char *key = txl_sessions_key(s, line, -1);
      g_assert_true(txl_sessions_end(s, key, &err));
    }
    g_string_append_printf(out, "B %u %" G_GUINT64_FORMAT "\n",
                           txl_sessions_count(s), txl_sessions_bytes(s));
  }
}

static void
finish(TxlSessions *s, GString *out)
{
  g_autoptr(GError) err = NULL;
  g_assert_true(txl_sessions_finish(s, &err));
  g_assert_no_error(err);
  for (int r = 0; r < 4; r++)
    g_string_append_printf(out, "E %d %" G_GUINT64_FORMAT "\n", r,
                           txl_sessions_ended(s, r));
}

static Variant *
variants(guint *n)
{
  static Variant v[6];
  TxlSessionOptions d = TXL_SESSION_OPTIONS_DEFAULT;
  d.key_regex = "k=(s[0-9]+)";
  d.key_group = 1;
  for (guint i = 0; i < G_N_ELEMENTS(v); i++) {
    memset(&v[i], 0, sizeof v[i]);
    v[i].o = d;
  }
  v[0].name = "plain";
  v[1].name = "flush-end-hidden";
  v[1].o.flush_lines = TRUE;
  v[1].o.score_end = TRUE;
  v[1].o.stream.memory = TXL_MEMORY_HIDDEN;
  v[2].name = "evict-idle";
  v[2].o.max_sessions = 4;
  v[2].o.idle_lines = 9;
  v[2].o.score_end = TRUE;
  v[2].o.prime = FALSE;
  v[3].name = "idle-after-lines";
  v[3].after[0] = 3;
  v[3].after[1] = 6;
  v[3].after[2] = 12;
  v[3].o.finish_open = TRUE;
  v[3].o.score_end = TRUE;
  v[3].o.segment = 7;
  v[4].name = "clock-bytes";
  v[4].clock = TRUE;
  v[4].after[0] = 4;
  v[4].after[1] = 9;
  v[4].after[2] = 9;
  v[4].o.flush_lines = TRUE;
  v[5].name = "hidden-flush-evict";
  v[5].o.stream.memory = TXL_MEMORY_HIDDEN;
  v[5].o.flush_lines = TRUE;
  v[5].o.max_sessions = 5;
  v[5].o.score = TXL_SESSION_SCORE_MEAN;
  for (guint i = 0; i < G_N_ELEMENTS(v); i++) {
    if (v[i].after[0] > 0) {
      v[i].o.idle_after = v[i].after;
      v[i].o.n_idle_after = 3;
    }
  }
  *n = G_N_ELEMENTS(v);
  return v;
}

/* ---- resume ---------------------------------------------------------------- */

TU_TEST("/sessions-snapshot/resume", test_resume)
{
  char *path;
  TxlModel *m = tu_small_model(7, &path); /* mem 12, segment 5 */
  g_autoptr(GError) err = NULL;
  GPtrArray *lines = make_lines(110, 9, 4);
  char *dir = g_dir_make_tmp("txl-sesssnap-XXXXXX", &err);
  char *snap = g_build_filename(dir, "s.snap", NULL);
  guint nv;
  Variant *v = variants(&nv);
  for (guint vi = 0; vi < nv; vi++) {
    TxlSessionOptions o = v[vi].o;
    if (vi == 4) {
      /* a byte bound that evicts: a few sessions' worth */
      TxlSessions *probe = txl_sessions_new(m, &o, NULL, NULL, NULL, &err);
      o.max_bytes = 4 * txl_sessions_session_max_bytes(probe);
      txl_sessions_free(probe);
    }
    GString *want = g_string_new(NULL);
    TxlSessions *s = txl_sessions_new(m, &o, on_line, on_end, want, &err);
    g_assert_no_error(err);
    feed(s, &v[vi], lines, 0, lines->len, want);
    finish(s, want);
    txl_sessions_free(s);
    /* the run must have exercised what it is named after */
    if (vi == 2 || vi == 4 || vi == 5)
      g_assert_nonnull(strstr(want->str, " 2 ")); /* an eviction */
    /* cut everywhere in the first 15 lines, then every 8th (the run saved
     * after every line below covers the rest) */
    for (guint cut = 0; cut <= lines->len; cut += cut < 15 ? 1 : 8) {
      GString *got = g_string_new(NULL);
      s = txl_sessions_new(m, &o, on_line, on_end, got, &err);
      feed(s, &v[vi], lines, 0, cut, got);
      gsize bytes = 0;
      g_assert_true(txl_sessions_save(s, snap, NULL, NULL, &bytes, &err));
      g_assert_no_error(err);
      g_assert_cmpuint(bytes, >, 0);
      txl_sessions_free(s);
      /* a fresh model object too: nothing may come from the old one */
      TxlModel *m2 = txl_model_load(path, &err);
      s = txl_sessions_load(m2, snap, &o, on_line, on_end, got, NULL, &err);
      g_assert_no_error(err);
      g_assert_nonnull(s);
      txl_model_unref(m2);
      feed(s, &v[vi], lines, cut, lines->len, got);
      finish(s, got);
      txl_sessions_free(s);
      if (strcmp(got->str, want->str) != 0)
        g_error("%s: cut at line %u differs from the uninterrupted run",
                v[vi].name, cut);
      g_string_free(got, TRUE);
    }
    /* saved and reloaded after every line, a snapshot of a snapshot */
    GString *got = g_string_new(NULL);
    s = txl_sessions_new(m, &o, on_line, on_end, got, &err);
    for (guint i = 0; i < lines->len; i++) {
      feed(s, &v[vi], lines, i, i + 1, got);
      g_assert_true(txl_sessions_save(s, snap, NULL, NULL, NULL, &err));
      txl_sessions_free(s);
      s = txl_sessions_load(m, snap, &o, on_line, on_end, got, NULL, &err);
      g_assert_no_error(err);
    }
    finish(s, got);
    txl_sessions_free(s);
    g_assert_cmpstr(got->str, ==, want->str);
    g_string_free(got, TRUE);
    g_string_free(want, TRUE);
  }
  g_unlink(snap);
  g_rmdir(dir);
  g_free(snap);
  g_free(dir);
  g_ptr_array_free(lines, TRUE);
  tu_model_done(m, path);
}

/* A snapshot from before sessions kept their ids for rescoring (section
 * version 2: fuzz/corpus-snapshot/sessions-v2.snap, written by
 * fuzz/make_sessions_seed.c before 2026-11-27) loads, and the run goes on
 * exactly as one that never stopped; with rescore set too (its sessions
 * keep no ids, so they are judged as scored). */
TU_TEST("/sessions-snapshot/version-2", test_version_2)
{
  g_autoptr(GError) err = NULL;
  TxlModel *m = txl_model_load(TXL_SEEDS_DIR "/model.gguf", &err);
  g_assert_no_error(err);
  /* make_sessions_seed's lines and options; the snapshot after line 8 */
  const char *lines[] = { "open k1", "open k2", "read k1 a longer line",
                          "k3", "close k2", "k4 x", "k5", "k1 more",
                          "k2 again", "k6 new", "k1 end of it", "k3 back" };
  for (int rescore = 0; rescore < 2; rescore++) {
    TxlSessionOptions o = sessions_seed_options(rescore);
    GString *want = g_string_new(NULL), *got = g_string_new(NULL);
    TxlSessions *s = txl_sessions_new(m, &o, on_line, on_end, want, &err);
    for (guint i = 0; i < G_N_ELEMENTS(lines); i++)
      txl_sessions_push_line(s, lines[i], -1, &err);
    finish(s, want);
    txl_sessions_free(s);
    s = txl_sessions_new(m, &o, on_line, on_end, got, &err);
    for (guint i = 0; i < 8; i++)
      txl_sessions_push_line(s, lines[i], -1, &err);
    txl_sessions_free(s);
    s = txl_sessions_load(m, TXL_SEEDS_DIR "/sessions-v2.snap", &o, on_line,
                          on_end, got, NULL, &err);
    g_assert_no_error(err);
    g_assert_nonnull(s);
    for (guint i = 8; i < G_N_ELEMENTS(lines); i++)
      g_assert_cmpint(txl_sessions_push_line(s, lines[i], -1, &err), ==,
                      (gint64)i + 1);
    g_assert_no_error(err);
    finish(s, got);
    txl_sessions_free(s);
    /* sessions ended both before and after the cut */
    g_assert_nonnull(strstr(want->str, "S k2 "));
    g_assert_nonnull(strstr(want->str, "S k6 "));
    /* The seed's memory and pending scores were computed by the machine
     * that wrote it; OpenBLAS picks its kernels by CPU, and another kind
     * may round the same sums in the last bits (2026-11-28, an Intel Xeon
     * with AVX-512 FP16: at most 1.7e-8 of a value; bit for bit with
     * OPENBLAS_CORETYPE=SkylakeX or Haswell, whatever TXL_CPU says). Bit
     * for bit holds for a snapshot written and resumed on one kind of CPU
     * (test_resume). */
    assert_close(got->str, want->str, 1e-6);
    g_string_free(want, TRUE);
    g_string_free(got, TRUE);
  }
  txl_model_unref(m);
}

/* Sections travel; F16 loads and goes on (not bit for bit); a snapshot
 * with nothing open. */
TU_TEST("/sessions-snapshot/sections-precision", test_sections_precision)
{
  char *path;
  TxlModel *m = tu_small_model(7, &path);
  g_autoptr(GError) err = NULL;
  char *dir = g_dir_make_tmp("txl-sesssnap-XXXXXX", &err);
  char *snap = g_build_filename(dir, "s.snap", NULL);
  TxlSessionOptions o = TXL_SESSION_OPTIONS_DEFAULT;
  o.key_regex = "k=s[0-9]+";
  GString *out = g_string_new(NULL);
  TxlSessions *s = txl_sessions_new(m, &o, on_line, on_end, out, &err);
  /* nothing open yet */
  g_assert_true(txl_sessions_save(s, snap, NULL, NULL, NULL, &err));
  txl_sessions_free(s);
  s = txl_sessions_load(m, snap, &o, on_line, on_end, out, NULL, &err);
  g_assert_no_error(err);
  GPtrArray *lines = make_lines(40, 5, 9);
  for (guint i = 0; i < lines->len; i++)
    g_assert_cmpint(txl_sessions_push_line(s, lines->pdata[i], -1, &err), >, 0);
  GHashTable *sect = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                           (GDestroyNotify)g_bytes_unref);
  g_hash_table_insert(sect, g_strdup("txlsink"), g_bytes_new("abc", 3));
  gsize f32 = 0, f16 = 0;
  g_assert_true(txl_sessions_save(s, snap, NULL, sect, &f32, &err));
  TxlSnapshotOptions so = TXL_SNAPSHOT_OPTIONS_DEFAULT;
  so.precision = TXL_SNAPSHOT_F16;
  char *snap16 = g_strconcat(snap, "16", NULL);
  g_assert_true(txl_sessions_save(s, snap16, &so, sect, &f16, &err));
  g_assert_cmpuint(f16, <, f32);
  /* the reserved name is refused */
  g_hash_table_insert(sect, g_strdup(TXL_SESSIONS_SECTION), g_bytes_new("", 0));
  g_assert_false(txl_sessions_save(s, snap16, &so, sect, NULL, &err));
  g_assert_error(err, TXL_ERROR, TXL_ERROR_INVALID);
  g_clear_error(&err);
  g_hash_table_unref(sect);
  guint open = txl_sessions_count(s);
  txl_sessions_free(s);
  GHashTable *back = NULL;
  s = txl_sessions_load(m, snap16, &o, on_line, on_end, out, &back, &err);
  g_assert_no_error(err);
  g_assert_cmpuint(txl_sessions_count(s), ==, open);
  g_assert_cmpuint(g_hash_table_size(back), ==, 1);
  g_assert_cmpuint(g_bytes_get_size(g_hash_table_lookup(back, "txlsink")), ==,
                   3);
  g_hash_table_unref(back);
  g_assert_true(txl_sessions_finish(s, &err));
  txl_sessions_free(s);
  /* `txl snapshot info` reads it like any snapshot */
  GString *info = g_string_new(NULL);
  g_assert_true(txl_snapshot_describe(snap, info, &err));
  g_assert_nonnull(strstr(info->str, TXL_SESSIONS_SECTION));
  g_string_free(info, TRUE);
  g_unlink(snap16);
  g_unlink(snap);
  g_rmdir(dir);
  g_free(snap16);
  g_free(snap);
  g_free(dir);
  g_string_free(out, TRUE);
  g_ptr_array_free(lines, TRUE);
  tu_model_done(m, path);
}

/* ---- refusals ------------------------------------------------------------- */

static void
ignore_score(gint64 pos, int32_t token, float logprob, gpointer p)
{
}

static void
write_bytes(const char *p, const guint8 *d, gsize n)
{
  g_autoptr(GError) err = NULL;
  g_assert_true(g_file_set_contents(p, (const char *)d, (gssize)n, &err));
}

/* A refused sessions load of file (err is cleared): any error, or one
 * whose message holds `needle`. */
static void
expect_refused(TxlModel *m, const char *file, const TxlSessionOptions *o,
               const char *needle)
{
  g_autoptr(GError) err = NULL;
  g_assert_null(txl_sessions_load(m, file, o, NULL, NULL, NULL, NULL, &err));
  g_assert_nonnull(err);
  if (needle && !strstr(err->message, needle))
    g_error("'%s' not in '%s'", needle, err->message);
}

/* What the refusal checks share: a model and another one, a snapshot of
 * sessions (its bytes too) with the options it was written with, its
 * lines, and a file name for damaged copies. */
typedef struct {
  TxlModel *m, *mo;
  char *dir, *snap, *bad;
  TxlSessionOptions o;
  GPtrArray *lines;
  gchar *file;
  gsize len;
} Refusals;

static void
refusals_init(Refusals *f, const char *path, const char *other)
{
  g_autoptr(GError) err = NULL;
  f->m = tu_load(path);
  f->mo = tu_load(other);
  f->dir = g_dir_make_tmp("txl-sesssnap-XXXXXX", &err);
  f->snap = g_build_filename(f->dir, "s.snap", NULL);
  f->bad = g_build_filename(f->dir, "bad.snap", NULL);
  f->o = (TxlSessionOptions)TXL_SESSION_OPTIONS_DEFAULT;
  f->o.key_regex = "k=s[0-9]+";
  f->o.score_end = TRUE;
  f->o.idle_lines = 8;
  TxlSessions *s = txl_sessions_new(f->m, &f->o, NULL, NULL, NULL, &err);
  f->lines = make_lines(50, 6, 2);
  for (guint i = 0; i < f->lines->len; i++)
    txl_sessions_push_line(s, f->lines->pdata[i], -1, &err);
  g_assert_true(txl_sessions_save(s, f->snap, NULL, NULL, NULL, &err));
  txl_sessions_free(s);
  g_assert_true(g_file_get_contents(f->snap, &f->file, &f->len, &err));
}

/* The file truncated anywhere, or a bit flipped anywhere. */
static void
refuse_damaged_files(Refusals *f)
{
  for (gsize n = 0; n < f->len; n += 1 + n / 3) {
    write_bytes(f->bad, (guint8 *)f->file, n);
    expect_refused(f->m, f->bad, &f->o, NULL);
  }
  GRand *r = g_rand_new_with_seed(3);
  for (int i = 0; i < 100; i++) {
    guint8 *d = g_memdup2(f->file, f->len);
    d[g_rand_int_range(r, 0, (gint32)f->len)] ^= 1u << g_rand_int_range(r, 0, 8);
    write_bytes(f->bad, d, f->len);
    expect_refused(f->m, f->bad, &f->o, NULL);
    g_free(d);
  }
  g_rand_free(r);
}

/* Another model, other settings, and one stream's snapshot for sessions
 * and the other way round. */
static void
refuse_other_kinds(Refusals *f)
{
  g_autoptr(GError) err = NULL;
  expect_refused(f->mo, f->snap, &f->o, "another model");
  TxlSessionOptions o2 = f->o;
  o2.segment = 4;
  expect_refused(f->m, f->snap, &o2, "other session settings");
  g_assert_null(txl_scorer_load(f->m, f->snap, NULL, NULL, &err));
  g_assert_nonnull(strstr(err->message, "txlsessions snapshot"));
  g_clear_error(&err);
  TxlScorer *sc = txl_scorer_new(f->m, NULL, 0, ignore_score, NULL, &err);
  int32_t ids[9] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
  g_assert_true(txl_scorer_push(sc, ids, 9, &err));
  GHashTable *sect = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                           (GDestroyNotify)g_bytes_unref);
  g_hash_table_insert(sect, g_strdup("txlmodel"), g_bytes_new("x", 1));
  g_assert_true(txl_scorer_save_full(sc, f->bad, NULL, sect, NULL, &err));
  expect_refused(f->m, f->bad, &f->o, "not a txlsessions snapshot");
  /* nor may a scorer write the sessions' section */
  g_hash_table_insert(sect, g_strdup(TXL_SESSIONS_SECTION), g_bytes_new("", 0));
  g_assert_false(txl_scorer_save_full(sc, f->bad, NULL, sect, NULL, &err));
  g_clear_error(&err);
  g_hash_table_unref(sect);
  txl_scorer_free(sc);
}

/* A well-sealed snapshot file of sc's stream with `d` as its sessions
 * section. */
static void
save_section(TxlScorer *sc, const char *file, const guint8 *d, gsize n)
{
  g_autoptr(GError) err = NULL;
  GHashTable *t = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                        (GDestroyNotify)g_bytes_unref);
  g_hash_table_insert(t, g_strdup(TXL_SESSIONS_SECTION), g_bytes_new(d, n));
  g_assert_true(txl_snapshot_save_stream(sc, file, NULL, t, NULL, &err));
  g_hash_table_unref(t);
}

/* A well-sealed file whose sessions section is damaged: cut at every
 * length, bytes changed, counts made huge; never a crash, the cuts always
 * refused. */
static void
refuse_damaged_section(Refusals *f)
{
  g_autoptr(GError) err = NULL;
  GHashTable *parts = NULL;
  TxlScorer *sc = txl_snapshot_load_sessions(f->m, f->snap, &parts, &err);
  g_assert_no_error(err);
  gsize sn;
  const guint8 *sd = g_bytes_get_data(
      g_hash_table_lookup(parts, TXL_SESSIONS_SECTION), &sn);
  guint8 *orig = g_memdup2(sd, sn);
  /* a section version from before or after this txl is named */
  const guint32 versions[] = { 1, 4 };
  const char *says[] = { "version 1, written by", "version 4, newer than" };
  for (guint v = 0; v < 2; v++) {
    guint8 *d = g_memdup2(orig, sn);
    d[0] = (guint8)versions[v]; /* little-endian u32 */
    save_section(sc, f->bad, d, sn);
    g_free(d);
    expect_refused(f->m, f->bad, &f->o, says[v]);
  }
  GRand *r = g_rand_new_with_seed(5);
  for (gsize n = 0; n < sn + 300; n++) {
    guint8 *d = g_memdup2(orig, sn);
    gsize dn = sn;
    if (n < sn) {
      dn = n; /* cut */
    } else {
      gsize at = g_rand_int_range(r, 0, (gint32)sn);
      if (n % 3 == 0)
        d[at] = 0xff;
      else if (n % 3 == 1 && at + 4 <= sn)
        memset(d + at, 0xff, 4);
      else
        d[at] ^= 1u << g_rand_int_range(r, 0, 8);
    }
    save_section(sc, f->bad, d, dn);
    TxlSessions *x = txl_sessions_load(f->m, f->bad, &f->o, NULL, NULL, NULL,
                                       NULL, &err);
    if (n < sn) {
      g_assert_null(x);
      g_assert_error(err, TXL_ERROR, TXL_ERROR_FORMAT);
    }
    if (x) { /* a benign change: it must still run */
      for (guint i = 0; i < 10; i++)
        txl_sessions_push_line(x, f->lines->pdata[i], -1, NULL);
      txl_sessions_finish(x, NULL);
      txl_sessions_free(x);
    }
    g_clear_error(&err);
    g_free(d);
  }
  g_rand_free(r);
  g_free(orig);
  g_hash_table_unref(parts);
  txl_scorer_free(sc);
}

TU_TEST("/sessions-snapshot/refusals", test_refusals)
{
  TxlConfig c;
  tu_small_config(&c);
  g_autoptr(TuPath) path = tu_write_model(&c, 7, NULL);
  g_autoptr(TuPath) other = tu_write_model(&c, 8, NULL);
  Refusals f;
  refusals_init(&f, path, other);
  refuse_damaged_files(&f);
  refuse_other_kinds(&f);
  refuse_damaged_section(&f);
  tu_remove_dir(f.dir);
  g_ptr_array_free(f.lines, TRUE);
  g_free(f.file);
  g_free(f.bad);
  g_free(f.snap);
  g_free(f.dir);
  txl_model_unref(f.mo);
  txl_model_unref(f.m);
}

TU_MAIN()
