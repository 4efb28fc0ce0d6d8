# noticesd image: a cgo build with SQLite's full-text search (-tags sqlite_fts5) on Debian
# bookworm, run on bookworm-slim as a non-root user. One image for every command:
#   docker run --rm noticesd:local --help
#   docker run -e NOTICES_BACKEND=scale ... noticesd:local serve
# compose.yaml builds and runs it; docs/operating.md ("The scale-out stack").
#
# No `# syntax=` line and no `RUN --mount` caches: a syntax line makes BuildKit fetch its
# frontend image from a registry (fails offline), and --mount needs BuildKit, which Docker 20.10
# (Debian bookworm's docker.io) does not use by default. The module download is a layer of its
# own (go.mod and go.sum copied first), so it is rebuilt only when they change.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The version is in the code (cmd/noticesd/version.go); the commit is stamped here
# (docker build --build-arg COMMIT=$(git rev-parse HEAD) .), as make build does.
ARG COMMIT=unknown
RUN CGO_ENABLED=1 go build -tags sqlite_fts5 -trimpath \
      -ldflags "-s -w -X main.commit=${COMMIT}" \
      -o /out/noticesd ./cmd/noticesd

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates tzdata \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 noticesd \
 && useradd --system --uid 10001 --gid noticesd --home-dir /var/lib/noticesd --shell /usr/sbin/nologin noticesd \
 && mkdir -p /var/lib/noticesd \
 && chown noticesd:noticesd /var/lib/noticesd
COPY --from=build /out/noticesd /usr/local/bin/noticesd
USER noticesd:noticesd
WORKDIR /var/lib/noticesd
ENV NOTICES_DATA_DIR=/var/lib/noticesd \
    NOTICES_ADDR=:8080
VOLUME ["/var/lib/noticesd"]
EXPOSE 8080
# The runtime has no curl: noticesd probes itself (exit 0 when /ready answers 200).
HEALTHCHECK --interval=15s --timeout=6s --start-period=20s --retries=3 \
  CMD ["noticesd", "health", "--url", "http://127.0.0.1:8080/ready"]
ENTRYPOINT ["noticesd"]
CMD ["serve"]
