/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What tests/integration/test_snapshot_limits.py cannot reach from the command line: a
 * txlsessions snapshot whose parked memory holds NaN or infinity (checksum
 * recomputed), a baseline state with a non-finite value, the removal of a
 * killed writer's temporaries beside a locked live one, and the writer
 * check.  Each refusal names the problem. */
#include "testutil.h"
#include "baseline.h"

#include <fcntl.h>
#include <glib/gstdio.h>
#include <math.h>
#include <sys/file.h>
#include <unistd.h>
#include <zstd.h>
#include "tu_test.h"

#define HEADER 236 /* lib/state/snapshot.c: HEADER_SIZE */

/* Rewrites a snapshot with its payload changed by edit(), a new zstd frame
 * and the checksum recomputed, as a forger would. */
static void
forge(const char *path, void (*edit)(guint8 *raw, gsize n, gpointer),
      gpointer data)
{
  gchar *blob;
  gsize len;
  g_assert_true(g_file_get_contents(path, &blob, &len, NULL));
  guint64 raw_n, comp_n;
  memcpy(&raw_n, blob + HEADER - 16, 8);
  memcpy(&comp_n, blob + HEADER - 8, 8);
  guint8 *raw = g_malloc(raw_n);
  g_assert_cmpuint(ZSTD_decompress(raw, raw_n, blob + HEADER, comp_n), ==,
                   raw_n);
  edit(raw, raw_n, data);
  gsize cap = ZSTD_compressBound(raw_n);
  guint8 *out = g_malloc(HEADER + cap + 32);
  memcpy(out, blob, HEADER);
  gsize comp = ZSTD_compress(out + HEADER, cap, raw, raw_n, 3);
  g_assert_false(ZSTD_isError(comp));
  guint64 c64 = comp;
  memcpy(out + HEADER - 8, &c64, 8);
  GChecksum *cs = g_checksum_new(G_CHECKSUM_SHA256);
  g_checksum_update(cs, out, HEADER + comp);
  gsize dn = 32;
  g_checksum_get_digest(cs, out + HEADER + comp, &dn);
  g_checksum_free(cs);
  g_assert_true(g_file_set_contents(path, (char *)out, HEADER + comp + 32,
                                    NULL));
  g_free(out);
  g_free(raw);
  g_free(blob);
}

/* The payload ends with the sessions section (the only section), whose
 * last bytes are the last parked memory (f32, not shuffled). */
static void
last_float(guint8 *raw, gsize n, gpointer data)
{
  float v = *(float *)data;
  memcpy(raw + n - 4, &v, 4);
}

TU_TEST("/snapfile/sessions-nonfinite", test_sessions_nonfinite)
{
  char *path;
  TxlModel *m = tu_small_model(7, &path);
  g_autofree char *snap = tu_beside(path, "s.snap");
  g_autoptr(GError) err = NULL;
  TxlSessionOptions o = TXL_SESSION_OPTIONS_DEFAULT;
  o.key_regex = "k=s[0-9]+";
  TxlSessions *s = txl_sessions_new(m, &o, NULL, NULL, NULL, &err);
  for (int i = 0; i < 30; i++) {
    char *line = g_strdup_printf("k=s%d the cat sat on the mat %d", i % 3,
                                 i * 7);
    g_assert_cmpint(txl_sessions_push_line(s, line, -1, &err), >, 0);
    g_free(line);
  }
  TxlSnapshotOptions so = TXL_SNAPSHOT_OPTIONS_DEFAULT;
  so.shuffle = FALSE;
  g_assert_true(txl_sessions_save(s, snap, &so, NULL, NULL, &err));
  txl_sessions_free(s);
  TxlSessions *ok = txl_sessions_load(m, snap, &o, NULL, NULL, NULL, NULL,
                                      &err);
  g_assert_no_error(err);
  txl_sessions_free(ok);
  static const float bad[] = { NAN, INFINITY, -INFINITY };
  for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_autofree char *copy = tu_beside(path, "bad.snap");
    gchar *d;
    gsize n;
    g_assert_true(g_file_get_contents(snap, &d, &n, NULL));
    g_assert_true(g_file_set_contents(copy, d, n, NULL));
    g_free(d);
    forge(copy, last_float, (gpointer)&bad[i]);
    TxlSessions *x = txl_sessions_load(m, copy, &o, NULL, NULL, NULL, NULL,
                                       &err);
    g_assert_null(x);
    g_assert_nonnull(err);
    g_assert_nonnull(strstr(err->message, "not a finite number"));
    g_clear_error(&err);
  }
  g_autofree char *copy = tu_beside(path, "bad.snap");
  g_remove(copy);
  g_remove(snap);
  tu_model_done(m, path); /* the model and its directory */
}

