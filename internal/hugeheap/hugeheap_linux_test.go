//go:build linux && (amd64 || arm64)

package hugeheap

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"testing"
)

func TestModeOf(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"always [madvise] never\n", "madvise"},
		{"[always] madvise never\n", "always"},
		{"always madvise [never]\n", "never"},
		{"", ""},
		{"]madvise[", ""},
	} {
		if got := modeOf([]byte(c.in)); got != c.want {
			t.Errorf("modeOf(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestWanted(t *testing.T) {
	for _, c := range []struct {
		godebug, mode string
		want          bool
	}{
		{"", "madvise", true},
		{"gctrace=1", "madvise", true},
		{"disablethp=1", "madvise", false},
		{"gctrace=1, disablethp=1", "madvise", false},
		{"disablethp=0", "madvise", true},
		{"", "always", false},
		{"", "never", false},
		{"", "", false},
	} {
		if got := wanted(c.godebug, c.mode); got != c.want {
			t.Errorf("wanted(%q, %q) = %v, want %v", c.godebug, c.mode, got, c.want)
		}
	}
}

func TestASRoom(t *testing.T) {
	for _, c := range []struct {
		cur, size uint64
		want      bool
	}{
		{rlimInfinity, 512 << 20, true},
		{8 << 30, 512 << 20, true},
		{4 << 30, 512 << 20, true},
		{4<<30 - 1, 512 << 20, false},
		{1 << 30, 512 << 20, false},
	} {
		if got := asRoom(c.cur, c.size); got != c.want {
			t.Errorf("asRoom(%d, %d) = %v, want %v", c.cur, c.size, got, c.want)
		}
	}
}

// TestPrepareBacksHeap holds Prepare to its purpose: heap memory
// allocated and touched after it comes in huge pages, a few faults for
// what 4 KB pages take thousands. It needs the kernel in madvise mode.
func TestPrepareBacksHeap(t *testing.T) {
	if m := readMode(); m != "madvise" {
		t.Skipf("transparent huge pages are %q here, not madvise", m)
	}
	before := anonHuge(t)
	fallback := vmstat(t, "thp_fault_fallback")
	if !Prepare(96 << 20) {
		t.Fatal("Prepare did not advise")
	}
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	const size = 32 << 20
	var keep [][]byte
	for range size / (1 << 20) {
		b := make([]byte, 1<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		keep = append(keep, b)
	}
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	after := anonHuge(t)
	faults := ru1.Minflt - ru0.Minflt
	t.Logf("touching %d MB: %d faults, AnonHugePages %d → %d kB", size>>20, faults, before, after)
	if after-before < 2048 && vmstat(t, "thp_fault_fallback") > fallback {
		// The advice held, but the kernel had no free 2 MB page to give
		// (fragmented memory): the machine's state, not Prepare's.
		t.Skip("the kernel fell back to 4 KB pages (thp_fault_fallback rose)")
	}
	if after-before < 2048 {
		t.Errorf("no huge page backs the heap: AnonHugePages %d → %d kB", before, after)
	}
	if faults > size/4096/4 {
		t.Errorf("%d faults for %d MB: the pages were not huge (4 KB pages take %d)", faults, size>>20, size/4096)
	}
	_ = keep
}

// anonHuge is the process's AnonHugePages in kB.
func anonHuge(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		t.Skipf("no smaps_rollup: %v", err)
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if f := bytes.Fields(line); len(f) >= 2 && string(f[0]) == "AnonHugePages:" {
			n, err := strconv.ParseInt(string(f[1]), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Skip("no AnonHugePages line")
	return 0
}

// vmstat is the counter name of /proc/vmstat (0 when absent).
func vmstat(t *testing.T, name string) int64 {
	b, err := os.ReadFile("/proc/vmstat")
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if f := bytes.Fields(line); len(f) == 2 && string(f[0]) == name {
			n, _ := strconv.ParseInt(string(f[1]), 10, 64)
			return n
		}
	}
	return 0
}
