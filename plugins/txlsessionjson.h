/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* An ended session as one JSON line: what txlsink writes for
 * txlsessions' "txl-session" structure, and txld for its session-scored
 * signal, so that both files read the same (txlsessionjson.c; txld
 * compiles it in, it needs GStreamer and libtxl only). */
#ifndef TXL_SESSION_JSON_H
#define TXL_SESSION_JSON_H

#include <gst/gst.h>

/* The JSON object with its '\n'. */
GString *gst_txl_session_json(const GstStructure *s);

#endif
