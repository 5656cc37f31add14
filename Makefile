# collab: make demo brings up a forge on 127.0.0.1; make test runs the suite.
GO ?= go
# urfave_cli_no_docs keeps the man-page generator out of collab-hook, whose
# start-up every push pays.
export GOFLAGS ?= -buildvcs=false -tags=urfave_cli_no_docs
# collab-web and collab-hook-pg link the PostgreSQL store (the root's db
# setting); collab-hook does not, whose every run would pay the driver's
# start-up, and hands a forge on PostgreSQL over to collab-hook-pg
# (internal/store/postgres_off.go).
PGFLAGS = -tags=urfave_cli_no_docs,postgres
# Static binaries: modernc's SQLite is pure Go, and a hook process skips the
# dynamic loader.
export CGO_ENABLED ?= 0

.PHONY: all build test demo bench deps vet lint clean

all: build

build:
	$(GO) build -o bin/ ./cmd/...
	$(GO) build $(PGFLAGS) -o bin/collab-web ./cmd/collab-web
	$(GO) build $(PGFLAGS) -o bin/collab-hook-pg ./cmd/collab-hook

# deps installs what the suite needs (openssh-server, chromium, …) when
# missing; it uses apt-get and so needs root.
deps:
	./scripts/deps.sh

vet:
	$(GO) vet ./...
	./scripts/staticcheck.sh
	./scripts/deadcode.sh

# The packages that hold the record's SQL and the use cases run a second time
# on PostgreSQL: a throwaway cluster each (internal/pgtest), the driver built in.
PG_PKGS = ./internal/store/... ./internal/events ./internal/access ./internal/leases \
	./internal/issues ./internal/patches ./internal/tokens ./internal/checks \
	./internal/branches ./internal/ratelimit ./internal/webhook/subs ./internal/ops \
	./internal/pgtest

test: deps vet
	$(GO) test -count=1 -timeout 60m ./...
	COLLAB_TEST_STORE=postgres $(GO) test $(PGFLAGS) -count=1 -timeout 20m $(PG_PKGS)

demo: deps build
	./scripts/demo.sh

bench: deps build
	./bench/run.sh

clean:
	rm -rf bin
