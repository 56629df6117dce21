package par

import (
	"runtime"
	"sync/atomic"
	"testing"
)

func TestRangesCoverEachIndexOnce(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for _, tc := range []struct{ n, minPer, workers int }{
		{0, 1, 1}, {1, 1, 1}, {3, 1, 3}, {7, 1, 4}, {1000, 100, 4}, {1000, 400, 2}, {1000, 2000, 1},
	} {
		if got := Workers(tc.n, tc.minPer); got != tc.workers {
			t.Errorf("Workers(%d, %d) = %d, want %d", tc.n, tc.minPer, got, tc.workers)
		}
		hits := make([]int, tc.n)
		lastHi := make([]int, tc.workers)
		Ranges(tc.n, tc.minPer, func(w, lo, hi int) {
			for i := lo; i < hi; i++ {
				hits[i]++
			}
			lastHi[w] = hi
		})
		for i, h := range hits {
			if h != 1 {
				t.Errorf("n=%d: index %d run %d times", tc.n, i, h)
			}
		}
		for w := 1; w < tc.workers; w++ {
			if lastHi[w] < lastHi[w-1] {
				t.Errorf("n=%d: range %d ends before range %d: not in order", tc.n, w, w-1)
			}
		}
	}
}

func TestDoRaisesPanicOnCaller(t *testing.T) {
	ran := make([]bool, 3)
	defer func() {
		if r := recover(); r != "boom" {
			t.Fatalf("recovered %v, want the worker's panic", r)
		}
		if !ran[0] || !ran[2] {
			t.Errorf("ran %v: the other functions must still run to the end", ran)
		}
	}()
	Do(func() { ran[0] = true }, func() { panic("boom") }, func() { ran[2] = true })
	t.Fatal("Do returned after a panic")
}

func TestEachRunsEveryIndexOnce(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for _, n := range []int{0, 1, 3, 4, 5, 100} {
		hits := make([]int32, n)
		Each(n, func(i int) {
			// uneven costs: a worker that takes a slow index must not
			// hold the others' indices back or run any twice
			if i%3 == 0 {
				runtime.Gosched()
			}
			atomic.AddInt32(&hits[i], 1)
		})
		for i, h := range hits {
			if h != 1 {
				t.Errorf("n=%d: index %d run %d times", n, i, h)
			}
		}
	}
}

func TestEachRaisesPanicOnCaller(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	defer func() {
		if r := recover(); r != "boom" {
			t.Fatalf("recovered %v, want boom", r)
		}
	}()
	Each(8, func(i int) {
		if i == 5 {
			panic("boom")
		}
	})
	t.Fatal("Each returned after a panic")
}
