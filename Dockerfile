# syntax=docker/dockerfile:1
# The riskapi container image: a static binary on distroless, run as a non-root user.
#   docker build -t riskapi:<version> --build-arg VERSION=<version> .
# See docs/operations.md, "Running replicas on Kubernetes".

# GO_VERSION is go.mod's go line (deploy/manifests_test.go checks that they agree).
ARG GO_VERSION=1.26.8

# The build runs on the builder's own platform and cross-compiles (no cgo), so a
# multi-platform build (docker buildx build --platform linux/amd64,linux/arm64) needs no emulation.
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
ARG TARGETOS
ARG TARGETARCH
# The same script CI runs (.ci/run): CGO_ENABLED=0, -trimpath, -ldflags "-s -w".
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    GOOS=$TARGETOS GOARCH=$TARGETARCH VERSION=$VERSION deploy/build-binary.sh /out/riskapi

# distroless/static: CA certificates (PostgreSQL and Redis over TLS, HTTPS webhook deliveries),
# time zone data and an /etc/passwd with the nonroot user (65532); no shell, no package manager.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/riskapi /usr/local/bin/riskapi
USER 65532:65532
# serve listens on 127.0.0.1:8080 by default; in a container it must listen on every interface.
ENV RISKAPI_ADDR=:8080
EXPOSE 8080
# `docker run IMAGE` serves; `docker run IMAGE migrate` (or any other command) runs that command.
ENTRYPOINT ["/usr/local/bin/riskapi"]
CMD ["serve"]
