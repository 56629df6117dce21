//go:build linux && (amd64 || arm64)

package hugeheap

import (
	"bytes"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"unsafe"
)

// hugePage is the size of a transparent huge page on amd64 and arm64
// (with 4 KB base pages).
const hugePage = 2 << 20

// madvHugePage is MADV_HUGEPAGE.
const madvHugePage = 14

// modeFile says how the kernel uses transparent huge pages.
const modeFile = "/sys/kernel/mm/transparent_hugepage/enabled"

// Prepare advises the next size bytes the heap grows into as huge pages
// (see the package doc) and reports whether it did. Call it first thing
// in main: it runs a garbage collection, which costs nothing on an empty
// heap.
func Prepare(size int) bool {
	if size < hugePage || !wanted(os.Getenv("GODEBUG"), readMode()) || debug.SetMemoryLimit(-1) != math.MaxInt64 || !roomFor(size) {
		// With a memory limit (GOMEMLIMIT) the user manages the heap:
		// an object of size might press on the limit.
		return false
	}
	// Collection off while the object lives, or allocating it starts one
	// (it is far past the empty heap's goal): one collection, below,
	// instead of two.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	b := make([]byte, size)
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo := (p + hugePage - 1) &^ (hugePage - 1)
	hi := (p + uintptr(size)) &^ (hugePage - 1)
	ok := false
	if lo < hi {
		_, _, errno := syscall.Syscall(syscall.SYS_MADVISE, lo, hi-lo, madvHugePage)
		ok = errno == 0
	}
	runtime.KeepAlive(b)
	b = nil
	runtime.GC()
	return ok
}

// roomFor says whether the address space may take an object of size
// bytes beside what the run needs: under a virtual memory limit
// (`ulimit -v`, RLIMIT_AS) a failed allocation is fatal to a Go program,
// so Prepare stays out unless the limit leaves eight times size.
func roomFor(size int) bool {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &lim); err != nil {
		return false
	}
	return asRoom(lim.Cur, uint64(size))
}

// rlimInfinity is RLIM_INFINITY as the kernel gives it in an rlimit
// (all ones).
const rlimInfinity = ^uint64(0)

// asRoom is roomFor's rule on the limit cur (rlimInfinity: none).
func asRoom(cur, size uint64) bool {
	return cur == rlimInfinity || cur/8 >= size
}

// readMode is the kernel's transparent huge page mode ("always",
// "madvise", "never"), "" when it cannot be read.
func readMode() string {
	b, err := os.ReadFile(modeFile)
	if err != nil {
		return ""
	}
	return modeOf(b)
}

// modeOf reads the bracketed choice of the mode file ("always [madvise]
// never").
func modeOf(b []byte) string {
	i := bytes.IndexByte(b, '[')
	j := bytes.IndexByte(b, ']')
	if i < 0 || j < i {
		return ""
	}
	return string(b[i+1 : j])
}

// wanted says whether advising helps: only in madvise mode (always
// already gives huge pages, never refuses them), and not when the
// runtime's GODEBUG turns them off for the heap.
func wanted(godebug, mode string) bool {
	if mode != "madvise" {
		return false
	}
	for _, kv := range strings.Split(godebug, ",") {
		if strings.TrimSpace(kv) == "disablethp=1" {
			return false
		}
	}
	return true
}
