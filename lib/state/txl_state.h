/* The state layer as the tools and plugins see it (docs/layout.md): the
 * little-endian fields of state records.  Internal to txl, not installed. */
#ifndef TXL_LAYER_STATE_H
#define TXL_LAYER_STATE_H

#include "bytes.h"

#endif
