/* SPDX-License-Identifier: GPL-2.0-or-later */
/* r4kit: TRANSITIONAL. The ccreg40 reader is libimage/obj/ccreg.h; this
 * header keeps its old names for libimage/repair/ and libimage/check/
 * until they say obj_ccreg_* themselves (then delete it). New code
 * includes libimage/obj/ccreg.h. */
#ifndef R4_LIBIMAGE_OBJ_CLUSTER_H
#define R4_LIBIMAGE_OBJ_CLUSTER_H

#include "libimage/obj/ccreg.h"

#define obj_cc obj_ccreg
#define obj_cc_params obj_ccreg_params
#define obj_cc_verify obj_ccreg_verify
#define obj_cc_cut obj_ccreg_cut

#endif
