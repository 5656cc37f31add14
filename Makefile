# collab: make demo brings up a forge on 127.0.0.1; make test runs the suite.
GO ?= go
# urfave_cli_no_docs keeps the man-page generator out of collab-hook, whose
# start-up every push pays.
export GOFLAGS ?= -buildvcs=false -tags=urfave_cli_no_docs
# Static binaries: modernc's SQLite is pure Go, and a hook process skips the
# dynamic loader.
export CGO_ENABLED ?= 0

.PHONY: all build test demo bench deps vet lint clean

all: build

build:
	$(GO) build -o bin/ ./cmd/...

# deps installs what the suite needs (openssh-server, chromium, …) when
# missing; it uses apt-get and so needs root.
deps:
	./scripts/deps.sh

vet:
	$(GO) vet ./...
	./scripts/staticcheck.sh
	./scripts/deadcode.sh

test: deps vet
	$(GO) test -count=1 -timeout 60m ./...

demo: deps build
	./scripts/demo.sh

bench: deps build
	./bench/run.sh

clean:
	rm -rf bin
