#!/usr/bin/env bash
# Property-based API test: schemathesis (from the peers venv) generates requests from the served /v1/openapi.json
# against a server on the fixture models (serve-fixtures.mjs) and checks that no response is a server error and
# that every response matches the document (status, headers, content type, JSON schema).
#
#   bash scripts/api-fuzz/schemathesis.sh [max examples per operation, default 30]
#
# CI runs it with its default; prints a summary line with the cases generated and the failures.
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
  --report ndjson --report-ndjson-path "$out/events.ndjson" --no-color
status=$?
set -e
exit "$status"
