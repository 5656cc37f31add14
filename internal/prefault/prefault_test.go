package prefault

import (
	"bytes"
	"os"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

const sample = `00400000-009e6000 r-xp 00000000 fe:00 123 /usr/bin/collab-hook
009e6000-00f5c000 r--p 005e6000 fe:00 123 /usr/bin/collab-hook
00f5c000-00fb3000 rw-p 00b5c000 fe:00 123 /usr/bin/collab-hook
00fb3000-02ffa000 rw-p 00000000 00:00 0
2a1ce1000000-2a1ce1400000 rw-p 00000000 00:00 0
7f3179500000-7f3179700000 rw-p 00000000 00:00 0
7f31c0186000-7f31c0188000 r-xp 00000000 00:00 0                          [vdso]
7ffcf9656000-7ffcf9677000 rw-p 00000000 00:00 0                          [stack]
`

func TestPlan(t *testing.T) {
	binary := []Range{
		{0x400000, 0x9e6000, populateRead},
		{0x9e6000, 0xf5c000, populateRead},
		{0xf5c000, 0xfb3000, populateRead},
	}
	for _, tc := range []struct {
		name string
		maps string
		ro   uintptr
		want []Range
	}{
		{"the binary, and its zeroed data up to the budget", sample, 0xa00000,
			append(binary[:3:3], Range{0xfb3000, 0xfb3000 + bssBudget, populateWrite})},
		{"zeroed data smaller than the budget", strings.Replace(sample, "00fb3000-02ffa000", "00fb3000-00fb5000", 1), 0xa00000,
			append(binary[:3:3], Range{0xfb3000, 0xfb5000, populateWrite})},
		{"no zeroed data after the binary", strings.Replace(sample, "00fb3000-02ffa000 rw-p 00000000 00:00 0\n", "", 1), 0xa00000,
			binary},
		{"a gap before the next mapping", strings.Replace(sample, "00fb3000-02ffa000", "00fb4000-02ffa000", 1), 0xa00000,
			binary},
		{"the read ends inside the zeroed data's line", sample[:strings.Index(sample, "02ffa000")+4], 0xa00000,
			binary},
		{"the address is in no file's mapping", sample, 0x2a1ce1000100, nil},
		{"the address is in no mapping", sample, 0x100, nil},
		{"lines that are not maps lines", "garbage\n\nzz-yy r-xp 0 0 0 /x\n00500000-00400000 r-xp 0 0 0 /x\n", 0x450000, nil},
		{"nothing", "", 0x400000, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Plan([]byte(tc.maps), tc.ro); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Plan = %x\nwant %x", got, tc.want)
			}
		})
	}
}

// populating skips the test where the kernel has no MADV_POPULATE_* (before
// Linux 5.14), where init does nothing.
func populating(t *testing.T) {
	t.Helper()
	b, err := syscall.Mmap(-1, 0, pageSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(b)
	if err := syscall.Madvise(b, populateWrite); err != nil {
		t.Skipf("madvise(MADV_POPULATE_WRITE): %v", err)
	}
	if _, off := syscall.Getenv(Off); off {
		t.Skipf("%s is set", Off)
	}
}

// TestInit checks what init did in this test binary: its code is all
// mapped in (smaps' Rss is its Size), where running code maps in only
// what it touched.
func TestInit(t *testing.T) {
	populating(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rss, size := textRss(t, exe)
	if rss != size {
		t.Errorf("text mapped in: %d of %d kB", rss, size)
	}
}

// textRss is the Rss and Size, in kB, of exe's code mapping.
func textRss(t *testing.T, exe string) (rss, size int) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	in := false
	for line := range bytes.Lines(b) {
		fs := strings.Fields(string(line))
		switch {
		case len(fs) >= 6 && strings.Contains(fs[0], "-"):
			in = fs[1] == "r-xp" && fs[5] == exe
		case in && len(fs) == 3 && fs[0] == "Size:":
			size, _ = strconv.Atoi(fs[1])
		case in && len(fs) == 3 && fs[0] == "Rss:":
			rss, _ = strconv.Atoi(fs[1])
		}
	}
	if size == 0 {
		t.Fatalf("no code mapping of %s in /proc/self/smaps", exe)
	}
	return rss, size
}

// TestHeap checks that Heap leaves the pages after a fresh allocation
// resident, as far as the heap's mapping goes.
func TestHeap(t *testing.T) {
	populating(t)
	const budget = 256 << 10
	r := heapRange(budget)
	madvise(r)
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	end := uintptr(0)
	for line := range bytes.Lines(maps) {
		if m, ok := parse(line); ok && m.start <= r.Start && r.Start < m.end {
			end = min(r.End, m.end)
		}
	}
	if end == 0 {
		t.Fatalf("%x is in no mapping", r.Start)
	}
	vec := make([]byte, (end-r.Start)/pageSize)
	if _, _, e := syscall.Syscall(syscall.SYS_MINCORE, r.Start, end-r.Start, uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatalf("mincore: %v", e)
	}
	for i, v := range vec {
		if v&1 == 0 {
			t.Fatalf("page %d of %d after %x is not resident", i, len(vec), r.Start)
		}
	}
}

func TestPlanAllocates(t *testing.T) {
	maps := []byte(sample)
	if n := testing.AllocsPerRun(100, func() { Plan(maps, 0xa00000) }); n > 1 {
		t.Errorf("Plan allocates %v times, want at most 1", n)
	}
}
