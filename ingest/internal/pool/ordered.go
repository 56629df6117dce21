package pool

import "sync"

// Ordered is the one worker pool of the parallel readers: it decodes on
// every core and still hands spans, skips, positions and the first error
// on exactly as a sequential read would. The JSON-lines reader feeds it
// blocks of lines as it cuts them; the columnar readers feed it row-group
// numbers.
//
// produce runs on a goroutine of its own and sends the tasks' inputs in
// input order; send reports false once the run stopped, and produce must
// then return (stop is closed then too, for produce's own waits). `workers` goroutines take the tasks in that order and run
// task(worker, in, out, stop) (worker is an index in [0, workers), for
// per-worker state), which sends the task's outputs on out in order;
// Ordered closes out when task returns. task must give up, returning
// false, once stop is closed, wherever it waits (on out, or for a buffer
// of its own); it may also return false after sending an output that
// deliver will fail on. deliver is called on the calling goroutine for
// every output in task order — all of the first task's, then the
// second's —, whichever worker ran which task and whenever it finished.
// Its first error stops the run: the remaining outputs are dropped, stop
// is closed, and Ordered returns the error once produce and every worker
// have returned (the input must not be closed under them).
//
// At most inflight tasks are queued or running, each with at most
// buffer outputs waiting: memory is bounded whatever the input's size.
// No worker can wait for a task that has not started: tasks start in
// order, so the one deliver waits for is always running or done.
func Ordered[In, Out any](workers, inflight, buffer int,
	produce func(send func(In) bool, stop <-chan struct{}),
	task func(worker int, in In, out chan<- Out, stop <-chan struct{}) bool,
	deliver func(Out) error) error {
	type job struct {
		in  In
		out chan Out
	}
	todo := make(chan job, inflight)
	queue := make(chan chan Out, inflight)
	stop := make(chan struct{})
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		defer close(todo)
		defer close(queue)
		produce(func(in In) bool {
			j := job{in, make(chan Out, buffer)}
			select {
			case queue <- j.out:
			case <-stop:
				return false
			}
			select {
			case todo <- j:
				return true
			case <-stop:
				return false
			}
		}, stop)
	}()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range todo {
				select {
				case <-stop:
					return
				default:
				}
				ok := task(w, j.in, j.out, stop)
				close(j.out)
				if !ok {
					return
				}
			}
		}()
	}
	var err error
consume:
	for out := range queue {
		for x := range out {
			if err = deliver(x); err != nil {
				break consume
			}
		}
	}
	close(stop)
	<-produced
	wg.Wait()
	return err
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
