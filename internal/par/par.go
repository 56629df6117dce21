// Package par runs independent pieces of work on several goroutines: the
// analysis after the read (trees, replays, critical paths) is a loop over
// requests or hops in which no iteration reads what another writes, and on
// large logs it would otherwise run on one core while the others idle.
//
// Work is split into contiguous ranges, one per worker, and each worker
// writes only its own results (its slots of an output slice, its own
// counters): the caller merges them in range order, so the result is the
// same as the sequential loop's, whatever the scheduling.
package par

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Workers is how many goroutines Ranges uses for n items when each
// should get at least minPer of them: at most GOMAXPROCS, at least 1.
func Workers(n, minPer int) int {
	w := max(1, runtime.GOMAXPROCS(0))
	if minPer > 0 {
		w = min(w, n/minPer)
	}
	return max(1, min(w, n))
}

// Ranges splits [0, n) into Workers(n, minPer) contiguous ranges of
// nearly equal size and calls f(w, lo, hi) for range w on its own
// goroutine (the last on the caller's), returning when all are done. With
// one worker it is a plain call, so small inputs pay nothing.
func Ranges(n, minPer int, f func(w, lo, hi int)) {
	k := Workers(n, minPer)
	if k == 1 {
		if n > 0 {
			f(0, 0, n)
		}
		return
	}
	fs := make([]func(), k)
	for w := range k {
		fs[w] = func() { f(w, w*n/k, (w+1)*n/k) }
	}
	Do(fs...)
}

// Do runs the functions at once, each on its own goroutine (the last on
// the caller's), and returns when all have returned. It is for a few
// stages that read the same inputs and write disjoint outputs.
//
// A panic in any of them is raised again on the caller's goroutine once
// all have returned, so that the command's own recovery sees it, as it
// would in a sequential loop.
func Do(fs ...func()) {
	if len(fs) == 0 {
		return
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed any
	run := func(f func()) {
		defer func() {
			if r := recover(); r != nil {
				mu.Lock()
				if failed == nil {
					failed = r
				}
				mu.Unlock()
			}
		}()
		f()
	}
	for _, f := range fs[:len(fs)-1] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run(f)
		}()
	}
	run(fs[len(fs)-1])
	wg.Wait()
	if failed != nil {
		panic(failed)
	}
}

// Each calls f(i) for every i in [0, n), on up to GOMAXPROCS goroutines
// that take the next index as they finish the last: for a few pieces of
// uneven cost (model fits that converge in 10 or 300 iterations), where
// Ranges' equal slices would leave one worker idle while another holds
// the slow pieces. f must write only its own results (slot i).
func Each(n int, f func(i int)) {
	k := Workers(n, 1)
	if k == 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var next atomic.Int64
	fs := make([]func(), k)
	for w := range k {
		fs[w] = func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				f(i)
			}
		}
	}
	Do(fs...)
}
