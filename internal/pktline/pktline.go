// Package pktline reads and writes git's pkt-line framing
// (gitprotocol-common(5)): a 4-hex-digit length that counts itself, then the
// payload; "0000" is a flush packet.
package pktline

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// MaxPayload is the largest payload one packet may carry (65520 - 4).
const MaxPayload = 65516

// ErrFlush is returned by Reader.Next for a flush packet.
var ErrFlush = errors.New("flush packet")

// Reader reads packets.
type Reader struct{ r *bufio.Reader }

// NewReader returns a Reader on r.
func NewReader(r io.Reader) *Reader { return &Reader{r: bufio.NewReader(r)} }

// Next returns the next packet's payload with one trailing newline removed,
// ErrFlush for a flush packet, or io.EOF at a clean end of input.
func (r *Reader) Next() ([]byte, error) {
	var head [4]byte
	if _, err := io.ReadFull(r.r, head[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("pkt-line: short length: %w", err)
		}
		return nil, err
	}
	n, err := strconv.ParseUint(string(head[:]), 16, 16)
	if err != nil {
		return nil, fmt.Errorf("pkt-line: bad length %q", head[:])
	}
	switch {
	case n == 0:
		return nil, ErrFlush
	case n < 4:
		return nil, fmt.Errorf("pkt-line: unexpected special packet %04x", n)
	}
	buf := make([]byte, n-4)
	if _, err := io.ReadFull(r.r, buf); err != nil {
		if errors.Is(err, io.EOF) {
			// A length with no payload after it is a cut, not a clean end.
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("pkt-line: short packet: %w", err)
	}
	if l := len(buf); l > 0 && buf[l-1] == '\n' {
		buf = buf[:l-1]
	}
	return buf, nil
}

// ReadSection returns the payloads up to the next flush packet.
func (r *Reader) ReadSection() ([][]byte, error) {
	var out [][]byte
	for {
		p, err := r.Next()
		if errors.Is(err, ErrFlush) {
			return out, nil
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("pkt-line: input ended before flush: %w", io.ErrUnexpectedEOF)
			}
			return nil, err
		}
		out = append(out, p)
	}
}

// Writer writes packets, buffered until Flush or Close.
type Writer struct {
	w *bufio.Writer
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: bufio.NewWriter(w)} }

// Line writes one packet holding s followed by a newline.
func (w *Writer) Line(s string) error {
	if len(s)+1 > MaxPayload {
		return fmt.Errorf("pkt-line: payload of %d bytes too long", len(s)+1)
	}
	if _, err := fmt.Fprintf(w.w, "%04x%s\n", len(s)+5, s); err != nil {
		return err
	}
	return nil
}

// Flush writes a flush packet and pushes everything buffered out.
func (w *Writer) Flush() error {
	if _, err := w.w.WriteString("0000"); err != nil {
		return err
	}
	return w.w.Flush()
}
