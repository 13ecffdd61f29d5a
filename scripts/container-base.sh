#!/usr/bin/env bash
# Builds a local stand-in for the base image the Dockerfile names (node:20-bookworm-slim), for machines where
# Podman runs but no registry image can be pulled. Not used by CI; scripts/container-smoke.sh calls it when the
# image is missing.
#
# The stand-in copies what the build and the runtime rely on in the official image, so the Dockerfile needs no
# change for it:
#   - Debian bookworm, minbase (dpkg, apt, bash, libstdc++ for node), with bookworm-updates and -security sources;
#   - node in /usr/local/bin, its headers in /usr/local/include/node, npm and corepack in /usr/local/lib/node_modules,
#     laid out as the official tarball is unpacked there;
#   - user and group `node`, uid/gid 1000, home /home/node;
#   - ENTRYPOINT docker-entrypoint.sh (runs `node` when the first argument is an option, else execs the command:
#     the command stays PID 1, so SIGTERM reaches it) and CMD ["node"].
# Node and npm are this machine's (the same major and version line as the official tag); the official image also has
# yarn, which nothing here uses, so it is left out.
#
# Usage: scripts/container-base.sh            (needs root, debootstrap, podman)
#        BASE_IMAGE=... scripts/container-base.sh
set -euo pipefail

BASE_IMAGE=${BASE_IMAGE:-docker.io/library/node:20-bookworm-slim}
NODE_BIN=${NODE_BIN:-$(command -v node)}
NPM_ROOT=${NPM_ROOT:-$(npm root -g 2>/dev/null)}
# Headers of this node: the host's Debian package puts them under /usr/include/node.
NODE_HEADERS=${NODE_HEADERS:-$(dirname "$(dirname "$(readlink -f "$NODE_BIN")")")/include/node}

for tool in debootstrap podman; do
  command -v "$tool" >/dev/null || { echo "container-base: $tool is missing (apt-get install $tool)" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "container-base: debootstrap needs root" >&2; exit 1; }
node_major=$("$NODE_BIN" -p 'process.versions.node.split(".")[0]')
[ "$node_major" = 20 ] || { echo "container-base: $NODE_BIN is Node $node_major, the image is Node 20" >&2; exit 1; }
[ -f "$NODE_HEADERS/node_version.h" ] || { echo "container-base: no Node headers at $NODE_HEADERS" >&2; exit 1; }
[ -f "$NPM_ROOT/npm/bin/npm-cli.js" ] || { echo "container-base: no npm under $NPM_ROOT" >&2; exit 1; }

work=$(mktemp -d /var/tmp/node-base.XXXXXX)
trap 'rm -rf "$work"' EXIT
root=$work/rootfs

echo "container-base: debootstrap bookworm (minbase) into $root"
# No mirror argument: debootstrap's default Debian mirror, the same archive the build stage's apt-get uses.
debootstrap --variant=minbase bookworm "$root" >"$work/debootstrap.log" 2>&1 \
  || { tail -30 "$work/debootstrap.log" >&2; exit 1; }

# Sources as in Debian's bookworm image: the release, its updates and security suites. Taken from this machine's
# Debian sources when it has them (so the mirror is the one that works here), else debootstrap's sources.list stays.
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
  cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/debian.sources"
  rm -f "$root/etc/apt/sources.list"
fi

# Slim as Debian's slim images are: no manuals, documentation or translations installed by later apt-get runs.
cat >"$root/etc/dpkg/dpkg.cfg.d/docker-slim" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/lintian/*
EOF
find "$root/usr/share/doc" -mindepth 2 ! -name copyright -delete 2>/dev/null || true
rm -rf "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/locale/* \
  "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
  "$root"/var/log/*.log "$root"/var/log/apt/*

echo "container-base: node $("$NODE_BIN" -v), npm $(npm -v 2>/dev/null) into /usr/local"
install -D -m 0755 "$NODE_BIN" "$root/usr/local/bin/node"
mkdir -p "$root/usr/local/include" "$root/usr/local/lib/node_modules"
cp -a "$NODE_HEADERS" "$root/usr/local/include/node"
cp -a "$NPM_ROOT/npm" "$root/usr/local/lib/node_modules/npm"
[ -d "$NPM_ROOT/corepack" ] && cp -a "$NPM_ROOT/corepack" "$root/usr/local/lib/node_modules/corepack"
ln -s node "$root/usr/local/bin/nodejs"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
[ -d "$root/usr/local/lib/node_modules/corepack" ] \
  && ln -s ../lib/node_modules/corepack/dist/corepack.js "$root/usr/local/bin/corepack"

# The official image's entrypoint, in effect: options go to node, anything else is exec'd as it is.
cat >"$root/usr/local/bin/docker-entrypoint.sh" <<'EOF'
#!/bin/sh
set -e
if [ "${1#-}" != "$1" ] || [ -z "$(command -v "${1}")" ] || { [ -f "${1}" ] && ! [ -x "${1}" ]; }; then
  set -- node "$@"
fi
exec "$@"
EOF
chmod 0755 "$root/usr/local/bin/docker-entrypoint.sh"

# A clean environment: none of this machine's variables (NODE_EXTRA_CA_CERTS, say) leaks into the checks.
env -i PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin chroot "$root" /bin/sh -ec '
  groupadd --gid 1000 node
  useradd --uid 1000 --gid node --shell /bin/bash --create-home node
  node -e "process.exit(0)"
  npm --version >/dev/null
'
node_version=$("$NODE_BIN" -p process.versions.node)

echo "container-base: importing as $BASE_IMAGE"
tar -C "$root" --numeric-owner -cf - . | podman import --quiet \
  --change "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
  --change "ENV NODE_VERSION=$node_version" \
  --change 'ENTRYPOINT ["docker-entrypoint.sh"]' \
  --change 'CMD ["node"]' \
  --message "stand-in for node:20-bookworm-slim: debootstrap bookworm minbase + this machine's node $node_version" \
  - "$BASE_IMAGE" >/dev/null
podman image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' "$BASE_IMAGE"
