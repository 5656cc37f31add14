// Package prefault maps in, as a short-lived collab process starts, the
// pages it is about to touch: its binary's code and read-only data, its
// initialised data and the first part of its zeroed data, and the next
// stretch of the Go heap. It asks for each range in one madvise
// (MADV_POPULATE_READ or _WRITE) where the process would otherwise take
// one page fault per page (per 64 KiB of code, with the kernel's
// fault-around).
//
// On the virtual machines collab is measured on, a page fault is a trip
// to the hypervisor: 11 µs for a fresh anonymous page and 14–24 µs for 64
// KiB of a binary already in the page cache, where a populated page costs
// 0.7 µs and 0.1 µs. serve took about 700 faults per push, a quarter of
// what the whole push took, and each hook process 250 more
// (docs/push.md, "Page faults").
//
// What it is worth per push, measured through serve with its switch (Off)
// in the same rounds: go run ./bench/builds -old . -old-env
// COLLAB_NO_PREFAULT=1 -n 61, two runs on the 2-core machine (hookless
// floor 94-101 ms), medians of the paired rounds, on against off: a branch
// push -2.1 and -5.4 ms wall, -6.3 and -5.9 ms CPU; a refs/for push -3.7
// and -4.5 ms wall, -3.8 and -4.6 ms CPU; a push to a branch no patch
// targets -1.1 and -0.0 ms wall, -7.3 and -3.8 ms CPU. It stays.
//
// A process imports the package for its init (cmd/collab-hook,
// cmd/collab-hook-fast), and collab-hook, whose serve and hooks open the
// database, its subpackage heap too; collab-web, which lives for days,
// imports neither.
// Nothing here can fail a process: a kernel without these advices (before
// Linux 5.14) or a /proc that cannot be read leaves the faults as they
// were.
package prefault

import (
	"bytes"
	"strconv"
	"syscall"
	"unsafe"
)

// Off, set to anything in the environment, leaves the process to fault
// as it goes, for measuring one against the other.
const Off = "COLLAB_NO_PREFAULT"

// The madvise(2) advices, Linux 5.14 and later; syscall does not name them.
const (
	populateRead  = 22 // MADV_POPULATE_READ
	populateWrite = 23 // MADV_POPULATE_WRITE
)

// bssBudget bounds the zeroed data mapped in: it ends in a 32 MiB buffer
// only FIPS mode uses (crypto/internal/fips140/drbg), and serve's first
// 300 KiB were what it touched (perf record -e page-faults -d).
const bssBudget = 512 << 10

// marker is a string whose bytes the linker places in the binary's
// read-only data, which tells which of the mappings are the binary's.
const marker = "collab prefault marker"

func init() {
	if _, off := syscall.Getenv(Off); off {
		return
	}
	// The binary's mappings are the first lines (the lowest addresses,
	// where the linker places a static Go binary): one read of a page
	// has them and the next, and allocates nothing.
	var buf [4096]byte
	fd, err := syscall.Open("/proc/self/maps", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	// syscall.Read would move buf to the heap.
	n, _, errno := syscall.Syscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
	syscall.Close(fd)
	if errno != 0 || n == 0 {
		return
	}
	for _, r := range Plan(buf[:n], uintptr(unsafe.Pointer(unsafe.StringData(marker)))) {
		madvise(r)
	}
}

// Heap maps in the next budget bytes of the Go heap, or up to the end of
// the heap's mapping where that comes first, for a process about to
// allocate that much: the runtime takes fresh pages for the heap from the
// lowest free address up, and a page's first touch is a fault.
func Heap(budget uintptr) {
	if _, off := syscall.Getenv(Off); off {
		return
	}
	// At the end of the heap's mapping (the runtime's reservation beyond
	// it is PROT_NONE) madvise fails, having mapped in what came before.
	madvise(heapRange(budget))
}

// heapRange is the budget bytes from the page of a fresh allocation.
func heapRange(budget uintptr) Range {
	start := uintptr(unsafe.Pointer(fresh())) &^ (pageSize - 1)
	return Range{start, start + budget, populateWrite}
}

// fresh allocates on the heap, where the next allocations are.
//
//go:noinline
func fresh() *[64]byte { return new([64]byte) }

func madvise(r Range) {
	_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, r.Start, r.End-r.Start, uintptr(r.Advice))
}

// Range is one madvise: [Start, End) with Advice.
type Range struct {
	Start, End uintptr
	Advice     int
}

// mapping is one line of /proc/self/maps, its path a slice of the text.
type mapping struct {
	start, end uintptr
	perms      []byte
	path       []byte
}

// Plan reads maps (the text of /proc/self/maps) and returns what to map
// in: every mapping of the file that holds the address ro (the binary:
// its code, read-only data and initialised data, each for reading), and
// the first bssBudget bytes of the anonymous mapping just after its last
// (the zeroed data, for writing).
//
// The initialised data is mapped for reading only: it is a private copy
// of the file's pages, and mapping it for writing copies every page, as
// dear as the faults it saves.
func Plan(maps []byte, ro uintptr) []Range {
	var bin []byte
	if i := bytes.LastIndexByte(maps, '\n'); i >= 0 {
		maps = maps[:i+1] // a line cut short is no line
	}
	// Not bytes.Lines: its yield moves maps to the heap.
	for rest := maps; len(rest) > 0; {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		if m, ok := parse(line); ok && m.start <= ro && ro < m.end && len(m.path) > 0 {
			bin = m.path
		}
	}
	if bin == nil {
		return nil
	}
	rs := make([]Range, 0, 4)
	var after bool // the line before was the binary's last so far
	for rest := maps; len(rest) > 0; {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		m, ok := parse(line)
		switch {
		case !ok:
		case bytes.Equal(m.path, bin):
			rs = append(rs, Range{m.start, m.end, populateRead})
			after = true
			continue
		case after && len(m.path) == 0 && bytes.HasPrefix(m.perms, []byte("rw")) && m.start == rs[len(rs)-1].End:
			rs = append(rs, Range{m.start, min(m.end, m.start+bssBudget), populateWrite})
		}
		after = false
	}
	return rs
}

const pageSize = 4096

// parse reads one line of /proc/self/maps; ok is false for any other.
func parse(line []byte) (m mapping, ok bool) {
	f, n := fields(line)
	if n < 5 || len(f[1]) < 4 {
		return m, false
	}
	lo, hi, ok := bytes.Cut(f[0], []byte("-"))
	if !ok {
		return m, false
	}
	start, err1 := strconv.ParseUint(string(lo), 16, 64)
	end, err2 := strconv.ParseUint(string(hi), 16, 64)
	if err1 != nil || err2 != nil || end <= start {
		return m, false
	}
	m = mapping{start: uintptr(start), end: uintptr(end), perms: f[1]}
	if n >= 6 {
		m.path = f[5]
	}
	return m, true
}

// fields is bytes.Fields for the first six fields of a line, without
// allocating; n is how many there were, up to six.
func fields(line []byte) (f [6][]byte, n int) {
	i := 0
	for n < len(f) {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i == len(line) {
			break
		}
		j := i
		for j < len(line) && !isSpace(line[j]) {
			j++
		}
		f[n] = line[i:j]
		n++
		i = j
	}
	return f, n
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' }
