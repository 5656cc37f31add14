package pktline

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzReader: any input either reads as packets or fails with an error;
// never a panic, never a payload longer than its length said. What it
// reads writes back to input that reads the same.
func FuzzReader(f *testing.F) {
	f.Add([]byte("0014version=1\x00push-options0000"))
	f.Add([]byte("000aok x\n0000"))
	f.Add([]byte("0003"))
	f.Add([]byte("zzzz"))
	f.Add([]byte("00"))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := NewReader(bytes.NewReader(in))
		var got [][]byte
		for i := 0; i < 1000; i++ {
			p, err := r.Next()
			if errors.Is(err, ErrFlush) {
				got = append(got, nil)
				continue
			}
			if err != nil {
				if errors.Is(err, io.EOF) && len(got) == 0 && len(in) > 0 {
					t.Fatalf("clean EOF on %d bytes of input", len(in))
				}
				break
			}
			if len(p) > MaxPayload+4 {
				t.Fatalf("payload of %d bytes", len(p))
			}
			got = append(got, p)
		}
		// Round trip through the writer: packets of text lines read back
		// the same.
		var buf bytes.Buffer
		w := NewWriter(&buf)
		var want [][]byte
		for _, p := range got {
			if p == nil || len(p)+1 > MaxPayload || bytes.ContainsRune(p, '\n') {
				continue
			}
			if err := w.Line(string(p)); err != nil {
				t.Fatal(err)
			}
			want = append(want, p)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		sec, err := NewReader(&buf).ReadSection()
		if err != nil || len(sec) != len(want) {
			t.Fatalf("round trip: %q %v, want %q", sec, err, want)
		}
		for i := range sec {
			if !bytes.Equal(sec[i], want[i]) {
				t.Fatalf("round trip %d: %q, want %q", i, sec[i], want[i])
			}
		}
	})
}
