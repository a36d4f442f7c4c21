#!/usr/bin/env bash
# Installs the Debian 12 packages ckptmon needs to build, test and run its demo.
# Idempotent: when everything is present it only runs dpkg-query and exits.
# Usage: scripts/install-deps.sh [build|test]   (test = build + integration peers)
set -euo pipefail

# help2man writes the man page from --help; dpkg-dev's dpkg-shlibdeps gives
# the .deb its Depends (make deb); lintian checks the .deb (test_deb.py).
build_pkgs=(
  cmake ninja-build g++ make pkg-config
  prometheus-cpp-dev libboost-dev libspdlog-dev libfmt-dev nlohmann-json3-dev
  libsqlite3-dev libyaml-cpp-dev libcli11-dev libsystemd-dev libsimdjson-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libisal-dev libxxhash-dev libssl-dev libcrypt-dev
  zlib1g-dev
  help2man dpkg-dev
  libfuse3-dev  # bench/delayfs: the FUSE file system with metadata latency (walk benchmark)
  ccache mold   # build speed (CMakeLists.txt): a compile seen before is reused, links are quick
)
# Real neighbours used by the integration tests (openssl makes their TLS
# certificates), the fuzzer toolchain and the
# FUSE file system that simulates a hung storage mount; lintian checks the
# .deb, python3-yaml and python3-jsonschema the Kubernetes manifests; wrk and
# curl for bench/load_test.sh (scrapes under load); victoria-metrics is a
# second Prometheus-API engine for report --prometheus
# (tests/integration/test_report_victoriametrics.py); chromium renders the
# HTML report headless (tests/integration/test_report.py); clang-format and
# clang-tidy are make lint's (scripts/lint.sh); acl's setfacl gives the ACL
# audit's test real POSIX ACLs (tests/integration/test_acl_audit.py); Debian's
# fscrypt encrypts a directory on a loop-device ext4 for the encryption
# detection's test (tests/integration/test_encryption.py).
test_pkgs=(
  python3 python3-fusepy fuse3 util-linux openssl acl e2fsprogs fscrypt
  prometheus prometheus-alertmanager prometheus-node-exporter victoria-metrics
  clang libclang-rt-14-dev clang-format clang-tidy
  lintian python3-yaml python3-jsonschema
  wrk curl
  chromium
)

want=("${build_pkgs[@]}")
if [ "${1:-build}" = "test" ]; then want+=("${test_pkgs[@]}"); fi

missing=()
for p in "${want[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages: ${missing[*]}" >&2
  echo "install-deps: run as root or: sudo apt-get install ${missing[*]}" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# policy-rc.d keeps the packaged Prometheus/Alertmanager/node_exporter services
# from being started by their postinst scripts: the tests start their own on
# loopback ports.
had_policy=0; [ -e /usr/sbin/policy-rc.d ] && had_policy=1
if [ $had_policy -eq 0 ]; then printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; fi
trap '[ $had_policy -eq 0 ] && rm -f /usr/sbin/policy-rc.d' EXIT
apt-get install -y -qq --no-install-recommends "${missing[@]}"
