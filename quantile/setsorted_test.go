package quantile

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// MergeUnsorted leaves a digest that answers as Merge's, and SetSorted
// takes the same values sorted elsewhere, and nothing else.
func TestMergeUnsortedSetSorted(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 7))
	for round := range 100 {
		var a, b, ma, mb Digest
		var all []int64
		for range r.IntN(300) + 1 {
			x := int64(r.IntN(5000))
			a.Add(x)
			ma.Add(x)
			all = append(all, x)
		}
		for range r.IntN(300) {
			x := int64(r.IntN(5000))
			b.Add(x)
			mb.Add(x)
			all = append(all, x)
		}
		ma.Merge(&mb)
		a.MergeUnsorted(&b)
		if a.N() != ma.N() || a.Min() != ma.Min() || a.Max() != ma.Max() {
			t.Fatalf("round %d: n/min/max %d %d %d, Merge's %d %d %d", round, a.N(), a.Min(), a.Max(), ma.N(), ma.Min(), ma.Max())
		}
		want := slices.Sorted(slices.Values(all))
		bad := slices.Clone(want)
		bad[len(bad)/2]++ // one value off: the sum tells
		set := func(v []int64) bool { return a.SetSorted(len(v), func(i int) int64 { return v[i] }) }
		if len(bad) > 1 && set(bad) {
			t.Fatalf("round %d: took values that are not the digest's", round)
		}
		if len(want) > 2 {
			swapped := slices.Clone(want)
			swapped[0], swapped[len(swapped)-1] = swapped[len(swapped)-1], swapped[0]
			if want[0] != want[len(want)-1] && set(swapped) {
				t.Fatalf("round %d: took values out of order", round)
			}
		}
		if m := len(want) / 2; m > 0 && want[m-1] != want[m] {
			mid := slices.Clone(want)
			mid[m-1], mid[m] = mid[m], mid[m-1] // the same values, out of order
			if set(mid) {
				t.Fatalf("round %d: took values out of order in the middle", round)
			}
		}
		if !set(want) {
			t.Fatalf("round %d: refused its own values sorted", round)
		}
		if set(want) {
			t.Fatalf("round %d: took values once sorted", round)
		}
		if !reflect.DeepEqual(a.Sorted(), ma.Sorted()) || !reflect.DeepEqual(a.State(), ma.State()) {
			t.Fatalf("round %d: differs from Merge's", round)
		}
		for _, q := range []float64{0, 0.5, 0.9, 0.99, 1} {
			if a.Quantile(q) != ma.Quantile(q) {
				t.Fatalf("round %d: q%v %v, Merge's %v", round, q, a.Quantile(q), ma.Quantile(q))
			}
		}
	}
	// Past the exact range it is Merge.
	var a, b, ma, mb Digest
	for i := range ExactLimit/2 + 10 {
		a.Add(int64(i))
		ma.Add(int64(i))
		b.Add(int64(i) * 3)
		mb.Add(int64(i) * 3)
	}
	a.MergeUnsorted(&b)
	ma.Merge(&mb)
	if a.Exact() || !reflect.DeepEqual(a.State(), ma.State()) {
		t.Fatal("past the exact range MergeUnsorted is not Merge")
	}
}
