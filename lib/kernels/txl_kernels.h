/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The kernels layer as the tools see it (docs/layout.md): the matrix
 * products and which instruction set they use, for `txl bench`.  Internal
 * to txl, not installed. */
#ifndef TXL_LAYER_KERNELS_H
#define TXL_LAYER_KERNELS_H

#include "cpu.h"
#include "gemm.h"

#endif
