/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "cmd.h"
#include "txl_formats.h"
#include "txl.h"

#include <string.h>

#include <stdio.h>

int
txl_cmd_info(int argc, char **argv)
{
  g_autoptr(GOptionContext) ctx =
      txl_cmd_options("MODEL", "Print a model file's configuration.", NULL);
  if (!txl_cmd_parse("txl info", ctx, NULL, &argc, &argv))
    return 2;
  if (argc != 2) {
    fprintf(stderr, "txl info: expected exactly one MODEL file\n");
    return 2;
  }
  TxlModel *m = txl_cmd_load_model("txl info", argv[1]);
  if (!m)
    return 1;
  const TxlConfig *c = txl_model_config(m);
  printf("{\"n_token\": %d, \"d_model\": %d, \"d_embed\": %d, \"n_head\": %d, "
         "\"d_head\": %d, \"d_inner\": %d, \"n_layer\": %d, \"mem_len\": %d, "
         "\"tgt_len\": %d, \"clamp_len\": %d, \"same_length\": %s, "
         "\"pre_lnorm\": %s, \"untie_r\": %s, \"tie_weight\": %s, "
         "\"div_val\": %d, \"cutoffs\": [",
         c->n_token, c->d_model, c->d_embed, c->n_head, c->d_head, c->d_inner,
         c->n_layer, c->mem_len, c->tgt_len, c->clamp_len,
         c->same_length ? "true" : "false", c->pre_lnorm ? "true" : "false",
         c->untie_r ? "true" : "false", c->tie_weight ? "true" : "false",
         c->div_val);
  for (int i = 0; i < c->n_cutoffs; i++)
    printf("%s%d", i ? ", " : "", c->cutoffs[i]);
  const TxlTokenizer *t = txl_model_tokenizer(m);
  const char *type = "unknown";
  switch (txl_tokenizer_type(t)) {
  case TXL_TOKENIZER_BYTE: type = "byte"; break;
  case TXL_TOKENIZER_WORD: type = "word"; break;
  case TXL_TOKENIZER_NONE: type = "none"; break;
  case TXL_TOKENIZER_BPE: type = "bpe"; break;
  }
  printf("], \"cluster_order\": \"%s\", \"tokenizer\": \"%s\", "
         "\"model_id\": \"%s\", \"vocab_id\": \"%s\"",
         c->cluster_order == TXL_CLUSTER_OFFICIAL ? "official" : "hf",
         type, txl_model_id(m), txl_model_vocab_id(m));
  const TxlCalibration *cal = txl_model_calibration(m);
  if (cal) {
    static const char *kinds[] = { "max-line", "max-line-sum", "max-token",
                                   "mean" };
    GString *j = g_string_new(", \"anomaly\": {\"mode\": ");
    g_string_append(j, cal->sessions ? "\"sessions\"" : "\"single-stream\"");
    if (cal->sessions) {
      g_string_append(j, ", \"session_key\": ");
      txl_json_append_string(j, cal->session_key, strlen(cal->session_key));
      g_string_append_printf(j, ", \"session_key_group\": %d",
                             cal->session_key_group);
    }
    g_string_append_printf(j, ", \"session_score\": \"%s\", "
                           "\"session_end_marker\": %s, "
                           "\"session_threshold\": %.17g, "
                           "\"line_threshold_bpb\": %.17g",
                           kinds[cal->session_score],
                           cal->session_end_marker ? "true" : "false",
                           cal->session_threshold, cal->line_threshold_bpb);
    if (cal->rule) {
      g_string_append(j, ", \"rule\": ");
      txl_json_append_string(j, cal->rule, strlen(cal->rule));
    }
    g_string_append(j, "}");
    fputs(j->str, stdout);
    g_string_free(j, TRUE);
  }
  printf("}\n");
  txl_model_unref(m);
  return 0;
}
