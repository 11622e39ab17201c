#!/usr/bin/env bash
# dashboard-load.sh - issue 32's load figures: `herald dashboard` with its page open in headless Chromium while
# heraldd takes 10,000 posts a second for 10 s (RATE and SECONDS_OF_LOAD change them). It runs
# EndToEndTests/DashboardLoadTests, which is skipped unless HERALD_DASHBOARD_LOAD=1, and prints its figures: the lag
# of a 100 ms timer measured inside the page, the dashboard's RSS before, at its peak and after, what the page says
# the dashboard missed, and whether another subscriber of heraldd received every post.
#
#   Benchmarks/dashboard-load.sh
#   RATE=20000 Benchmarks/dashboard-load.sh
#
# Needs chromium (contrib/ci/install-test-tools.sh installs it). Debug build, as the tests are: the figures are for
# the dashboard as `swift build` makes it. Run it alone on a quiet machine; Benchmarks/README.md has the results.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build --build-tests >/dev/null
HERALD_DASHBOARD_LOAD=1 HERALD_REQUIRE_TEST_TOOLS=1 swift test --skip-build \
    --filter DashboardLoadTests 2>&1 | grep -E "dashboard load:|✔|✘|↳ the" || true
