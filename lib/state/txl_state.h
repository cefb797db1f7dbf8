/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The state layer as the tools and plugins see it (docs/layout.md): the
 * snapshot files and their float codecs.  Internal to txl, not installed. */
#ifndef TXL_LAYER_STATE_H
#define TXL_LAYER_STATE_H

#include "snapcodec.h"
#include "snapfile.h"

#endif
