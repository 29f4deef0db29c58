#!/usr/bin/env bash
# The compose stack through a kill-and-restart run: Redis, the API and two workers (deploy/docker-compose.yml), jobs
# submitted over HTTP, one worker killed (SIGKILL) while it runs a job and started again, the API restarted; every job
# must complete exactly once with the right text, and /v1/jobs must still list them after the restarts.
#
#   VOXMILL_API_KEYS=key bash deploy/compose-smoke.sh [jobs]      (default 8 jobs of jfk.wav)
#
# Environment: COMPOSE (default "docker compose", or docker-compose where only v1 is installed), COMPOSE_FILES
# (extra -f files: an override that mounts local models, say), VOXMILL_TEST_DATA (jfk.wav's folder's parent, default
# ../shared), API (default http://127.0.0.1:8080). Needs a running Docker daemon and the image built
# (docker build -f deploy/Dockerfile -t voxmill .).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${1:-8}"
compose=(${COMPOSE:-docker compose} -p "${COMPOSE_PROJECT:-voxmill}" -f deploy/docker-compose.yml ${COMPOSE_FILES:-})
api="${API:-http://127.0.0.1:8080}"
key="${VOXMILL_API_KEYS%%,*}"
key="${key#*:}"
audio="${VOXMILL_TEST_DATA:-../shared}/audio/jfk.wav"
started=$SECONDS
say() { echo "[$((SECONDS - started)) s] $*"; }

"${compose[@]}" up -d --scale worker=2 redis api worker
say "stack up; waiting for the API"
for _ in $(seq 1 120); do curl -fs "$api/readyz" >/dev/null && break; sleep 1; done
curl -fs "$api/readyz" >/dev/null || { "${compose[@]}" logs --tail 50; exit 1; }

ids=()
for i in $(seq 1 "$jobs"); do
  id=$(curl -fs -H "Authorization: Bearer $key" -F model=svc-stt-1 -F "file=@$audio" "$api/v1/jobs/transcriptions" |
    node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).id))')
  ids+=("$id")
done
say "submitted ${#ids[@]} jobs"

status() {
  curl -fs -H "Authorization: Bearer $key" "$api/v1/jobs/$1" |
    node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const j=JSON.parse(s);console.log(j.status,j.attempts,JSON.stringify(j.result?.text??""))})'
}
# The first worker running a job is killed and started again.
for _ in $(seq 1 120); do
  running=$(for id in "${ids[@]}"; do status "$id"; done | grep -c '^running' || true)
  ((running > 0)) && break
  sleep 0.5
done
victim=$("${compose[@]}" ps -q worker | head -n 1)
docker kill "$victim" >/dev/null
say "killed worker ${victim:0:12} with $running jobs running"
sleep 2
docker start "$victim" >/dev/null
say "started it again"
"${compose[@]}" restart api >/dev/null
for _ in $(seq 1 120); do curl -fs "$api/readyz" >/dev/null && break; sleep 1; done
say "restarted the API"

deadline=$((SECONDS + 600))
while ((SECONDS < deadline)); do
  done_count=$(for id in "${ids[@]}"; do status "$id"; done | grep -c '^completed' || true)
  ((done_count == ${#ids[@]})) && break
  sleep 2
done
failures=0
for id in "${ids[@]}"; do
  line=$(status "$id")
  echo "$id $line"
  [[ "$line" == completed* && "$line" == *"ask not what your country"* ]] || failures=$((failures + 1))
done
listed=$(curl -fs -H "Authorization: Bearer $key" "$api/v1/jobs?limit=100" |
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).data.length))')
say "jobs listed after the restarts: $listed of ${#ids[@]}; not completed with the right text: $failures"
((failures == 0 && listed >= ${#ids[@]}))
