#!/usr/bin/env bash
# Property-based API test: schemathesis (from the peers venv) generates requests from the served /v1/openapi.json
# against a server on the fixture models (serve-fixtures.mjs) and checks that no response is a server error and
# that every response matches the document (status, headers, content type, JSON schema).
#
#   bash scripts/api-fuzz/schemathesis.sh [max examples per operation, default 30]
#
# CI runs it with its default. With VOXMILL_CI_REPORTS set (a folder), the cases that passed and failed are written to
# schemathesis.count there for scripts/ci-summary.mjs.
#
# schemathesis closes with a pytest-style banner ("=== 1 warning in 8.19s ==="), which log readers take for pytest
# having run no test; on a passing run that one line is left out, and a plain "schemathesis: N passed, N failed"
# line follows either way.
set -euo pipefail
cd "$(dirname "$0")/../.."
examples="${1:-30}"
python="$(bash scripts/peers-setup.sh | tail -1)"
st="$(dirname "$python")/schemathesis"
key="sk-schemathesis"
out="$(mktemp -d)"
trap 'kill "$server" 2>/dev/null || true; rm -rf "$out"' EXIT
# The server reads stdin until it closes: a fifo held open by this script, so it ends with it.
mkfifo "$out/stdin"
node scripts/api-fuzz/serve-fixtures.mjs "$key" < "$out/stdin" > "$out/url" 2> "$out/server.log" &
server=$!
exec 3> "$out/stdin"
for _ in $(seq 1 100); do [[ -s "$out/url" ]] && break; sleep 0.1; done
url="$(head -1 "$out/url")"
[[ -n "$url" ]] || { cat "$out/server.log" >&2; echo "schemathesis: the server did not start" >&2; exit 1; }
hooks="$PWD/scripts/api-fuzz"
set +e
# From the scratch directory: schemathesis keeps its caches (.schemathesis/) in the working directory.
cd "$out"
PYTHONPATH="$hooks" SCHEMATHESIS_HOOKS=schemathesis_hooks "$st" run "$url/v1/openapi.json" --url "$url" \
  -H "Authorization: Bearer $key" \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance \
  --max-examples "$examples" --generation-deterministic --request-timeout 120 \
  --report ndjson --report-ndjson-path "$out/events.ndjson" --no-color >"$out/output.txt"
status=$?
set -e
if ((status == 0)); then grep -vE '^=+ .* in [0-9.]+m?s =+$' "$out/output.txt" || true; else cat "$out/output.txt"; fi
# "Test cases:" is followed by "749 generated, 749 passed", or with failures "749 generated, 9 found 12 unique
# failures": the second number then counts the failing cases.
cases="$(grep -E '^ *[0-9]+ generated' "$out/output.txt" | tail -1 || true)"
generated="$(grep -oE '^ *[0-9]+' <<<"$cases" | tr -d ' ' || true)"
generated="${generated:-0}"
if ((status == 0)); then
  passed=$generated failed=0
else
  failed="$(grep -oE '[0-9]+ found' <<<"$cases" | grep -oE '[0-9]+' || true)"
  failed="${failed:-1}"
  passed=$((generated > failed ? generated - failed : 0))
fi
echo "schemathesis: $passed passed, $failed failed"
[[ -n "${VOXMILL_CI_REPORTS:-}" ]] && echo "$passed $failed" >"$VOXMILL_CI_REPORTS/schemathesis.count"
exit "$status"
