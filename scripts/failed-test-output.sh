#!/usr/bin/env bash
# Prints, after a failed `make test`, the gtest failure messages of each failed test, taken from
# ctest's LastTest.log. ctest --output-on-failure prints them in the middle of a long run; CI
# shows only the end of the output, so without this the reason a test failed there is lost.
# Usage: scripts/failed-test-output.sh BUILD_DIR [MAX_LINES_PER_TEST]
set -euo pipefail
log="${1:?build dir}/Testing/Temporary/LastTest.log"
max="${2:-40}"
[[ -f "$log" ]] || { echo "no $log"; exit 0; }
echo "=== failure messages of the failed tests (from $log) ==="
awk -v max="$max" '
  / Testing: / { name = $0; sub(/^[0-9]+\/[0-9]+ Testing: /, "", name); n = 0; inout = 0; next }
  /^Output:$/ { inout = 1; next }
  /^<end of output>$/ { inout = 0; next }
  inout { body[n++] = $0; next }
  /^Test [A-Za-z ]+\.$/ { status = $0 }
  # A skipped test passes with a reason and no "Test Passed." line: it is no failure.
  /^Test Pass Reason:$/ { status = "Skipped" }
  / end time: / {
    if (status != "" && status !~ /Passed|Skipped|Not Run/ && n > 0) {
      printf "--- %s (%s)\n", name, status
      shown = 0; keep = 0
      for (i = 0; i < n && shown < max; i++) {
        # From each gtest failure to the next test-framework line, plus the final verdict.
        if (body[i] ~ /Failure$|: Failure|^\[  FAILED  \]|Expected|Value of:|Which is:|Actual:/) keep = 1
        if (body[i] ~ /^\[ *(RUN|OK) /) keep = 0
        if (keep) { print "  " substr(body[i], 1, 400); shown++ }
      }
      if (shown == 0) for (i = (n > 15 ? n - 15 : 0); i < n; i++) print "  " substr(body[i], 1, 400)
    }
    status = ""; n = 0
  }
' "$log"
