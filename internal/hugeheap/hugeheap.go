// Package hugeheap lets the Go heap of a short-lived process grow into
// transparent huge pages where the kernel leaves them to the process to
// ask for (Linux's "madvise" mode, the default of many distributions).
//
// Why. A run over a million spans touches some 200 MB of heap that the
// kernel hands out one 4 KB page at a time, each on a page fault. On the
// virtual machines the benchmark runs on a fault costs 6–13 µs: the 46,000
// faults of `analyze` on the bench's 1,000-hop file were 0.3–0.4 s of its
// 1.7 s of CPU. The same run with 2 MB pages faults 3,000 times and takes
// a fifth to a third less CPU (paired runs: 0.79× the CPU of 4 KB pages
// under load; 0.7× with the kernel set to give every process huge pages).
// The Go runtime asks for huge pages only for its own metadata: it stopped
// advising the heap in Go 1.21.1, because khugepaged then grew the
// resident memory of long-running services that give memory back to the
// system. A tailscope command lives for seconds, so that risk does not
// apply.
//
// How. Prepare allocates one large object (the runtime maps fresh memory
// for it and touches none of it), advises its pages as huge, and lets the
// collector free it at once. The page allocator hands out the lowest free
// addresses first, so the heap then grows into those advised pages before
// it maps new ones. Nothing is touched that the heap would not have
// touched: the resident memory is what it was, to the 2 MB page.
//
// Prepare does nothing where huge pages are off ("never"), already on for
// everything ("always"), or turned off for the Go heap with
// GODEBUG=disablethp=1 (the runtime's own switch); under a memory limit
// (GOMEMLIMIT) or a virtual memory limit below eight times its size
// (`ulimit -v`: a Go program cannot survive a failed allocation); and on
// other systems.
package hugeheap

// DefaultSize is how much of the heap Prepare advises by default: above
// the peak heap of the bench's cases at a million spans (~180 MB) and of
// most runs; a heap that grows past it gets ordinary pages beyond.
const DefaultSize = 512 << 20
