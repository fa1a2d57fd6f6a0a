#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance, pinned in
# package.json) against plughost serving Streamable HTTP with only the conformance plugin, three times:
# 0.1.16's whole suite (the 2025 revisions, sessions) judged by expected-failures.txt, and
# 0.2.0-alpha.12 (package conformance-2026) twice: with --requirements 2026-07-28 (stateless requests,
# the same server and endpoint), and its active set (its default: the session scenarios), both judged
# by expected-failures-2026.txt. Then plughost's OAuth client (host/oauthclient, driven by the harness
# internal/conformanceclient) against the same suite's client authorization scenarios: `client --suite
# auth`, then every other auth/ client scenario of the suite (its 2026-07-28 ones, its extensions) one by
# one, all judged by expected-failures-auth.txt. `make conformance` calls it after `make build`.
#
#   conformance/run.sh PLUGHOST CONFORMANCE_PLUGIN CONFORMANCE_CLIENT
#
# It fails when a scenario not listed in a run's expected-failures file fails, when a listed one
# passes, when a file names a scenario its suite does not have, or when a process outlives the run.
# Needs `npm ci` in conformance/ (Node 22 comes from the `node` package there). Every check of
# every scenario is kept in bin/conformance/{2025,2026,2026-active,auth}/ (or $CONFORMANCE_RESULTS);
# $CONFORMANCE_EXPECTED_FAILURES, $CONFORMANCE_EXPECTED_FAILURES_2026 and
# $CONFORMANCE_EXPECTED_FAILURES_AUTH name other files.
set -euo pipefail

