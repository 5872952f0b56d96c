#!/bin/sh
# deploy/build-binary.sh OUTPUT builds the riskapi binary the container image ships, at OUTPUT.
# The Dockerfile runs this script and .ci/run runs it too, so CI checks the very build the
# image gets without needing a container engine.
#
# The binary is static (CGO_ENABLED=0: the SQLite driver, modernc.org/sqlite, is pure Go), so
# it runs on distroless/static or scratch with no C library. -trimpath and -buildvcs=false keep
# build paths and the checkout's state out of it, so the same source gives the same bytes in
# the image and in CI; -s -w drop the symbol table and DWARF (about a third of the size).
# VERSION (default dev) becomes what `riskapi version` prints. GOOS and GOARCH, when set,
# choose the target as usual for go build (the Dockerfile sets them for multi-platform builds).
set -eu
out=${1:?usage: deploy/build-binary.sh OUTPUT}
case $out in
/*) ;;
*) out=$PWD/$out ;;
esac
cd "$(dirname "$0")/.."
CGO_ENABLED=0 go build -trimpath -buildvcs=false \
	-ldflags "-s -w -X main.version=${VERSION:-dev}" \
	-o "$out" ./cmd/riskapi
