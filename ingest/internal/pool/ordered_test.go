package pool

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

// TestOrdered: outputs arrive in task order whatever the workers' speed,
// and the first error of deliver stops the run with every worker gone.
func TestOrdered(t *testing.T) {
	for _, tc := range []struct {
		name            string
		n, workers, per int
		failAt          int // deliver's error at this output (-1: none)
	}{
		{"one worker", 20, 1, 3, -1},
		{"two workers", 50, 2, 3, -1},
		{"more workers than tasks", 3, 8, 1, -1},
		{"no tasks", 0, 2, 1, -1},
		{"error stops", 40, 3, 2, 17},
		{"error on the first", 10, 2, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const per = 7 // outputs per task
			var got []int
			running := make(chan struct{}, 64)
			err := Ordered(tc.workers, tc.workers+1, tc.per, Tasks(tc.n),
				func(w, i int, out chan<- int, stop <-chan struct{}) bool {
					if w < 0 || w >= tc.workers {
						t.Errorf("worker %d of %d", w, tc.workers)
					}
					running <- struct{}{}
					defer func() { <-running }()
					for k := range per {
						if rand.IntN(4) == 0 {
							time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
						}
						select {
						case out <- i*per + k:
						case <-stop:
							return false
						}
					}
					return true
				},
				func(x int) error {
					if len(got) == tc.failAt {
						return errors.New("bad")
					}
					got = append(got, x)
					return nil
				})
			if len(running) != 0 {
				t.Fatalf("%d tasks still running after Ordered returned", len(running))
			}
			want := tc.n * per
			if tc.failAt >= 0 {
				want = tc.failAt
				if err == nil || err.Error() != "bad" {
					t.Fatalf("err = %v, want deliver's", err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if len(got) != want {
				t.Fatalf("%d outputs delivered, want %d", len(got), want)
			}
			for i, x := range got {
				if x != i {
					t.Fatalf("output %d is %d: out of order", i, x)
				}
			}
		})
	}
}

// TestRunPull: a Run's outputs are taken in task order, and a caller that
// stops taking them midway (the OTLP reader falling back to its
// sequential reader) can go on taking the rest from the same run, in
// order, or stop it with producer and workers gone.
func TestRunPull(t *testing.T) {
	const n, per = 60, 3
	for _, tc := range []struct {
		name   string
		take   int // outputs taken before Stop (-1: all)
		worker int
	}{
		{"all", -1, 3},
		{"stop midway", 40, 3},
		{"stop at once", 0, 2},
		{"one worker, stop midway", 17, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			running := make(chan struct{}, 64)
			produced := make(chan struct{})
			r := Start(tc.worker, tc.worker+1, 1,
				func(send func(int) bool, stop <-chan struct{}) {
					defer close(produced)
					Tasks(n)(send, stop)
				},
				func(_ int, i int, out chan<- int, stop <-chan struct{}) bool {
					running <- struct{}{}
					defer func() { <-running }()
					for k := range per {
						if rand.IntN(4) == 0 {
							time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
						}
						select {
						case out <- i*per + k:
						case <-stop:
							return false
						}
					}
					return true
				})
			var got []int
			for tc.take < 0 || len(got) < tc.take {
				x, ok := r.Next()
				if !ok {
					break
				}
				got = append(got, x)
			}
			r.Stop()
			r.Stop() // a second Stop does nothing
			if len(running) != 0 {
				t.Fatalf("%d tasks still running after Stop", len(running))
			}
			select {
			case <-produced:
			default:
				t.Fatal("produce still running after Stop")
			}
			if _, ok := r.Next(); ok {
				t.Fatal("an output after Stop")
			}
			want := tc.take
			if want < 0 {
				want = n * per
			}
			if len(got) != want {
				t.Fatalf("%d outputs taken, want %d", len(got), want)
			}
			for i, x := range got {
				if x != i {
					t.Fatalf("output %d is %d: out of order", i, x)
				}
			}
		})
	}
}
