#!/usr/bin/env bash
# Builds the container image with Podman and runs it for real: health, the demo token, the API, /docs, non-root,
# SIGTERM, and data on the volume across a new container. One PASS/FAIL line per check; exits 1 if any failed.
# Not part of CI or `npm test` (it takes minutes: better-sqlite3 compiles from source in the build stage).
#
# Usage: scripts/container-smoke.sh            (root, podman and runc installed; curl and node on the host)
#   IMAGE=listing-service:smoke   tag to build
#   SKIP_BUILD=1                  reuse an IMAGE built before
#   BUILD_NETWORK=host            when RUN steps cannot reach the package mirrors through Podman's default network
#   HOST_CA_FILE=<pem>            CA bundle npm must trust inside the build (default: $NODE_EXTRA_CA_CERTS, if set)
#
# Machine notes (see docs/operations.md, "Container image"): the base image cannot be pulled here, so
# scripts/container-base.sh builds a stand-in when it is missing; crun fails on this machine's hybrid cgroups, so
# the runtime is runc; runc refuses Podman's default open-files and process limits, above this machine's hard
# limits, so every container gets explicit ulimits.
set -uo pipefail

cd "$(dirname "$0")/.."
IMAGE=${IMAGE:-listing-service:smoke}
BASE_IMAGE=${BASE_IMAGE:-docker.io/library/node:20-bookworm-slim}
HOST_CA_FILE=${HOST_CA_FILE:-${NODE_EXTRA_CA_CERTS:-}}
PODMAN=(podman --runtime runc)
LIMITS=(--ulimit nofile=20000:20000 --ulimit nproc=32768:32768)
suffix=$$
first=listing-smoke-1-$suffix
second=listing-smoke-2-$suffix
volume=listing-smoke-data-$suffix
tmp=$(mktemp -d /tmp/listing-smoke.XXXXXX)
failures=0

pass() { echo "PASS  $*"; }
fail() { echo "FAIL  $*"; failures=$((failures + 1)); }
info() { echo "----  $*"; }
# A failure that leaves nothing further to check: report, clean up (trap), exit.
fatal() { fail "$*"; echo "container-smoke: stopped after a fatal failure ($failures failed)"; exit 1; }

cleanup() {
  "${PODMAN[@]}" rm -f -v -t 0 "$first" "$second" >/dev/null 2>&1
  "${PODMAN[@]}" volume rm -f "$volume" >/dev/null 2>&1
  rm -rf "$tmp"
}
trap cleanup EXIT

now() { date +%s.%N; }
seconds_since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

free_port() {
  node -e 'const s = require("node:net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close() })'
}

# http <out> <curl args...>: the body goes to <out>, the status code to stdout (000 when no answer came).
http() {
  local out=$1; shift
  curl -s -o "$out" -w '%{http_code}' --max-time 30 "$@" || true
}

