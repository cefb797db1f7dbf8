/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Test driver for tests/reference/test_grad_torch.py: one training run of a model
 * file over B streams x NSEG segments of T tokens (dropout off), with the
 * gradients of every segment's loss summed, written for comparison with
 * PyTorch autograd.
 *
 *   grad_dump MODEL.gguf IDS.bin B T NSEG OUT.bin
 *
 * IDS.bin: int32 little endian; for each segment, B*T inputs then B*T
 * targets (row b*T + t: stream b, token t).
 * OUT.bin: "TXLG", u32 NSEG, f64 loss per segment, u32 tensors, then per
 * tensor u32 name length, name, u32 n_dims, i64 rows, i64 cols and the
 * float32 gradient (rows*cols). */
#include "params.h"
#include "train.h"

#include <stdio.h>
#include <stdlib.h>

static void
put(GByteArray *out, const void *p, gsize n)
{
  g_byte_array_append(out, p, (guint)n);
}

int
main(int argc, char **argv)
{
  if (argc != 7) {
    fprintf(stderr, "usage: grad_dump MODEL IDS B T NSEG OUT\n");
    return 2;
  }
  GError *err = NULL;
  int B = atoi(argv[3]), T = atoi(argv[4]), nseg = atoi(argv[5]);
  TxlParams *p = txl_params_load_gguf(argv[1], &err);
  if (!p) {
    fprintf(stderr, "grad_dump: %s\n", err->message);
    return 1;
  }
  gchar *ids = NULL;
  gsize len = 0;
  const gsize per = (gsize)B * T;
  if (!g_file_get_contents(argv[2], &ids, &len, &err) ||
      len != sizeof(int32_t) * per * 2 * nseg) {
    fprintf(stderr, "grad_dump: %s: %s\n", argv[2],
            err ? err->message : "wrong size");
    return 1;
  }
  TxlTrainOptions o = TXL_TRAIN_OPTIONS_DEFAULT;
  o.batch = B;
  o.seg_len = T;
  TxlTrainState *s = txl_train_state_new(p, &o, &err);
  if (!s) {
    fprintf(stderr, "grad_dump: %s\n", err->message);
    return 1;
  }
  GByteArray *out = g_byte_array_new();
  put(out, "TXLG", 4);
  guint32 u = (guint32)nseg;
  put(out, &u, 4);
  txl_params_zero_grad(p);
  const int32_t *seq = (const int32_t *)ids;
  for (int k = 0; k < nseg; k++) {
    double loss = txl_train_step(s, seq + 2 * per * k, seq + 2 * per * k + per);
    put(out, &loss, 8);
  }
  u = (guint32)p->n_tensors;
  put(out, &u, 4);
  for (int i = 0; i < p->n_tensors; i++) {
    const TxlParamTensor *t = &p->tensors[i];
    guint32 nl = (guint32)strlen(t->name), nd = (guint32)t->n_dims;
    put(out, &nl, 4);
    put(out, t->name, nl);
    put(out, &nd, 4);
    put(out, &t->rows, 8);
    put(out, &t->cols, 8);
    put(out, p->grad + t->offset, sizeof(float) * t->size);
  }
  if (!g_file_set_contents(argv[6], (const gchar *)out->data, out->len,
                           &err)) {
    fprintf(stderr, "grad_dump: %s\n", err->message);
    return 1;
  }
  g_byte_array_unref(out);
  g_free(ids);
  txl_train_state_free(s);
  txl_params_free(p);
  return 0;
}
