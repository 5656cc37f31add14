//go:build !linux

package webhook

import (
	"context"
	"log/slog"
)

// watchCommits has no portable commit notification: polling alone.
func watchCommits(context.Context, string, *slog.Logger) <-chan struct{} { return nil }
