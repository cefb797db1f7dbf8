/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The ingest layer as the tools and plugins see it (docs/layout.md): log
 * protocols turned into record lines.  Internal to txl, not installed. */
#ifndef TXL_LAYER_INGEST_H
#define TXL_LAYER_INGEST_H

#include "reader.h"
#include "otlp.h"
#include "syslog.h"

#endif
