#!/bin/sh
# Prints the Criterion test cases a ctest run skipped, grouped by reason (ctest counts a test binary whose cases
# all skipped as passed, and shows no output of passing tests): an absent backend must show as skipped, with why.
# Usage: report_skips.sh BUILD_DIR (after ctest ran there with CRITERION_VERBOSITY_LEVEL=1).
# A slow executable runs as several ctest entries, each with a --filter (tests/CMakeLists.txt): the cases an
# entry's filter leaves out show there as "Test is disabled" and run in another entry, so they are not listed.
log="$1/Testing/Temporary/LastTest.log"
[ -f "$log" ] || { echo "report_skips: no ctest log at $log" >&2; exit 0; }
grep -h '^\[SKIP\] ' "$log" | grep -v ': Test is disabled$' | sed 's/^\[SKIP\] //' | awk '
  { i = index($0, ": "); name = substr($0, 1, i - 1); why = substr($0, i + 2)
    if (!(why in names)) order[n++] = why
    names[why] = names[why] (names[why] == "" ? "" : ", ") name; count[why]++; total++ }
  END {
    if (!total) { print "skipped test cases: none"; exit }
    print "skipped test cases: " total ", by reason:"
    for (k = 0; k < n; k++) { w = order[k]; printf "  %d skipped: %s\n    (%s)\n", count[w], w, names[w] }
  }'
