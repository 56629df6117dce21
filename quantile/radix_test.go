package quantile

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// sortInt64 must order exactly as slices.Sort does, across the lengths
// where it switches method and ranges that need one to six passes,
// negative values and the extremes of int64 included.
func TestSortInt64MatchesSlicesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	gens := map[string]func() int64{
		"durations":   func() int64 { return int64(math.Exp(r.NormFloat64()*1.5 + 18)) },
		"few values":  func() int64 { return int64(r.IntN(3)) * 1000 },
		"full range":  func() int64 { return int64(r.Uint64()) },
		"around zero": func() int64 { return int64(r.IntN(2000)) - 1000 },
		"extremes": func() int64 {
			return []int64{math.MinInt64, math.MaxInt64, 0, -1, 1}[r.IntN(5)]
		},
	}
	for name, gen := range gens {
		for _, n := range []int{0, 1, 2, radixFrom - 1, radixFrom, radixFrom + 1, 5000, 100_001} {
			s := make([]int64, n)
			for i := range s {
				s[i] = gen()
			}
			want := slices.Clone(s)
			slices.Sort(want)
			sortInt64(s)
			if !slices.Equal(s, want) {
				t.Fatalf("%s, n=%d: differs from slices.Sort", name, n)
			}
		}
	}
}

// A report sorts hop after hop: the radix passes' buffer must be reused
// from one sort to the next, not made anew (see radixScratch).
func TestSortInt64ReusesScratch(t *testing.T) {
	r := rand.New(rand.NewPCG(40, 2))
	s := make([]int64, 20_000)
	for i := range s {
		s[i] = r.Int64N(1 << 30)
	}
	allocs := testing.AllocsPerRun(50, func() {
		r.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
		sortInt64(s)
	})
	if allocs > 0.5 {
		t.Fatalf("%.1f allocations a sort, want none once the scratch exists", allocs)
	}
	if !slices.IsSorted(s) {
		t.Fatal("not sorted")
	}
}
