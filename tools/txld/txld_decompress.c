/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Compressed request bodies (txld_decompress.h).  Runs on the main loop,
 * one body at a time, each decoded whole in 64 KiB steps; the output is
 * checked against the limit before every step is kept. */
#include "txld_decompress.h"

#include <gio/gio.h>
#include <string.h>
#include <zstd.h>
#include <zstd_errors.h>

#define STEP 65536
/* zstd's own default limit of a decoder's window: 128 MiB */
#define ZSTD_WINDOW_LOG_CAP 27

/* The decoded bytes: grown by doubling, never past max, so a body
 * refused for its size allocated at most the limit. */
typedef struct {
  guint8 *p;
  gsize len, cap, max;
} Out;

static gboolean
out_append(Out *o, const guint8 *data, gsize n)
{
  if (n == 0)
    return TRUE;
  if (n > o->max - o->len)
    return FALSE;
  if (o->len + n > o->cap) {
    gsize cap = MAX(o->len + n, MIN(o->max, MAX(o->cap * 2, (gsize)STEP)));
    o->p = g_realloc(o->p, cap);
    o->cap = cap;
  }
  memcpy(o->p + o->len, data, n);
  o->len += n;
  return TRUE;
}

static gboolean
fail(guint *status, const char **why, guint code, const char *text)
{
  *status = code;
  *why = text;
  return FALSE;
}

#define TOO_LARGE "the body decompresses past --ingest-max-body"

/* HTTP's deflate is zlib (RFC 1950: a two-byte header, then deflate),
 * but some clients send bare deflate (RFC 1951).  A zlib header says
 * method 8 with a window of at most 32 KiB, and its two bytes are a
 * multiple of 31; anything else is taken as bare deflate. */
static GZlibCompressorFormat
deflate_format(const guint8 *in, gsize n)
{
  if (n >= 2 && (in[0] & 0x0f) == 8 && (in[0] >> 4) <= 7 &&
      ((guint)in[0] << 8 | in[1]) % 31 == 0)
    return G_ZLIB_COMPRESSOR_FORMAT_ZLIB;
  return G_ZLIB_COMPRESSOR_FORMAT_RAW;
}

/* gzip and deflate through GIO's zlib converter.  A gzip body may hold
 * several members, one after the other (RFC 1952, as `cat a.gz b.gz`
 * makes): each is decoded, as gzip -d does.  Bytes after the end that
 * start no member make the body corrupt: a request is all or nothing. */
static gboolean
inflate_zlib(const guint8 *in, gsize n, GZlibCompressorFormat format, Out *o,
             guint *status, const char **why)
{
  g_autoptr(GConverter) z = G_CONVERTER(g_zlib_decompressor_new(format));
  guint8 chunk[STEP];
  gsize done = 0;
  for (;;) {
    gsize rd = 0, wr = 0;
    g_autoptr(GError) e = NULL;
    GConverterResult r = g_converter_convert(z, in + done, n - done, chunk,
                                             sizeof chunk,
                                             G_CONVERTER_INPUT_AT_END, &rd,
                                             &wr, &e);
    done += rd;
    if (r == G_CONVERTER_ERROR)
      return fail(status, why, 400, format == G_ZLIB_COMPRESSOR_FORMAT_GZIP
                  ? "the gzip body is corrupt or cut short"
                  : "the deflate body is corrupt or cut short");
    if (!out_append(o, chunk, wr))
      return fail(status, why, 413, TOO_LARGE);
    if (r == G_CONVERTER_FINISHED) {
      if (done == n)
        return TRUE;
      if (format != G_ZLIB_COMPRESSOR_FORMAT_GZIP || n - done < 2 ||
          in[done] != 0x1f || in[done + 1] != 0x8b)
        return fail(status, why, 400, "bytes follow the end of the "
                    "compressed body");
      g_converter_reset(z);
      continue;
    }
    if (rd == 0 && wr == 0)
      return fail(status, why, 400, "the compressed body is cut short");
  }
}

