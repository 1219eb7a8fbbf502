/* The ops of examples/custom_op's library, each defined by its own file; trireme_register_ops (swiglu.c) calls
 * them. */
#ifndef CUSTOM_OP_H
#define CUSTOM_OP_H

#include "trireme.h"

trr_status custom_op_define_silu_user(void);    /* silu_user.c */
trr_status custom_op_define_add_rms_norm(void); /* add_rms_norm.c */

#endif
