package store

import (
	"testing"
	"time"
)

func BenchmarkAppendTime(b *testing.B) {
	t := time.Now()
	buf := make([]byte, 0, 32)
	for b.Loop() {
		buf = appendTime(buf[:0], t)
	}
}

func BenchmarkParseLayout(b *testing.B) {
	s := FormatTime(time.Now())
	for b.Loop() {
		parseLayout(s)
	}
}
