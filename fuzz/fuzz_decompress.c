/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: txld's request body decoding (tools/txld/
 * txld_decompress.c: gzip, deflate, zstd under a size bound).
 *
 * Byte 0 picks the Content-Encoding, byte 1 the bound; the rest is the
 * body, decoded as it is (any bytes: an answer, never a crash, never more
 * than the bound), and also encoded first by a real encoder (zstd or zlib)
 * and then decoded, which must give the body back exactly when it fits
 * the bound and 413 when it does not. */
#include "fuzz_check.h"
#include "../tools/txld/txld_decompress.h"

#include <gio/gio.h>
#include <string.h>
#include <zstd.h>

static const char *encodings[] = { "gzip", "x-gzip", "deflate", "zstd",
                                   "identity", "br", NULL, "ZSTD" };

/* body encoded by GLib's zlib (gzip or zlib framing) */
static GBytes *
zlib_encode(const guint8 *p, gsize n, GZlibCompressorFormat fmt)
{
  GConverter *c = G_CONVERTER(g_zlib_compressor_new(fmt, 6));
  gsize cap = n + n / 2 + 128, used = 0;
  guint8 *out = g_malloc(cap);
  gsize in_used = 0;
  for (;;) {
    gsize r, w;
    GError *e = NULL;
    GConverterResult res = g_converter_convert(c, p + in_used, n - in_used,
        out + used, cap - used, G_CONVERTER_INPUT_AT_END, &r, &w, &e);
    CHECK(res != G_CONVERTER_ERROR || g_error_matches(e, G_IO_ERROR, G_IO_ERROR_NO_SPACE));
    g_clear_error(&e);
    in_used += r;
    used += w;
    if (res == G_CONVERTER_FINISHED)
      break;
    cap *= 2;
    out = g_realloc(out, cap);
  }
  g_object_unref(c);
  return g_bytes_new_take(out, used);
}

/* an answer is either bytes within the bound or a status with a reason */
static GBytes *
decode(GBytes *raw, const char *enc, guint64 max, guint *status)
{
  const char *why = NULL;
  *status = 0;
  GBytes *out = txld_decompress(raw, enc, max, status, &why);
  if (out) {
    CHECK(g_bytes_get_size(out) <= max || !enc || !*enc ||
          !g_ascii_strcasecmp(enc, "identity"));
  } else {
    CHECK(*status == 400 || *status == 413 || *status == 415);
    CHECK(why && *why);
  }
  return out;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 2)
    return 0;
  const char *enc = encodings[data[0] % G_N_ELEMENTS(encodings)];
  guint64 max = (guint64)1 << (6 + data[1] % 15); /* 64 B to 1 MiB */
  const guint8 *body = data + 2;
  gsize n = size - 2;
  guint status;

  GBytes *raw = g_bytes_new(body, n);
  GBytes *out = decode(raw, enc, max, &status);
  if (out)
    g_bytes_unref(out);
  g_bytes_unref(raw);

  /* a real encoding of the body decodes back to it */
  GBytes *enc_body = NULL;
  const char *name = NULL;
  switch (data[0] % 3) {
  case 0: {
    gsize cap = ZSTD_compressBound(n);
    guint8 *z = g_malloc(cap);
    size_t zn = ZSTD_compress(z, cap, body, n, 1 + data[1] % 5);
    CHECK(!ZSTD_isError(zn));
    enc_body = g_bytes_new_take(z, zn);
    name = "zstd";
    break;
  }
  case 1:
    enc_body = zlib_encode(body, n, G_ZLIB_COMPRESSOR_FORMAT_GZIP);
    name = "gzip";
    break;
  default:
    enc_body = zlib_encode(body, n, G_ZLIB_COMPRESSOR_FORMAT_ZLIB);
    name = "deflate";
    break;
  }
  out = decode(enc_body, name, max, &status);
  if (n <= max) {
    CHECK(out != NULL);
    gsize on;
    const guint8 *op = g_bytes_get_data(out, &on);
    CHECK(on == n && (n == 0 || memcmp(op, body, n) == 0));
  } else {
    CHECK(out == NULL && status == 413);
  }
  if (out)
    g_bytes_unref(out);
  g_bytes_unref(enc_body);
  return 0;
}
