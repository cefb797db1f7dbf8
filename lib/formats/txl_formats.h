/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The formats layer as the tools and plugins see it (docs/layout.md): the
 * GGUF reader and writer, the model's hyperparameters in a file, JSON
 * writing, JSON depth checks, destructors in one call.  Internal to txl,
 * not installed. */
#ifndef TXL_LAYER_FORMATS_H
#define TXL_LAYER_FORMATS_H

#include "config.h"
#include "filemap.h"
#include "freeeach.h"
#include "gguf.h"
#include "bytes.h"
#include "jsondepth.h"
#include "jsonstr.h"

#endif
