package analyze

import (
	"iter"
	"math"
	"sort"

	"github.com/tailscope/tailscope/quantile"
)

// runs is the ascending union of up to three ascending lists, read where
// they are: what hopAcc.stats reads of a hop's exact successes, cut and
// other failures (every attempt; those that can count to the time to
// success) without merging them into new lists. Merged, the two unions
// were 8 bytes an attempt each, allocated in the report phase, when the
// heap is at its largest (the trace sample, its trees and every hop's
// digests live): on a million flat spans 15 MB of fresh heap, 7 MB of it
// kept by the time to success's closures to the end of the run. Read in
// place they cost nothing; every answer is the one the merged list gives
// (the same multiset, so the same value at every rank), and the lists
// are the hop's digests' own, final once the read is over (stats settles
// them first and nothing adds to them after).
//
// Ranks are found by bisecting the values, each step a binary search in
// each list: O(64 · log n) a rank, against the merge's O(n) once. Stats
// asks for a few dozen ranks a hop and the recommendation's search a few
// hundred; a single list (no failure near the timeout: most hops) is
// indexed directly.
type runs [3][]int64

// n is the number of values.
func (r *runs) n() int { return len(r[0]) + len(r[1]) + len(r[2]) }

// single returns the one non-empty list when at most one is, so that
// callers index it directly.
func (r *runs) single() ([]int64, bool) {
	var one []int64
	for _, s := range r {
		if len(s) > 0 {
			if one != nil {
				return nil, false
			}
			one = s
		}
	}
	return one, true
}

// min is the smallest value (0 when there is none, as the merged list's
// reader said).
func (r *runs) min() int64 {
	m, ok := int64(math.MaxInt64), false
	for _, s := range r {
		if len(s) > 0 {
			m, ok = min(m, s[0]), true
		}
	}
	if !ok {
		return 0
	}
	return m
}

// below counts the values < x.
func (r *runs) below(x int64) int {
	c := 0
	for _, s := range r {
		c += sort.Search(len(s), func(i int) bool { return s[i] >= x })
	}
	return c
}

// atMost counts the values ≤ x.
func (r *runs) atMost(x int64) int {
	c := 0
	for _, s := range r {
		c += sort.Search(len(s), func(i int) bool { return s[i] > x })
	}
	return c
}

// at is the value of rank i (0-based) in ascending order: the merged
// list's i-th value.
func (r *runs) at(i int) int64 {
	if s, ok := r.single(); ok {
		return s[i]
	}
	// The least v with more than i values ≤ v is a value of the lists
	// (the count only rises at one): bisect between the smallest and the
	// largest value.
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, s := range r {
		if len(s) > 0 {
			lo, hi = min(lo, s[0]), max(hi, s[len(s)-1])
		}
	}
	for lo < hi {
		// The midpoint without overflow, rounded down, whatever the signs.
		mid := lo + int64((uint64(hi)-uint64(lo))/2)
		if r.atMost(mid) > i {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// quantile is quantile.Int64 over the first k values (the merged list's
// prefix s[:k]): the same interpolation between the same two ranks.
func (r *runs) quantile(k int, q float64) float64 {
	if k == 0 {
		return math.NaN()
	}
	if s, ok := r.single(); ok {
		return quantile.Int64(s[:k], q)
	}
	if q <= 0 {
		return float64(r.at(0))
	}
	if q >= 1 {
		return float64(r.at(k - 1))
	}
	h := float64(k-1) * q
	lo := math.Floor(h)
	i := int(lo)
	if i+1 >= k {
		return float64(r.at(k - 1))
	}
	a, b := r.at(i), r.at(i+1)
	return float64(a) + (h-lo)*float64(b-a)
}

// all yields every value in ascending order (the merged list).
func (r *runs) all() iter.Seq[int64] {
	return func(yield func(int64) bool) {
		a, b, c := r[0], r[1], r[2]
		// Equal values from different lists are the same value: the
		// order a tie is taken in does not show.
		for len(a) > 0 && len(b) > 0 && len(c) > 0 {
			var v int64
			switch {
			case b[0] < a[0] && b[0] <= c[0]:
				v, b = b[0], b[1:]
			case c[0] < a[0] && c[0] < b[0]:
				v, c = c[0], c[1:]
			default:
				v, a = a[0], a[1:]
			}
			if !yield(v) {
				return
			}
		}
		switch {
		case len(a) == 0:
			a, b = b, c
		case len(b) == 0:
			b = c
		}
		for len(a) > 0 && len(b) > 0 {
			var v int64
			if b[0] < a[0] {
				v, b = b[0], b[1:]
			} else {
				v, a = a[0], a[1:]
			}
			if !yield(v) {
				return
			}
		}
		for _, s := range [2][]int64{a, b} {
			for _, v := range s {
				if !yield(v) {
					return
				}
			}
		}
	}
}

// each calls f with each distinct value and its count, ascending.
func (r *runs) each(f func(v int64, c int)) {
	first, cur, c := true, int64(0), 0
	for v := range r.all() {
		if !first && v == cur {
			c++
			continue
		}
		if !first {
			f(cur, c)
		}
		first, cur, c = false, v, 1
	}
	if !first {
		f(cur, c)
	}
}
