package quantile

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

// The table-driven bin is the logarithm's bin: on every integer up to a
// million, on both sides of every bin boundary, and on random values
// spread evenly in log space up to binFastMax (the sketch must not change
// with the speed-up: reports stay byte for byte what they were).
func TestBinOfFast(t *testing.T) {
	check := func(x int64) {
		if x < 1 || x > binFastMax {
			return
		}
		if got, want := binOfFast(x), binOfLog(x); got != want {
			t.Fatalf("binOfFast(%d) = %d, binOfLog %d", x, got, want)
		}
	}
	for x := int64(1); x <= 1_000_000; x++ {
		check(x)
	}
	binOnce.Do(initBins)
	for _, b := range binLo {
		check(b - 1)
		check(b)
		check(b + 1)
	}
	r := rand.New(rand.NewPCG(41, 42))
	for range 2_000_000 {
		check(int64(math.Exp(r.Float64() * math.Log(binFastMax))))
	}
	check(binFastMax)
	if binOf(binFastMax+1) != binOfLog(binFastMax+1) || binOf(math.MaxInt64) != binOfLog(math.MaxInt64) {
		t.Error("binOf beyond the table")
	}
}

// The sketch against an exact oracle (docs/DESIGN.md §4): on constant, uniform,
// lognormal and bimodal (ran-to-timeout) data, past the exact range, every
// contract percentile lies within SketchAlpha of the exact one.
func TestDigestOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const n = 3 * ExactLimit
	dists := map[string]func() int64{
		"constant":  func() int64 { return 250_000_000 },
		"uniform":   func() int64 { return 1 + r.Int64N(10_000_000_000) },
		"lognormal": func() int64 { return int64(300e6 * math.Exp(1.2*r.NormFloat64())) },
		"bimodal": func() int64 {
			if r.Float64() < 0.08 {
				return 3_000_000_000 + r.Int64N(5_000_000) // the pile at the timeout
			}
			return int64(200e6 + 500e6*r.Float64())
		},
		"with zeros": func() int64 {
			if r.Float64() < 0.3 {
				return 0
			}
			return 1 + r.Int64N(1000)
		},
	}
	for name, gen := range dists {
		var d Digest
		xs := make([]int64, 0, n)
		for range n {
			x := gen()
			d.Add(x)
			xs = append(xs, x)
		}
		if d.Exact() {
			t.Fatalf("%s: still exact after %d values", name, n)
		}
		SortInt64(xs)
		for _, q := range []float64{0, 0.001, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999, 1} {
			want, got := Int64(xs, q), d.Quantile(q)
			if math.Abs(got-want) > SketchAlpha*want+1e-9 {
				t.Errorf("%s q=%g: sketch %.0f, exact %.0f (%.3f%%)", name, q, got, want, 100*math.Abs(got-want)/want)
			}
		}
	}
}

// Within the exact range a Digest is the sorted values; merging parts
// gives the same digest as adding everything to one, in either form.
func TestDigestExactAndMerge(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var whole, a, b, sa, sb Digest
	var xs []int64
	for i := range 2000 {
		x := int64(1e6 * math.Exp(r.NormFloat64()))
		xs = append(xs, x)
		whole.Add(x)
		if i%3 == 0 {
			a.Add(x)
			sa.Add(x)
		} else {
			b.Add(x)
			sb.Add(x)
		}
	}
	SortInt64(xs)
	if !reflect.DeepEqual(whole.Sorted(), xs) || whole.Quantile(0.99) != Int64(xs, 0.99) {
		t.Fatal("exact digest is not the sorted values")
	}
	a.Merge(&b)
	if !reflect.DeepEqual(a.Sorted(), xs) {
		t.Error("exact merge lost values")
	}
	whole.Sketch()
	sa.Sketch()
	sb.Sketch()
	sa.Merge(&sb)
	for _, q := range []float64{0.1, 0.5, 0.99, 1} {
		if sa.Quantile(q) != whole.Quantile(q) {
			t.Errorf("sketch merge q=%g: %v, whole %v", q, sa.Quantile(q), whole.Quantile(q))
		}
	}
}

// TestDigestExactGrowth holds the exact phase's four-fold growth to what
// append would have kept: every value, in order, within ExactLimit+1 of
// capacity, and a sketch at the value past the limit.
func TestDigestExactGrowth(t *testing.T) {
	var d Digest
	for i := range ExactLimit {
		d.Add(int64(ExactLimit - i))
		if c := cap(d.exact); c > ExactLimit+1 {
			t.Fatalf("after %d values: capacity %d, over the exact limit", i+1, c)
		}
	}
	if !d.Exact() || d.N() != ExactLimit || len(d.exact) != ExactLimit {
		t.Fatalf("exact %v, n %d, len %d", d.Exact(), d.N(), len(d.exact))
	}
	for i, x := range d.exact {
		if x != int64(ExactLimit-i) {
			t.Fatalf("value %d is %d, want %d", i, x, ExactLimit-i)
		}
	}
	d.Add(7)
	if d.Exact() || d.exact != nil {
		t.Fatal("still exact past the limit")
	}
}
