/* The one parser of whole numbers that the CLI's options, shapes and the bench's size lists share: a plain
 * decimal integer, a power written B^E, or a shift written 1<<E; anything else, and any value past int64_t, is
 * rejected. */
#ifndef TRR_NUMBER_H
#define TRR_NUMBER_H

#include <stdint.h>

/* Parses a number at the start of text: "4096", "2^24", "1<<24" (a leading '-' only for a plain integer). On
 * success sets *out and *end (the first character after the number) and returns 1; returns 0 when text does not
 * start with a number or the value overflows int64_t. */
int trr_parse_number(const char *text, const char **end, int64_t *out);

/* The same for a whole string: 1 when all of text is one number. */
int trr_parse_number_all(const char *text, int64_t *out);

#endif