if [[ $# -ne 3 ]]; then
  echo "usage: $0 PLUGHOST CONFORMANCE_PLUGIN CONFORMANCE_CLIENT" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
plughost=$(realpath "$1")
plugin=$(realpath "$2")
client=$(realpath "$3")
node=$here/node_modules/.bin/node
suite=$here/node_modules/@modelcontextprotocol/conformance/dist/index.js
suite2026=$here/node_modules/conformance-2026/dist/index.js
expected=${CONFORMANCE_EXPECTED_FAILURES:-$here/expected-failures.txt}
expected2026=${CONFORMANCE_EXPECTED_FAILURES_2026:-$here/expected-failures-2026.txt}
expectedAuth=${CONFORMANCE_EXPECTED_FAILURES_AUTH:-$here/expected-failures-auth.txt}
results=${CONFORMANCE_RESULTS:-$here/../bin/conformance}

if [[ ! -x $node || ! -f $suite || ! -f $suite2026 ]]; then
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

# baseline FILE SUITE OUT [KIND]: reads FILE (a scenario name and a reason per line, # comments),
# checks every name against SUITE's KIND (server, the default, or client) scenarios, and writes the
# suite's YAML baseline to OUT. It prints the number of entries.
baseline() {
  local file=$1 js=$2 out=$3 kind=${4:-server} known name reason
  known=$("$node" "$js" list --"$kind" | sed -n 's/^  - \([^ ]*\).*/\1/p')
  local -A listed=()
  {
    echo "$kind:"
    while read -r name reason; do
      [[ -z $name || $name == \#* ]] && continue
      if ! grep -qxF -- "$name" <<<"$known"; then
        echo "conformance: $file names $name, which is not a $kind scenario of its suite" >&2
        return 1
      fi
      if [[ -z $reason ]]; then
        echo "conformance: $file lists $name without a reason" >&2
        return 1
      fi
      if [[ -n ${listed[$name]:-} ]]; then
        echo "conformance: $file lists $name twice" >&2
        return 1
      fi
      listed[$name]=1
      echo "  - $name"
    done <"$file"
  } >"$out"
  # No expected failures: the suite wants an empty list, not a null.
  if ((${#listed[@]} == 0)); then
    echo "$kind: []" >"$out"
  fi
  echo "${#listed[@]}"
}
n2025=$(baseline "$expected" "$suite" "$tmp/expected-failures.yml")
n2026=$(baseline "$expected2026" "$suite2026" "$tmp/expected-failures-2026.yml")
nauth=$(baseline "$expectedAuth" "$suite2026" "$tmp/expected-failures-auth.yml" client)

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

# judge NAME JS OUTDIR ARGS...: runs the suite JS with ARGS against plughost, judged by its
# baseline; prints the suite's summary, or everything on failure.
judge() {
  local name=$1 js=$2 out=$3 verdict
  shift 3
  mkdir -p "$out"
  echo "conformance: $name: running against $url (checks in $out)"
  set +e
  "$node" "$js" server --url "$url" "$@" -o "$out" >"$out/suite.log" 2>&1
  verdict=$?
  set -e
  if ((verdict > 128)); then
    echo "conformance: $name: the suite was killed by signal $((verdict - 128))" >&2
    return 1
  fi
  if ((verdict != 0)); then
    cat "$out/suite.log"
    echo "--- plughost stderr ---"
    cat "$tmp/plughost.log"
    echo "conformance: $name: FAILED: the outcome differs from its expected-failures file (see above)" >&2
    return 1
  fi
  sed -n '/=== SUMMARY ===/,$p' "$out/suite.log"
}

# strict NAME OUTDIR FILE: fails when a check of a scenario the run ran, scored or not, failed, unless
# FILE lists the scenario. (Under --requirements the suite's verdict counts only the scenarios the
# revision scores; it runs the tasks extension's too, and those must pass as well.)
strict() {
  local name=$1 out=$2 file=$3
  if ! "$node" -e '
    const fs = require("fs"), path = require("path");
    const [out, file] = process.argv.slice(1);
    const listed = new Set(fs.readFileSync(file, "utf8").split("\n").map(l => l.trim().split(/\s+/)[0]).filter(n => n && !n.startsWith("#")));
    let bad = [];
    for (const d of fs.readdirSync(out)) {
      const f = path.join(out, d, "checks.json");
      if (!fs.existsSync(f)) continue;
      const scenario = d.replace(/^server-/, "").replace(/-\d{4}-\d{2}-\d{2}T.*$/, "");
      if (listed.has(scenario)) continue;
      for (const c of JSON.parse(fs.readFileSync(f, "utf8")))
        if (c.status === "FAILURE") bad.push(scenario + ": " + c.id + ": " + (c.errorMessage || ""));
    }
    if (bad.length) { console.error(bad.join("\n")); process.exit(1); }
  ' "$out" "$file"; then
    echo "conformance: $name: FAILED: the checks above failed (scored or not), and their scenarios are not listed in $file" >&2
    return 1
  fi
}

rm -rf "$results"
# The 2025 revisions: every server scenario of 0.1.16, pending ones included, over sessions.
judge 2025 "$suite" "$results/2025" --suite all --expected-failures "$tmp/expected-failures.yml"
echo "conformance: 2025: ok ($n2025 expected failures, listed in $expected)"
# 2026-07-28: exactly what the revision requires (plus the scenarios it runs unscored: pending
# ones and the tasks extension), stateless, on the same endpoint.
judge 2026 "$suite2026" "$results/2026" --requirements 2026-07-28 --expected-failures "$tmp/expected-failures-2026.yml"
strict 2026 "$results/2026" "$expected2026"
echo "conformance: 2026-07-28: ok ($n2026 expected failures, listed in $expected2026)"
# The same suite's active set (its default): the session scenarios as the next suite judges them.
judge 2026-active "$suite2026" "$results/2026-active" --suite active --expected-failures "$tmp/expected-failures-2026.yml"
echo "conformance: 0.2.0-alpha.12 active: ok ($n2026 expected failures, listed in $expected2026)"

# clientrun NAME OUT ARGS...: runs the 0.2.0 suite's client command with the harness, judged by the
# auth baseline; fails, printing everything, when the outcome differs from it.
clientrun() {
  local name=$1 out=$2 verdict
  shift 2
  set +e
  "$node" "$suite2026" client --command "$client" "$@" --expected-failures "$tmp/expected-failures-auth.yml" \
    -o "$out" >"$out/$name.log" 2>&1
  verdict=$?
  set -e
  if ((verdict != 0)); then
    cat "$out/$name.log"
    echo "conformance: auth: $name: FAILED: the outcome differs from $expectedAuth (see above)" >&2
    return 1
  fi
}

# plughost as an OAuth client: the suite's auth suite, then each auth/ client scenario it left out.
out=$results/auth
mkdir -p "$out"
echo "conformance: auth: plughost's OAuth client against the suite's authorization servers (checks in $out)"
clientrun suite "$out" --suite auth
sed -n '/=== SUITE SUMMARY ===/,$p' "$out/suite.log"
ran=$(sed -n '/=== SUITE SUMMARY ===/,$p' "$out/suite.log" | grep -o 'auth/[^:]*' || true)
others=0
for scenario in $("$node" "$suite2026" list --client | sed -n 's/^  - \(auth\/[^ ]*\).*/\1/p'); do
  grep -qxF -- "$scenario" <<<"$ran" && continue
  clientrun "${scenario//\//_}" "$out" --scenario "$scenario"
  others=$((others + 1))
done
echo "conformance: auth: ok (the auth suite and $others more auth scenarios; $nauth expected failures, listed in $expectedAuth)"
