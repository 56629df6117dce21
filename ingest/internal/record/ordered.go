package record

import (
	"sync"
	"sync/atomic"
)

// Ordered runs tasks 0…n-1 on `workers` goroutines and hands what they
// produce to the calling goroutine in task order: all of task 0's outputs,
// then task 1's, and so on, whichever worker ran which task and whenever
// it finished. This is how the columnar readers decode row groups on every
// core and still deliver spans, skips, positions and the first error
// exactly as a sequential read would.
//
// task(worker, i, out, stop) runs task i on the given worker (an index in
// [0, workers), for per-worker state), sending its outputs on out in
// order; Ordered closes out when it returns. It must give up, returning
// false, once stop is closed (wherever it waits: on out, or for a buffer
// of its own). deliver is called on the calling goroutine for every
// output in order; its first error stops the run: the remaining outputs
// are dropped, stop is closed, and Ordered returns that error once every
// worker has returned (the input must not be closed under them).
//
// Memory is bounded by buffer outputs per task in flight, plus what each
// worker holds: only tasks a worker has started have outputs, and a
// worker blocks once its task's channel is full.
func Ordered[T any](n, workers, buffer int, task func(worker, i int, out chan<- T, stop <-chan struct{}) bool, deliver func(T) error) error {
	outs := make([]chan T, n)
	for i := range outs {
		outs[i] = make(chan T, buffer)
	}
	stop := make(chan struct{})
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				ok := task(w, i, outs[i], stop)
				close(outs[i])
				if !ok {
					return
				}
			}
		}()
	}
	var err error
consume:
	for i := range outs {
		for x := range outs[i] {
			if err = deliver(x); err != nil {
				break consume
			}
		}
	}
	close(stop)
	wg.Wait()
	return err
}
