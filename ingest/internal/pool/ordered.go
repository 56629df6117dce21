package pool

import "sync"

// Ordered is the one worker pool of the parallel readers: it decodes on
// every core and still hands spans, skips, positions and the first error
// on exactly as a sequential read would. The JSON-lines readers feed it
// blocks of lines as they cut them; the columnar readers feed it row-group
// numbers.
//
// produce runs on a goroutine of its own and sends the tasks' inputs in
// input order; send reports false once the run stopped, and produce must
// then return (stop is closed then too, for produce's own waits).
// `workers` goroutines take the tasks in that order and run task(worker,
// in, out, stop) (worker is an index in [0, workers), for per-worker
// state), which sends the task's outputs on out in order; Ordered closes
// out when task returns. task must give up, returning false, once stop is
// closed, wherever it waits (on out, or for a buffer of its own); it may
// also return false after sending an output that deliver will fail on.
// deliver is called on the calling goroutine for every output in task
// order — all of the first task's, then the second's —, whichever worker
// ran which task and whenever it finished. Its first error stops the run:
// the remaining outputs are dropped, stop is closed, and Ordered returns
// the error once produce and every worker have returned (the input must
// not be closed under them).
//
// At most inflight tasks are queued or running, each with at most
// buffer outputs waiting: memory is bounded whatever the input's size.
// No worker can wait for a task that has not started: tasks start in
// order, so the one deliver waits for is always running or done.
func Ordered[In, Out any](workers, inflight, buffer int,
	produce func(send func(In) bool, stop <-chan struct{}),
	task func(worker int, in In, out chan<- Out, stop <-chan struct{}) bool,
	deliver func(Out) error) error {
	r := Start(workers, inflight, buffer, produce, task)
	defer r.Stop()
	for {
		x, ok := r.Next()
		if !ok {
			return nil
		}
		if err := deliver(x); err != nil {
			return err
		}
	}
}

// Run is an Ordered pool whose caller takes the outputs one at a time
// (Next) instead of having them delivered. It is for a reader that may
// stop using the workers midway and go on by itself over the same input:
// the OTLP line-parallel reader, which hands the rest of its input to the
// sequential reader at the first line the workers cannot read alone.
// That rest starts in the outputs still queued (the producer has read
// ahead, and a stream cannot be read again from an offset), so the
// sequential reader pulls them from the same Run, in order, rather than
// the run stopping and dropping them, as an error of Ordered's deliver
// does.
type Run[Out any] struct {
	queue    chan chan Out // each task's outputs, in task order
	cur      chan Out      // the outputs being taken
	stop     chan struct{}
	produced chan struct{} // closed once produce has returned
	workers  sync.WaitGroup
	stopped  bool
}

// Start starts a pool as Ordered does (see there for produce and task);
// its outputs are taken with Next, in task order, on one goroutine, and
// Stop must be called once the caller is done with it.
func Start[In, Out any](workers, inflight, buffer int,
	produce func(send func(In) bool, stop <-chan struct{}),
	task func(worker int, in In, out chan<- Out, stop <-chan struct{}) bool) *Run[Out] {
	type job struct {
		in  In
		out chan Out
	}
	r := &Run[Out]{queue: make(chan chan Out, inflight), stop: make(chan struct{}), produced: make(chan struct{})}
	todo := make(chan job, inflight)
	go func() {
		defer close(r.produced)
		defer close(todo)
		defer close(r.queue)
		produce(func(in In) bool {
			j := job{in, make(chan Out, buffer)}
			select {
			case r.queue <- j.out:
			case <-r.stop:
				return false
			}
			select {
			case todo <- j:
				return true
			case <-r.stop:
				return false
			}
		}, r.stop)
	}()
	for w := range workers {
		r.workers.Add(1)
		go func() {
			defer r.workers.Done()
			for j := range todo {
				select {
				case <-r.stop:
					return
				default:
				}
				ok := task(w, j.in, j.out, r.stop)
				close(j.out)
				if !ok {
					return
				}
			}
		}()
	}
	return r
}

// Next returns the next output in task order, waiting for the task that
// makes it; false once produce has returned and every output was taken,
// or after Stop.
func (r *Run[Out]) Next() (Out, bool) {
	for !r.stopped {
		if r.cur != nil {
			if x, ok := <-r.cur; ok {
				return x, true
			}
			r.cur = nil
			continue
		}
		out, ok := <-r.queue
		if !ok {
			break
		}
		r.cur = out
	}
	var none Out
	return none, false
}

// Stop ends the run: the outputs not taken are dropped, stop is closed,
// and Stop returns once produce and every worker have returned. It may be
// called more than once.
func (r *Run[Out]) Stop() {
	if r.stopped {
		return
	}
	r.stopped = true
	close(r.stop)
	<-r.produced
	r.workers.Wait()
}

// Tasks is a produce function for Ordered over the task numbers 0…n-1.
func Tasks(n int) func(send func(int) bool, stop <-chan struct{}) {
	return func(send func(int) bool, _ <-chan struct{}) {
		for i := range n {
			if !send(i) {
				return
			}
		}
	}
}