/* zstd keeps a window of what it decoded to copy from, as large as the
 * frame asks.  Frames asking more than this are refused (413): 8 MiB,
 * which zstd's levels up to 19 stay within and RFC 8878 asks decoders
 * to support, or the power of two at or above the body limit when that
 * is more (a frame of a known size never needs a window past it). */
static int
zstd_window_log(guint64 max)
{
  int log = 23;
  while (log < ZSTD_WINDOW_LOG_CAP && ((guint64)1 << log) < max)
    log++;
  return log;
}

static gboolean
inflate_zstd(const guint8 *in, gsize n, Out *o, guint *status,
             const char **why)
{
  ZSTD_DCtx *d = ZSTD_createDCtx();
  if (!d)
    return fail(status, why, 503, "no memory for a zstd decoder");
  ZSTD_DCtx_setParameter(d, ZSTD_d_windowLogMax, zstd_window_log(o->max));
  ZSTD_inBuffer ib = { in, n, 0 };
  guint8 chunk[STEP];
  gboolean ok = FALSE, ended = FALSE;
  for (;;) {
    ZSTD_outBuffer ob = { chunk, sizeof chunk, 0 };
    gsize was = ib.pos;
    size_t r = ZSTD_decompressStream(d, &ob, &ib);
    if (ZSTD_isError(r)) {
      if (ZSTD_getErrorCode(r) == ZSTD_error_frameParameter_windowTooLarge)
        fail(status, why, 413, "the zstd frame asks for a window over the "
             "decoder's limit (8 MiB, or --ingest-max-body when larger)");
      else
        fail(status, why, 400, "the zstd body is corrupt");
      break;
    }
    if (!out_append(o, chunk, ob.pos)) {
      fail(status, why, 413, TOO_LARGE);
      break;
    }
    /* a call that ends a frame returns 0; when its output filled the
     * step, the next call, with nothing left to read or write, returns
     * what a next frame's header would need instead: that call says
     * nothing about the last frame */
    if (ob.pos > 0 || ib.pos > was)
      ended = r == 0;
    /* all input read and the output not full: nothing more to come */
    if (ib.pos == ib.size && ob.pos < ob.size) {
      ok = ended || fail(status, why, 400, "the zstd body is cut short");
      break;
    }
  }
  ZSTD_freeDCtx(d);
  return ok;
}

GBytes *
txld_decompress(GBytes *raw, const char *encoding, guint64 max,
                guint *status, const char **why)
{
  g_autofree char *enc = g_strstrip(g_strdup(encoding ? encoding : ""));
  if (!*enc || g_ascii_strcasecmp(enc, "identity") == 0)
    return g_bytes_ref(raw);
  gsize n;
  const guint8 *in = g_bytes_get_data(raw, &n);
  static const guint8 empty[1];
  if (!in) /* an empty body: no pointer, and none may be offset (C) */
    in = empty;
  Out o = { NULL, 0, 0, (gsize)MIN(max, (guint64)G_MAXSIZE) };
  gboolean ok;
  if (g_ascii_strcasecmp(enc, "gzip") == 0 ||
      g_ascii_strcasecmp(enc, "x-gzip") == 0)
    ok = inflate_zlib(in, n, G_ZLIB_COMPRESSOR_FORMAT_GZIP, &o, status, why);
  else if (g_ascii_strcasecmp(enc, "deflate") == 0)
    ok = inflate_zlib(in, n, deflate_format(in, n), &o, status, why);
  else if (g_ascii_strcasecmp(enc, "zstd") == 0)
    ok = inflate_zstd(in, n, &o, status, why);
  else
    ok = fail(status, why, 415, "Content-Encoding: gzip, deflate or zstd "
              "(or none)");
  if (!ok) {
    g_free(o.p);
    return NULL;
  }
  return g_bytes_new_take(o.p, o.len);
}
