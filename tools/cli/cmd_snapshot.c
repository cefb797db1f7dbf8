/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txl snapshot info FILE: print a snapshot's header and verify it.
 * txl snapshot bench: size and speed of snapshots of a full memory, for
 * each storage mode, and the score drift of the lossy ones. */
#include "cmd.h"
#include "txl.h"

#include <glib/gstdio.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static int
cmd_info(const char *path)
{
  g_autoptr(GError) err = NULL;
  g_autoptr(GString) out = g_string_new(NULL);
  if (!txl_snapshot_describe(path, out, &err)) {
    fprintf(stderr, "txl snapshot: %s\n", err->message);
    return 1;
  }
  fputs(out->str, stdout);
  return 0;
}

typedef struct {
  float *lp;
  gint64 base, n;
} Scores;

static void
keep(gint64 pos, int32_t token, float logprob, gpointer data)
{
  Scores *s = data;
  if (pos >= s->base && pos < s->base + s->n)
    s->lp[pos - s->base] = logprob;
}

static void
collect_id(int32_t id, gint64 line, gsize start, gsize end, gpointer data)
{
  g_array_append_val((GArray *)data, id);
}

/* ids: the text's tokens, repeated as needed, when a file is given (a
 * realistic memory), else a fixed pseudo-random sequence */
static int32_t *
bench_ids(TxlModel *m, const char *text_path, gsize want, GError **error)
{
  int32_t *ids = g_new(int32_t, want);
  int n_token = txl_model_config(m)->n_token;
  if (!text_path) {
    guint32 x = 12345;
    for (gsize i = 0; i < want; i++) {
      x = x * 1664525u + 1013904223u;
      ids[i] = (int32_t)((x >> 8) % (guint32)n_token);
    }
    return ids;
  }
  gchar *text;
  gsize len;
  if (!g_file_get_contents(text_path, &text, &len, error)) {
    g_free(ids);
    return NULL;
  }
  GArray *a = g_array_new(FALSE, FALSE, sizeof(int32_t));
  txl_cmd_encode(txl_model_tokenizer(m), text, len, collect_id, a);
  g_free(text);
  if (a->len == 0) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID, "%s: no tokens",
                text_path);
    g_array_free(a, TRUE);
    g_free(ids);
    return NULL;
  }
  for (gsize i = 0; i < want; i++)
    ids[i] = g_array_index(a, int32_t, i % a->len);
  g_array_free(a, TRUE);
  return ids;
}