TU_TEST("/snapfile/baseline-nonfinite", test_baseline_nonfinite)
{
  TxlBaseline *b = txl_baseline_new(TXL_BASELINE_MAD, 8, 2, 0, NULL);
  for (int i = 0; i < 5; i++)
    txl_baseline_add(b, 1.0 + i);
  GBytes *st = txl_baseline_save(b);
  gsize n;
  const void *src = g_bytes_get_data(st, &n);
  guint8 *d = g_memdup2(src, n);
  double inf = INFINITY;
  memcpy(d + 28 + 8 * 4, &inf, 8); /* the last value kept (flags follow) */
  GBytes *bad = g_bytes_new_take(d, n);
  GError *err = NULL;
  g_assert_false(txl_baseline_restore(b, bad, &err));
  g_assert_nonnull(strstr(err->message, "not a finite number"));
  g_error_free(err);
  g_assert_true(txl_baseline_restore(b, st, NULL));
  g_bytes_unref(bad);
  g_bytes_unref(st);
  txl_baseline_free(b);
}

static void
touch(const char *dir, const char *name)
{
  g_autofree char *p = g_build_filename(dir, name, NULL);
  g_assert_true(g_file_set_contents(p, "x", 1, NULL));
}

static gboolean
exists(const char *dir, const char *name)
{
  g_autofree char *p = g_build_filename(dir, name, NULL);
  return g_file_test(p, G_FILE_TEST_EXISTS);
}

TU_TEST("/snapfile/remove-stale", test_remove_stale)
{
  g_autofree char *dir = g_dir_make_tmp("txl-stale-XXXXXX", NULL);
  g_autofree char *snap = g_build_filename(dir, "a.snap", NULL);
  touch(dir, "a.snap");
  touch(dir, "a.snap.q1W2e3");
  touch(dir, "a.snap.Q1W2E3");
  touch(dir, "a.snap.q1W2e");    /* five characters */
  touch(dir, "a.snap.q1W2e3r");  /* seven */
  touch(dir, "a.snap.q1W.e3");   /* not mkstemp's alphabet */
  touch(dir, "b.snap.q1W2e3");   /* another path's */
  touch(dir, "a.snap.LIVE00");   /* a writer at work holds its lock */
  g_autofree char *live = g_build_filename(dir, "a.snap.LIVE00", NULL);
  int fd = open(live, O_RDONLY);
  g_assert_cmpint(flock(fd, LOCK_EX), ==, 0);
  g_autofree char *target = g_build_filename(dir, "elsewhere", NULL);
  g_autofree char *link = g_build_filename(dir, "a.snap.LINK00", NULL);
  touch(dir, "elsewhere");
  g_assert_cmpint(symlink(target, link), ==, 0); /* not a regular file */
  guint n = 0;
  GError *err = NULL;
  g_assert_true(txl_snapshot_remove_stale(snap, &n, &err));
  g_assert_cmpuint(n, ==, 2);
  g_assert_false(exists(dir, "a.snap.q1W2e3"));
  g_assert_false(exists(dir, "a.snap.Q1W2E3"));
  static const char *kept[] = { "a.snap", "a.snap.q1W2e", "a.snap.q1W2e3r",
                                "a.snap.q1W.e3", "b.snap.q1W2e3",
                                "a.snap.LIVE00", "a.snap.LINK00",
                                "elsewhere" };
  for (gsize i = 0; i < G_N_ELEMENTS(kept); i++)
    g_assert_true(exists(dir, kept[i]));
  close(fd); /* the writer died: next start removes it */
  g_assert_true(txl_snapshot_remove_stale(snap, &n, &err));
  g_assert_cmpuint(n, ==, 1);
  g_assert_false(exists(dir, "a.snap.LIVE00"));
  /* a directory that does not exist yet: nothing to do */
  g_autofree char *none = g_build_filename(dir, "no", "x.snap", NULL);
  g_assert_true(txl_snapshot_remove_stale(none, &n, &err));
  g_assert_cmpuint(n, ==, 0);
  tu_remove_dir(dir);
}

TU_TEST("/snapfile/check-writer", test_check_writer)
{
  GHashTable *t = g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
                                        (GDestroyNotify)g_bytes_unref);
  GError *err = NULL;
  g_assert_true(txl_snapshot_check_writer("f", t, "txl score", &err));
  g_hash_table_insert(t, TXL_SNAPSHOT_WRITER_SECTION,
                      g_bytes_new_static("txl score", 9));
  g_assert_true(txl_snapshot_check_writer("f", t, "txl score", &err));
  g_assert_false(txl_snapshot_check_writer("f", t, "pipeline \"b\"", &err));
  g_assert_nonnull(strstr(err->message, "written by txl score"));
  g_assert_nonnull(strstr(err->message, "not by pipeline \"b\""));
  g_error_free(err);
  g_hash_table_unref(t);
}

TU_MAIN()
