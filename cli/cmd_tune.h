/* `trireme tune`: times candidate tile configs per op, dtype, layout and shape and writes the tuning database. */
#ifndef TRR_CMD_TUNE_H
#define TRR_CMD_TUNE_H

/* argv[0] is "tune". Returns an exit status (0 ok, 1 a failure, 2 a usage error). */
int trr_cli_tune(int argc, char **argv);

#endif
