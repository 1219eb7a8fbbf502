/* IEEE binary16 conversion on the host, round to nearest even (SPEC.md: half ops round once on store). */
#ifndef TRR_HALF_H
#define TRR_HALF_H

#include <stdint.h>

uint16_t trr_half_from_float(float f);
float trr_half_to_float(uint16_t h);

#endif
