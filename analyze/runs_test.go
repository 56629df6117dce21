package analyze

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/tailscope/tailscope/quantile"
)

// TestRunsAsMerged checks every answer of runs against the merged list
// stats used to build (mergeAscending of the three): counts, ranks,
// quantiles of every prefix, the ascending walk, distinct values and the
// latency histogram, on lists with ties within and across lists, empty
// lists, negative and extreme values.
func TestRunsAsMerged(t *testing.T) {
	rng := rand.New(rand.NewPCG(40, 1))
	gen := func(n int, spread int64) []int64 {
		s := make([]int64, n)
		for i := range s {
			s[i] = rng.Int64N(spread) + 500_000
			if rng.IntN(50) == 0 {
				s[i] = -s[i]
			}
		}
		slices.Sort(s)
		return s
	}
	cases := []runs{
		{},
		{{7}},
		{nil, {3, 3, 3}, nil},
		{{math.MinInt64, 0, math.MaxInt64}, {math.MinInt64, math.MaxInt64}, {-1, 1}},
	}
	for range 200 {
		spread := []int64{3, 1000, 5_000_000_000}[rng.IntN(3)]
		cases = append(cases, runs{gen(rng.IntN(300), spread), gen(rng.IntN(40), spread), gen(rng.IntN(60), spread)})
	}
	qs := []float64{0, 0.001, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999, 1}
	for ci, r := range cases {
		merged := mergeAscending(mergeAscending(r[0], r[1]), r[2])
		if r.n() != len(merged) {
			t.Fatalf("case %d: n %d, want %d", ci, r.n(), len(merged))
		}
		wantMin := int64(0)
		if len(merged) > 0 {
			wantMin = merged[0]
		}
		if r.min() != wantMin {
			t.Fatalf("case %d: min %d, want %d", ci, r.min(), wantMin)
		}
		for i, v := range merged {
			if got := r.at(i); got != v {
				t.Fatalf("case %d: at(%d) = %d, want %d", ci, i, got, v)
			}
			for _, x := range []int64{v - 1, v, v + 1} {
				want := len(merged) - len(slices.DeleteFunc(slices.Clone(merged), func(y int64) bool { return y < x }))
				if got := r.below(x); got != want {
					t.Fatalf("case %d: below(%d) = %d, want %d", ci, x, got, want)
				}
			}
		}
		for k := 0; k <= len(merged); k++ {
			for _, q := range qs {
				got, want := r.quantile(k, q), quantile.Int64(merged[:k], q)
				if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
					t.Fatalf("case %d: quantile(%d, %v) = %v, want %v", ci, k, q, got, want)
				}
			}
		}
		walked := slices.Collect(r.all())
		if len(merged) > 0 && !slices.Equal(walked, merged) {
			t.Fatalf("case %d: all() = %v, want %v", ci, walked, merged)
		}
		var gotEach, wantEach [][2]int64
		r.each(func(v int64, c int) { gotEach = append(gotEach, [2]int64{v, int64(c)}) })
		for i := 0; i < len(merged); {
			j := i
			for j < len(merged) && merged[j] == merged[i] {
				j++
			}
			wantEach = append(wantEach, [2]int64{merged[i], int64(j - i)})
			i = j
		}
		if !reflect.DeepEqual(gotEach, wantEach) {
			t.Fatalf("case %d: each %v, want %v", ci, gotEach, wantEach)
		}
		if got, want := logHistogram(r.all()), LogHistogram(merged); !reflect.DeepEqual(got, want) {
			t.Fatalf("case %d: histogram %v, want %v", ci, got, want)
		}
	}
}
