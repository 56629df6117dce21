// Package quantile computes percentiles with tailscope's contract
// definition and builds the histograms the reports draw.
//
// Definition (contract, docs/DESIGN.md §4): linear interpolation between closest
// ranks — numpy's default and DuckDB's quantile_cont. For n sorted samples
// x[0..n-1] and q in [0,1], h = (n−1)·q, and the quantile is
// x[⌊h⌋] + (h−⌊h⌋)·(x[⌊h⌋+1] − x[⌊h⌋]). It is exact: every sample is kept.
//
// The package does not know spans or hops; it works on numbers.
package quantile

import (
	"math"
	"slices"
	"sort"
)

// Sorted returns the q-quantile (q in [0,1]) of ascending xs, or NaN when
// xs is empty.
func Sorted(xs []float64, q float64) float64 {
	n := len(xs)
	if n == 0 {
		return math.NaN()
	}
	if q <= 0 {
		return xs[0]
	}
	if q >= 1 {
		return xs[n-1]
	}
	h := float64(n-1) * q
	lo := math.Floor(h)
	i := int(lo)
	if i+1 >= n {
		return xs[n-1]
	}
	return xs[i] + (h-lo)*(xs[i+1]-xs[i])
}

// Int64 returns the q-quantile of ascending ns values as float ns.
func Int64(xs []int64, q float64) float64 {
	n := len(xs)
	if n == 0 {
		return math.NaN()
	}
	if q <= 0 {
		return float64(xs[0])
	}
	if q >= 1 {
		return float64(xs[n-1])
	}
	h := float64(n-1) * q
	lo := math.Floor(h)
	i := int(lo)
	if i+1 >= n {
		return float64(xs[n-1])
	}
	return float64(xs[i]) + (h-lo)*float64(xs[i+1]-xs[i])
}

// SortInt64 sorts in place and returns xs.
func SortInt64(xs []int64) []int64 {
	slices.Sort(xs)
	return xs
}

// Bucket is one bar of a histogram, in ms: [From, To).
type Bucket struct {
	FromMs float64 `json:"from_ms"`
	ToMs   float64 `json:"to_ms"`
	Count  int     `json:"count"`
}

// NiceWidth returns the smallest 1-2-5 step (in ns, ≥ 1 ms) such that
// max/step ≤ n: a width a human reads without arithmetic.
func NiceWidth(maxNs int64, n int) int64 {
	if n < 1 {
		n = 1
	}
	step := int64(1e6)
	for {
		for _, m := range []int64{1, 2, 5} {
			if w := step * m; maxNs/w < int64(n) {
				return w
			}
		}
		if step > math.MaxInt64/100 {
			return step * 10
		}
		step *= 10
	}
}

// Histogram counts ns values in buckets of the given width and returns the
// non-empty buckets in order.
func Histogram(xs []int64, width int64) []Bucket {
	if len(xs) == 0 || width <= 0 {
		return []Bucket{}
	}
	counts := map[int64]int{}
	for _, x := range xs {
		counts[x/width]++
	}
	keys := make([]int64, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	out := make([]Bucket, 0, len(keys))
	for _, k := range keys {
		out = append(out, Bucket{FromMs: float64(k*width) / 1e6, ToMs: float64((k+1)*width) / 1e6, Count: counts[k]})
	}
	return out
}