wait_healthy() { # <port> <container>: up to 60 s for GET /healthz → 200
  local port=$1 name=$2 i
  for i in $(seq 1 120); do
    [ "$(http /dev/null "http://127.0.0.1:$port/healthz")" = 200 ] && return 0
    [ "$("${PODMAN[@]}" inspect -f '{{.State.Running}}' "$name" 2>/dev/null)" = true ] || return 1
    sleep 0.5
  done
  return 1
}

# Stops a container the way an orchestrator does (the image's stop signal, SIGTERM as the Dockerfile sets none;
# SIGKILL after 15 s, compose.yaml's stop_grace_period) and checks the drain (docs/operations.md): exit code 0 within 10 s.
check_sigterm() { # <container> <label>
  local name=$1 label=$2 t0 secs code
  t0=$(now)
  "${PODMAN[@]}" stop -t 15 "$name" >/dev/null 2>>"$tmp/podman-run.err"
  secs=$(seconds_since "$t0")
  code=$("${PODMAN[@]}" inspect -f '{{.State.ExitCode}}' "$name")
  if [ "$code" = 0 ] && awk -v s="$secs" 'BEGIN { exit !(s < 10) }'; then
    pass "$label: SIGTERM → exit code 0 after ${secs} s"
  else
    fail "$label: SIGTERM → exit code $code after ${secs} s (want 0 within 10 s)"
  fi
}

json() { # <file> <js expression over `j`>: prints the value
  node -e 'const j = JSON.parse(require("node:fs").readFileSync(process.argv[1], "utf8")); console.log(eval(process.argv[2]))' "$1" "$2"
}

for tool in podman runc curl node; do
  command -v "$tool" >/dev/null || fatal "$tool is not installed"
done

# 0. The base image: the real one where it can be pulled or already exists, else the local stand-in.
if ! "${PODMAN[@]}" image exists "$BASE_IMAGE"; then
  info "$BASE_IMAGE is missing: building the stand-in (scripts/container-base.sh, about 2 min)"
  BASE_IMAGE=$BASE_IMAGE scripts/container-base.sh || fatal "building the base image $BASE_IMAGE"
fi

# 1. Build. --format docker keeps HEALTHCHECK (the OCI format has no field for it and Podman drops it).
if [ "${SKIP_BUILD:-}" = 1 ]; then
  info "SKIP_BUILD=1: using $IMAGE as built before"
else
  build_opts=(--pull=never --format docker "${LIMITS[@]}")
  [ -n "${BUILD_NETWORK:-}" ] && build_opts+=(--network "$BUILD_NETWORK")
  # npm settings for the build's RUN steps only, in root's home (the user RUN steps run as): node-gyp compiles
  # better-sqlite3 against the headers the node image ships in /usr/local/include/node instead of downloading them
  # (only the npm registry is reachable here), and npm trusts the CA of a TLS-inspecting proxy when this machine
  # has one. Neither belongs in the Dockerfile. /root exists in the base image, so mounting over it leaves nothing in
  # the image (a bind mount on a missing path would leave an empty mount point behind), and npm's cache stays
  # out of the build stage's layer.
  mkdir -p "$tmp/build-home"
  echo 'nodedir=/usr/local' >"$tmp/build-home/.npmrc"
  if [ -n "$HOST_CA_FILE" ] && [ -f "$HOST_CA_FILE" ]; then
    cp "$HOST_CA_FILE" "$tmp/build-home/host-ca.pem"
    echo 'cafile=/root/host-ca.pem' >>"$tmp/build-home/.npmrc"
  fi
  build_opts+=(-v "$tmp/build-home:/root")
  info "building $IMAGE (podman build ${build_opts[*]}); log in $tmp/build.log while it runs"
  t0=$(now)
  if "${PODMAN[@]}" build "${build_opts[@]}" -t "$IMAGE" . >"$tmp/build.log" 2>&1; then
    size=$("${PODMAN[@]}" image inspect -f '{{.Size}}' "$IMAGE")
    pass "build: $IMAGE in $(seconds_since "$t0") s, $(awk -v b="$size" 'BEGIN { printf "%.0f", b / 1e6 }') MB"
  else
    tail -40 "$tmp/build.log"
    fatal "build failed after $(seconds_since "$t0") s"
  fi
fi

# The build-time npm settings were a bind mount: nothing of them may be in the image (root's home is private, so
# look as root).
if "${PODMAN[@]}" run --rm --user 0 --entrypoint /bin/sh "${LIMITS[@]}" "$IMAGE" -c \
  'test -d /root && test ! -e /root/.npmrc && test ! -e /root/host-ca.pem && test ! -e /usr/local/etc/npmrc' 2>/dev/null; then
  pass "no build-time npm configuration left in the image"
else
  fail "build-time npm configuration found in the image (/root/.npmrc, /root/host-ca.pem or /usr/local/etc/npmrc)"
fi

healthcheck=$("${PODMAN[@]}" image inspect -f '{{if .Config.Healthcheck}}{{.Config.Healthcheck.Test}}{{end}}' "$IMAGE" 2>/dev/null)
[ -n "$healthcheck" ] && pass "image has a HEALTHCHECK: $healthcheck" || fail "image has no HEALTHCHECK"

# 2. Run on a new named volume, published on a free loopback port. The listing's images are served from inside the
# container's own network namespace (loopback), so the service must be allowed to fetch from it; nothing else
# about the configuration differs from the image's defaults.
"${PODMAN[@]}" volume create "$volume" >/dev/null || fatal "volume create"
port=$(free_port)
run_container() { # <name> [podman run options]
  local name=$1; shift
  # Podman schedules HEALTHCHECK runs with systemd timers; without systemd (as here) it logs an error and runs the
  # container all the same, so its stderr goes to a file; the check itself is run by hand below.
  "${PODMAN[@]}" run -d --name "$name" "$@" "${LIMITS[@]}" -v "$volume:/data" -p "127.0.0.1:$port:3000" \
    -e IMAGE_ALLOW_PRIVATE_NETWORKS=true "$IMAGE" >/dev/null 2>>"$tmp/podman-run.err" \
    || { cat "$tmp/podman-run.err"; return 1; }
}
run_container "$first" || fatal "podman run $first"
base=http://127.0.0.1:$port

# 3. Health, the demo token, and the API with it.
t0=$(now)
if wait_healthy "$port" "$first"; then
  pass "GET /healthz 200, $(seconds_since "$t0") s after podman run"
else
  "${PODMAN[@]}" logs "$first" 2>&1 | tail -20
  fatal "GET /healthz never answered 200"
fi
[ "$(http /dev/null "$base/readyz")" = 200 ] && pass "GET /readyz 200" || fail "GET /readyz not 200"

"${PODMAN[@]}" logs "$first" >"$tmp/first.log" 2>&1
# The announcement holds the token twice (on its own line and in a ready-to-paste curl command): one announcement,
# one distinct token.
announcements=$(grep -c 'shown this once' "$tmp/first.log")
tokens=$(grep -o 'lst_[A-Za-z0-9_-]*' "$tmp/first.log" | sort -u)
token=$(echo "$tokens" | head -1)
if [ "$announcements" = 1 ] && [ "$(echo "$tokens" | grep -c .)" = 1 ]; then
  pass "first start printed the demo token once"
else
  fatal "first start: $announcements token announcement(s), $(echo "$tokens" | grep -c .) distinct token(s) (want 1 and 1)"
fi

if "${PODMAN[@]}" exec "$first" node -e 'console.log(require("node:fs").statSync("/data/listings.db").size)' >/dev/null 2>&1; then
  pass "the database is /data/listings.db, on the volume"
else
  fail "no /data/listings.db in the container"
fi

# A 1×1 PNG served on the container's loopback for the listing's brand image.
"${PODMAN[@]}" exec -d "$first" node -e '
  const png = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==", "base64")
  require("node:http").createServer((req, res) => res.end(png)).listen(8000, "127.0.0.1")' >/dev/null
for i in $(seq 1 20); do
  "${PODMAN[@]}" exec "$first" node -e 'fetch("http://127.0.0.1:8000/").then(() => process.exit(0), () => process.exit(1))' \
    2>/dev/null && break
  sleep 0.5
done
cat >"$tmp/create.json" <<'EOF'
{
  "referenceId": "smoke-1",
  "location": { "latitude": 24.7136, "longitude": 46.6753 },
  "brand": {
    "displayName": { "ar": "مخبز الصباح", "en": "Morning Bakery" },
    "urlSafeName": "morning-bakery",
    "imageUrl": "http://127.0.0.1:8000/logo.png"
  },
  "listingDetails": { "discountRate": 0.4, "type": "timed" },
  "items": [
    { "displayName": { "ar": "كرواسون", "en": "Croissant" }, "urlSafeName": "croissant",
      "category": "product", "subCategory": "main_dish", "price": 7.5, "quantity": 12 }
  ]
}
EOF
status=$(http "$tmp/created.json" -X POST "$base/api/v1/listing/create" -H "Authorization: Bearer $token" \
  -H 'Content-Type: application/json' --data-binary "@$tmp/create.json")
listing_id=$(json "$tmp/created.json" 'j.listingId' 2>/dev/null)
if [ "$status" = 201 ] && [ -n "$listing_id" ]; then
  pass "POST /api/v1/listing/create with the demo token → 201, listing $listing_id"
else
  fail "POST /api/v1/listing/create → $status: $(head -c 400 "$tmp/created.json")"
fi
status=$(http "$tmp/list.json" "$base/api/v1/listing?page=1&limit=10" -H "Authorization: Bearer $token")
if [ "$status" = 200 ] && [ "$(json "$tmp/list.json" 'j.content.map((l) => l.id).join(",")' 2>/dev/null)" = "$listing_id" ]; then
  pass "GET /api/v1/listing → 200 with that listing"
else
  fail "GET /api/v1/listing → $status: $(head -c 400 "$tmp/list.json")"
fi
[ "$(http /dev/null "$base/api/v1/listing")" = 401 ] && pass "GET /api/v1/listing without a token → 401" \
  || fail "GET /api/v1/listing without a token is not 401"

# 4. Documentation.
status=$(curl -s -L -o "$tmp/docs.html" -w '%{http_code} %{content_type}' --max-time 30 "$base/docs")
if [[ $status == "200 text/html"* ]] && grep -qi '<html' "$tmp/docs.html"; then
  pass "GET /docs → $status"
else
  fail "GET /docs → $status"
fi
status=$(http "$tmp/openapi.json" "$base/openapi.json")
if [ "$status" = 200 ] && [ "$(json "$tmp/openapi.json" 'j.openapi' 2>/dev/null)" = 3.1.0 ]; then
  pass "GET /openapi.json → 200, OpenAPI 3.1.0"
else
  fail "GET /openapi.json → $status"
fi

# 5. Not root, and node is PID 1 (so it, not a shell, receives SIGTERM).
uid=$("${PODMAN[@]}" exec "$first" id -u)
[ -n "$uid" ] && [ "$uid" != 0 ] && pass "exec id -u → $uid (not root)" || fail "exec id -u → '$uid'"
"${PODMAN[@]}" top "$first" pid user args >"$tmp/top.txt" 2>&1
if awk '$1 == 1 && $2 != "root" && /node dist\/cli\/main.js serve/ { ok = 1 } END { exit !ok }' "$tmp/top.txt"; then
  pass "PID 1 is node dist/cli/main.js serve, user $(awk '$1 == 1 { print $2 }' "$tmp/top.txt")"
else
  fail "PID 1 is not the service as a non-root user: $(cat "$tmp/top.txt")"
fi
if "${PODMAN[@]}" healthcheck run "$first" >/dev/null 2>&1; then
  pass "podman healthcheck run → healthy"
else
  fail "podman healthcheck run → unhealthy"
fi

# 6. SIGTERM.
check_sigterm "$first" "first container"
"${PODMAN[@]}" logs "$first" >"$tmp/first.log" 2>&1
"${PODMAN[@]}" rm "$first" >/dev/null 2>>"$tmp/podman-run.err"

# 7. A new container on the same volume: the listing is there and no token is printed again. This one runs with a
# read-only root filesystem, as hardened deployments do: the service writes only to /data.
run_container "$second" --read-only || fatal "podman run $second"
t0=$(now)
if wait_healthy "$port" "$second"; then
  pass "second container (same volume, --read-only): GET /healthz 200 after $(seconds_since "$t0") s"
else
  "${PODMAN[@]}" logs "$second" 2>&1 | tail -20
  fatal "second container: GET /healthz never answered 200"
fi
status=$(http "$tmp/list2.json" "$base/api/v1/listing?page=1&limit=10" -H "Authorization: Bearer $token")
if [ "$status" = 200 ] && [ "$(json "$tmp/list2.json" 'j.content.map((l) => l.id).join(",")' 2>/dev/null)" = "$listing_id" ]; then
  pass "after the restart the token still works and the listing is there"
else
  fail "after the restart GET /api/v1/listing → $status: $(head -c 400 "$tmp/list2.json")"
fi
"${PODMAN[@]}" logs "$second" >"$tmp/second.log" 2>&1
token_lines=$(grep -c -e 'lst_' -e 'shown this once' "$tmp/second.log")
[ "$token_lines" = 0 ] && pass "second start printed no token" || fail "second start printed $token_lines token line(s)"
check_sigterm "$second" "second container"

echo
if [ "$failures" = 0 ]; then
  echo "container-smoke: all checks passed"
else
  echo "container-smoke: $failures check(s) failed"
  exit 1
fi
