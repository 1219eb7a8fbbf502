#!/bin/sh
# Prints the seconds each ctest entry took, slowest first, and their sum (about what the run would take one
# entry at a time; ctest prints the run's own wall time). Reads the log of the last ctest run.
# Usage: report_times.sh BUILD_DIR [how many, default all]
log="$1/Testing/Temporary/LastTest.log"
[ -f "$log" ] || { echo "report_times: no ctest log at $log" >&2; exit 0; }
awk '
  /^[0-9]+\/[0-9]+ Test: / { name = $3 }
  /^Test time = / && name != "" { printf "%10.1f s  %s\n", $4, name; name = "" }
' "$log" | sort -rn | awk -v top="${2:-0}" '
  BEGIN { n = 0; total = 0 }
  { total += $1; if (top == 0 || NR <= top) lines[NR] = $0; n = NR }
  END {
    print "ctest entries by time (" n " entries, " sprintf("%.1f", total) " s in all):"
    for (i = 1; i <= n; i++) if (i in lines) print lines[i]
  }'
