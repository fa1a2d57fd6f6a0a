#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance, pinned in
# package.json) against plughost serving Streamable HTTP with only the conformance plugin, and
# compares the outcome with expected-failures.txt. `make conformance` calls it after `make build`.
#
#   conformance/run.sh PLUGHOST CONFORMANCE_PLUGIN
#
# It fails when a scenario not listed in expected-failures.txt fails, when a listed one passes,
# when the file names a scenario the suite does not have, or when a process outlives the run.
# Needs `npm ci` in conformance/ (Node 22 comes from the `node` package there). Every check of
# every scenario is kept in bin/conformance/ (or $CONFORMANCE_RESULTS); $CONFORMANCE_EXPECTED_FAILURES
# names another expected-failures file.
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 PLUGHOST CONFORMANCE_PLUGIN" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
plughost=$(realpath "$1")
plugin=$(realpath "$2")
node=$here/node_modules/.bin/node
suite=$here/node_modules/@modelcontextprotocol/conformance/dist/index.js
expected=${CONFORMANCE_EXPECTED_FAILURES:-$here/expected-failures.txt}
results=${CONFORMANCE_RESULTS:-$here/../bin/conformance}

if [[ ! -x $node || ! -f $suite ]]; then
  echo "conformance: the suite is not installed; run: (cd conformance && npm ci)" >&2
  exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/plughost-conformance.XXXXXX")
host_pid=
# cleanup stops plughost (SIGTERM, then SIGKILL after 10 s), checks that no plugin process
# outlived it, and removes the temporary directory. It runs on every exit, failures included.
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  if [[ -n $host_pid ]] && kill -0 "$host_pid" 2>/dev/null; then
    kill -TERM "$host_pid" 2>/dev/null || true
    (sleep 10 && kill -KILL "$host_pid" 2>/dev/null && echo "conformance: plughost ignored SIGTERM for 10 s; killed" >&2) &
    local watchdog=$!
    wait "$host_pid" 2>/dev/null || true
    kill "$watchdog" 2>/dev/null || true
    wait "$watchdog" 2>/dev/null || true
  fi
  local pid exe leftover=()
  for exe in /proc/[0-9]*/exe; do
    pid=${exe#/proc/}
    pid=${pid%/exe}
    if [[ $(readlink "$exe" 2>/dev/null) == "$tmp"/* ]]; then
      leftover+=("$pid")
    fi
  done
  if ((${#leftover[@]} > 0)); then
    echo "conformance: processes outlived plughost: ${leftover[*]}; killing them" >&2
    kill -KILL "${leftover[@]}" 2>/dev/null || true
    ((status == 0)) && status=1
  fi
  rm -rf "$tmp"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Read expected-failures.txt: name and reason per line; check every name against the suite.
known=$("$node" "$suite" list --server | sed -n 's/^  - \([^ ]*\).*/\1/p')
declare -A listed=()
{
  echo "server:"
  while read -r name reason; do
    [[ -z $name || $name == \#* ]] && continue
    if ! grep -qxF -- "$name" <<<"$known"; then
      echo "conformance: $expected names $name, which is not a server scenario of the suite" >&2
      exit 1
    fi
    if [[ -z $reason ]]; then
      echo "conformance: $expected lists $name without a reason" >&2
      exit 1
    fi
    if [[ -n ${listed[$name]:-} ]]; then
      echo "conformance: $expected lists $name twice" >&2
      exit 1
    fi
    listed[$name]=1
    echo "  - $name"
  done <"$expected"
} >"$tmp/expected-failures.yml"
# No expected failures: the suite wants an empty list, not a null.
if ((${#listed[@]} == 0)); then
  echo "server: []" >"$tmp/expected-failures.yml"
fi

# Serve only the conformance plugin, on a loopback port the kernel picks.
mkdir -p "$tmp/plugins" "$tmp/data" "$tmp/workspace"
cp "$plugin" "$tmp/plugins/conformance"
XDG_DATA_HOME=$tmp/data XDG_CACHE_HOME=$tmp/cache "$plughost" serve --http 127.0.0.1:0 --plugins "$tmp/plugins" \
  --workspace "$tmp/workspace" 2>"$tmp/plughost.log" &
host_pid=$!

tools=(test_simple_text test_image_content test_audio_content test_embedded_resource
  test_multiple_content_types test_tool_with_logging test_tool_with_progress test_error_handling
  json_schema_2020_12_tool test_reconnection)
if ! url=$("$node" "$here/await-ready.mjs" --pid "$host_pid" --log "$tmp/plughost.log" "${tools[@]}"); then
  echo "--- plughost stderr ---" >&2
  cat "$tmp/plughost.log" >&2
  exit 1
fi

# Run every server scenario, pending ones included, and judge by the baseline.
rm -rf "$results"
mkdir -p "$results"
echo "conformance: running the suite against $url (checks in $results)"
set +e
"$node" "$suite" server --url "$url" --suite all --expected-failures "$tmp/expected-failures.yml" \
  -o "$results" >"$results/suite.log" 2>&1
verdict=$?
set -e
if ((verdict > 128)); then
  echo "conformance: the suite was killed by signal $((verdict - 128))" >&2
  exit 1
fi
if ((verdict != 0)); then
  cat "$results/suite.log"
  echo "--- plughost stderr ---"
  cat "$tmp/plughost.log"
  echo "conformance: FAILED: the outcome differs from $expected (see above)" >&2
  exit 1
fi
sed -n '/=== SUMMARY ===/,$p' "$results/suite.log"
echo "conformance: ok (${#listed[@]} expected failures, listed in $expected)"