static int
cmd_bench(int argc, char **argv)
{
  g_autofree char *model_path = NULL, *memory = NULL, *text = NULL;
  int mem_len = -1, segment = 0, after = 256, repeat = 3;
  GOptionEntry entries[] = {
    { "model", 'm', 0, G_OPTION_ARG_FILENAME, &model_path, "Model file (default: the bundled model, or TXL_MODEL)", "MODEL" },
    { "mem-len", 0, 0, G_OPTION_ARG_INT, &mem_len, "Memory length (default: the model's)", "N" },
    { "segment", 0, 0, G_OPTION_ARG_INT, &segment, "Segment length (default: tgt_len)", "N" },
    { "memory", 0, 0, G_OPTION_ARG_STRING, &memory, "kv (default) or hidden", "KIND" },
    { "text", 0, 0, G_OPTION_ARG_FILENAME, &text, "Fill the memory with this text (default: pseudo-random ids)", "FILE" },
    { "after", 0, 0, G_OPTION_ARG_INT, &after, "Tokens scored after a restore to measure drift (default 256)", "N" },
    { NULL },
  };
  g_autoptr(GOptionContext) ctx =
      txl_cmd_options("- snapshot size and speed", NULL, entries);
  if (!txl_cmd_parse("txl snapshot bench", ctx, &model_path, &argc, &argv))
    return 2;
  if (after < 1 || after > 1 << 20) {
    fprintf(stderr, "txl snapshot bench: --after takes a count from 1 to "
                    "1048576\n");
    return 2;
  }
  g_autoptr(GError) err = NULL;
  TxlModel *m = txl_cmd_load_model("txl snapshot bench", model_path);
  if (!m)
    return 1;
  TxlStreamOptions o = TXL_STREAM_OPTIONS_DEFAULT;
  o.mem_len = mem_len;
  o.memory = memory && !strcmp(memory, "hidden") ? TXL_MEMORY_HIDDEN
                                                 : TXL_MEMORY_KV;
  Scores ref = { 0 }, got = { 0 };
  TxlScorer *sc = txl_scorer_new(m, &o, segment, keep, &ref, &err);
  if (!sc) {
    fprintf(stderr, "txl snapshot bench: %s\n", err->message);
    txl_model_unref(m);
    return 1;
  }
  int ml = txl_stream_mem_len(txl_scorer_stream(sc));
  int seg = txl_stream_max_segment(txl_scorer_stream(sc));
  /* enough tokens to fill the memory, ending on a segment boundary plus
   * one, so that nothing is pending */
  gsize fill = ((gsize)(ml + seg - 1) / seg + 1) * seg + 1;
  gsize total = fill + (gsize)after + seg;
  int32_t *ids = bench_ids(m, text, total, &err);
  if (!ids) {
    fprintf(stderr, "txl snapshot bench: %s\n", err->message);
    txl_scorer_free(sc);
    txl_model_unref(m);
    return 1;
  }
  ref.lp = g_new0(float, after);
  ref.base = (gint64)fill;
  ref.n = after;
  got = ref;
  got.lp = g_new0(float, after);
  txl_scorer_push(sc, ids, fill, &err);
  g_autofree char *dir = g_dir_make_tmp("txl-snapbench-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "s.snap", NULL);
  gsize state = txl_stream_state_bytes(txl_scorer_stream(sc));
  printf("{\"model\": \"%s\", \"memory\": \"%s\", \"mem_len\": %d, "
         "\"mem_used\": %d, \"state_bytes\": %zu, \"modes\": [\n", model_path,
         o.memory == TXL_MEMORY_HIDDEN ? "hidden" : "kv", ml,
         txl_stream_mem_used(txl_scorer_stream(sc)), state);
  /* the reference continuation, from the live scorer */
  txl_scorer_push(sc, ids + fill, (gsize)after + seg, &err);
  txl_scorer_free(sc);
  sc = txl_scorer_new(m, &o, segment, keep, &got, &err);
  txl_scorer_push(sc, ids, fill, &err);
  static const char *names[] = { "f32", "f16", "bf16" };
  gboolean first = TRUE;
  for (int p = TXL_SNAPSHOT_F32; p <= TXL_SNAPSHOT_BF16; p++)
    for (int sh = 1; sh >= 0; sh--) {
      TxlSnapshotOptions so = { p, sh, 0 };
      double save = 1e9, load = 1e9;
      gsize bytes = 0;
      TxlScorer *back = NULL;
      for (int r = 0; r < repeat; r++) {
        gint64 t0 = g_get_monotonic_time();
        if (!txl_scorer_save_full(sc, path, &so, NULL, &bytes, &err))
          goto fail;
        gint64 t1 = g_get_monotonic_time();
        txl_scorer_free(back);
        back = txl_scorer_load(m, path, keep, &got, &err);
        gint64 t2 = g_get_monotonic_time();
        if (!back)
          goto fail;
        save = MIN(save, (t1 - t0) / 1e3);
        load = MIN(load, (t2 - t1) / 1e3);
      }
      txl_scorer_push(back, ids + fill, (gsize)after + seg, &err);
      txl_scorer_free(back);
      double maxd = 0, sumd = 0;
      for (int i = 0; i < after; i++) {
        double d = fabs((double)got.lp[i] - ref.lp[i]);
        maxd = MAX(maxd, d);
        sumd += d;
      }
      printf("%s  {\"precision\": \"%s\", \"shuffle\": %s, \"file_bytes\": "
             "%zu, \"ratio\": %.3f, \"save_ms\": %.1f, \"load_ms\": %.1f, "
             "\"max_abs_dlogprob\": %.3g, \"mean_abs_dlogprob\": %.3g}",
             first ? "" : ",\n", names[p], sh ? "true" : "false", bytes,
             (double)state / bytes, save, load, maxd, sumd / after);
      first = FALSE;
    }
  printf("\n]}\n");
  g_remove(path);
  g_rmdir(dir);
  txl_scorer_free(sc);
  g_free(ids);
  g_free(ref.lp);
  g_free(got.lp);
  txl_model_unref(m);
  return 0;
fail:
  fprintf(stderr, "txl snapshot bench: %s\n", err->message);
  return 1;
}

int
txl_cmd_snapshot(int argc, char **argv)
{
  if (argc == 3 && strcmp(argv[1], "info") == 0)
    return cmd_info(argv[2]);
  if (argc >= 2 && strcmp(argv[1], "bench") == 0)
    return cmd_bench(argc - 1, argv + 1);
  fprintf(stderr, "usage: txl snapshot info FILE\n"
                  "  prints the snapshot's header as JSON and verifies its "
                  "checksum and payload;\n  exit status 1 for a bad file\n"
                  "       txl snapshot bench -m MODEL [--text FILE] ...\n"
                  "  size, save and load time of each storage mode, and the "
                  "score drift of f16/bf16\n");
  return 2;
}
