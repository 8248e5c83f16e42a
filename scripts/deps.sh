#!/bin/sh
# Install the Debian packages bfeed builds and tests with, if any is missing.
# Usage: scripts/deps.sh [--test]   (--test adds what the oracle tests need)
set -eu
pkgs="build-essential cmake pkg-config libjpeg62-turbo-dev libturbojpeg0-dev libpng-dev libwebp-dev libuv1-dev libzstd-dev liblz4-dev
      libxxhash-dev libinih-dev libcmocka-dev libsystemd-dev libdnnl-dev librandom123-dev
      python3-dev libdlpack-dev libprotobuf-c-dev protobuf-c-compiler libarchive-dev libcurl4-openssl-dev
      libexpat1-dev"
if [ "${1:-}" = "--test" ]; then
  # Independent oracles: Pillow and numpy for images and arithmetic, torch and
  # torchvision for the bf16 cast and the crop algorithm; systemd for
  # systemd-analyze and systemd-socket-activate in the service tests; pytest
  # for the Python client, venv, pip, setuptools and wheel to check that
  # `pip install client/python` works offline; protoc, Google's protobuf
  # runtime and crcmod write the TFRecords the shard tests read (an encoder
  # independent of bfeed's); lintian for the Debian package (cpack -G DEB),
  # man-db for the manual pages, clang for scripts/build_release.sh; clang's
  # runtimes build the libFuzzer targets (scripts/fuzz.sh). For object
  # storage: boto3/botocore (an independent S3 client, and the AWS SDK's
  # own SigV4 signer, which the tests' proxy checks every request with),
  # nginx (ranged GETs over HTTP), npm (the tests fetch s3rver, an S3
  # server, from the npm registry) and curl (the CLI, to sign by hand);
  # tmux runs `bfeed top` on a terminal, as a user would (capture-pane).
  pkgs="$pkgs python3 python3-pil python3-numpy python3-torch python3-torchvision systemd
        python3-pytest python3-venv python3-pip python3-setuptools python3-wheel
        protobuf-compiler python3-protobuf python3-crcmod python3-yaml lintian man-db clang libclang-rt-14-dev
        python3-boto3 python3-botocore nginx-light curl tmux"
fi
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# npm: Debian's package, unless a Node.js that carries its own is there.
if [ "${1:-}" = "--test" ] && ! command -v npm >/dev/null 2>&1; then missing="$missing npm"; fi
[ -z "$missing" ] && exit 0
echo "installing:$missing"
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
