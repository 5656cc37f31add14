package pktline

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b)
	for _, s := range []string{"version=1\x00push-options", "ok refs/for/main"} {
		if err := w.Line(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if want := "001bversion=1\x00push-options\n0015ok refs/for/main\n0000"; b.String() != want {
		t.Fatalf("wrote %q, want %q", b.String(), want)
	}
	r := NewReader(&b)
	sec, err := r.ReadSection()
	if err != nil || len(sec) != 2 || string(sec[1]) != "ok refs/for/main" {
		t.Fatalf("ReadSection = %q, %v", sec, err)
	}
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("Next at end = %v", err)
	}
}

func TestBadInput(t *testing.T) {
	for _, in := range []string{"00", "zzzz", "0003", "0009abc", "0006a"} {
		r := NewReader(strings.NewReader(in))
		if _, err := r.ReadSection(); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
	if err := NewWriter(io.Discard).Line(strings.Repeat("x", MaxPayload)); err == nil {
		t.Error("oversized line accepted")
	}
}
