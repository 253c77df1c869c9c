#!/bin/bash
# Issue #30's figure: seconds from a fresh clone to a serving `make run`, and the size of the
# virtual environment it made (printed, never asserted).
#
#   benchmarks/clone_to_serving.sh COMMIT [DIR] [PORT]
#
# Clones this repository at COMMIT into DIR (default /tmp/clarion-clone-COMMIT, replaced), runs
# `make run` there with pip's cache off (every package downloaded, as on a new machine), polls
# the pending list until it answers, prints the time and `du -sh .venv`, stops the server and
# lists what the run left in the clone that git does not ignore. Run it on a quiet machine and
# alternate the commits you compare.
set -u
commit=$1
dir=${2:-/tmp/clarion-clone-$commit}
port=${3:-8765}
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
rm -rf "$dir"
git clone -q "$repo" "$dir"
cd "$dir" && git checkout -q "$commit"
start=$(date +%s.%N)
PIP_NO_CACHE_DIR=1 CLARION_PORT=$port setsid make run > "$dir.log" 2>&1 &
until curl -s -o /dev/null "http://127.0.0.1:$port/api/v1/clarification/pending"; do
  sleep 0.2
  if [ "$(echo "$(date +%s.%N) - $start > 600" | bc)" = 1 ]; then echo "timed out"; break; fi
done
end=$(date +%s.%N)
echo "clone-to-serving: $(echo "$end - $start" | bc) s"
echo "venv: $(du -sh .venv | cut -f1)"
pkill -f "$dir/.venv/bin/python"
sleep 1
git status --short | sed 's/^/left untracked: /'
