#!/usr/bin/env bash
# Builds a PgBouncer that keeps prepared statements in transaction mode (1.21 or later), for the tests and benches
# of DATABASE_POOLER_PREPARES: Debian 12 ships 1.18, so this takes Debian 13's source package (fetched and checked
# against Debian's signed index by apt, Debian's patches applied) and builds it into a prefix of its own. Nothing is
# added to the machine's apt sources. A few seconds; does nothing when the prefix already holds one.
#
#   scripts/build-pgbouncer.sh                         # into /opt/pgbouncer-debian13
#   scripts/build-pgbouncer.sh /some/prefix            # elsewhere (then PREPARING_PGBOUNCER_BIN=/some/prefix/bin/pgbouncer)
set -euo pipefail

PREFIX=${1:-/opt/pgbouncer-debian13}
if [ -x "$PREFIX/bin/pgbouncer" ]; then
  echo "build-pgbouncer: $("$PREFIX/bin/pgbouncer" --version | head -n 1) is at $PREFIX/bin/pgbouncer"
  exit 0
fi

# Its build dependencies from Debian 12 (a compiler and dpkg-source come with build-essential).
missing=()
for package in build-essential pkg-config libevent-dev libssl-dev libc-ares-dev; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
fi

work=$(mktemp -d /tmp/build-pgbouncer.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache" "$work/source"
echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" >"$work/sources.list"
apt_options=(-q -o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache")
apt-get "${apt_options[@]}" update
(cd "$work/source" && apt-get "${apt_options[@]}" source --download-only pgbouncer)
dpkg-source -x "$work"/source/pgbouncer_*.dsc "$work/pgbouncer"

cd "$work/pgbouncer"
./configure --prefix="$PREFIX" --with-cares --without-pam --without-systemd >"$work/configure.log" || { tail -n 30 "$work/configure.log" >&2; exit 1; }
make -j"$(nproc)" >"$work/make.log" || { tail -n 30 "$work/make.log" >&2; exit 1; }
# The binary alone: the man pages would need pandoc.
install -D -m 0755 pgbouncer "$PREFIX/bin/pgbouncer"
echo "build-pgbouncer: $("$PREFIX/bin/pgbouncer" --version | head -n 1) built at $PREFIX/bin/pgbouncer"
