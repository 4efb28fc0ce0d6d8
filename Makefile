# noticesd — one binary, one SQLite file by default.
# `make run` serves a realistic sample; `make test` is the one test command (it starts and stops its own Elasticsearch and Redis).

GO      ?= go
TAGS    := sqlite_fts5
BIN     := bin/noticesd
# noticesd version / --version and /health: the version is in the code (cmd/noticesd/version.go), the
# commit is stamped here (GOFLAGS may disable Go's own VCS stamp).
LDFLAGS := -X main.commit=$(shell git rev-parse HEAD 2>/dev/null)
export CGO_ENABLED := 1

.PHONY: build run run-scale test bench fuzz vet openapi-lint clean

build:
	$(GO) build -tags $(TAGS) -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/noticesd

## run: build, create a sample database on first use, print demo keys and a curl line, serve on :8080
run: build
	./$(BIN) demo

## run-scale: the scale-out stack from local processes (no Docker): Elasticsearch + Redis (scripts/services.sh),
## the sample in scale mode on first use, demo keys and a curl line, serve on :8080 and two workers; Ctrl-C stops all
run-scale:
	./scripts/run-scale.sh

## test: start Elasticsearch + redis-server (scripts/services.sh), vet, the whole suite against them and real SQLite files, a short fuzz; stop the servers
test:
	./scripts/test.sh

## test-deploy: the Docker deployment for real (root; scripts/test-deploy.sh): its own dockerd, local base images,
## the Dockerfile built, compose up with the tour, a webhook, down/up and a killed worker, dockertest's store suites
.PHONY: test-deploy
test-deploy:
	./scripts/test-deploy.sh

## bench: Go benchmarks on 1,000,000 notices / 4,000,000 register rows; writes docs/benchmarks.md
bench: build
	./scripts/bench.sh

fuzz:
	$(GO) test -tags $(TAGS) -run '^$$' -fuzz FuzzParse -fuzztime 1500000x -fuzzminimizetime 10s ./internal/query
	$(GO) test -tags $(TAGS) -run '^$$' -fuzz FuzzDecodeObject -fuzztime 500000x -fuzzminimizetime 10s ./ingest
	$(GO) test -tags $(TAGS) -run '^$$' -fuzz FuzzDecodeObject -fuzztime 500000x -fuzzminimizetime 10s ./internal/watch
	$(GO) test -tags $(TAGS) -run '^$$' -fuzz FuzzAppendString -fuzztime 1000000x -fuzzminimizetime 10s ./internal/jsontext
	$(GO) test -tags $(TAGS) -run '^$$' -fuzz FuzzAppendNotice -fuzztime 150000x -fuzzminimizetime 10s ./internal/store/elastic/esdoc

## vet: go vet, staticcheck and gocyclo over internal/config (pinned, fetched from the Go module proxy on first use)
vet:
	$(GO) vet -tags $(TAGS) ./...
	GOFLAGS=-tags=$(TAGS) $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
	$(GO) run github.com/fzipp/gocyclo/cmd/gocyclo@v0.6.0 -over 15 -ignore '_test\.go$$' internal/config

## openapi-lint: redocly's recommended rules over docs/openapi.json (needs npx and the npm registry)
openapi-lint:
	npx --yes @redocly/cli@latest lint docs/openapi.json --config docs/redocly.yaml

clean:
	rm -rf bin
