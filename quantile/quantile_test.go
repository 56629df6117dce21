package quantile

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// oracle is the contract definition written out independently: sort a
// copy, then numpy's "linear" method, (1−g)·x[j] + g·x[j+1] with
// j = ⌊(n−1)q⌋ and g its fractional part.
func oracle(xs []float64, q float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	pos := q * float64(len(s)-1)
	j := int(pos)
	g := pos - float64(j)
	if j+1 >= len(s) {
		return s[len(s)-1]
	}
	return (1-g)*s[j] + g*s[j+1]
}

// TestAgainstOracle compares Sorted and Int64 with the oracle on the
// distributions the analysis meets: constant, uniform, lognormal (a
// latency body) and bimodal (a body plus a pile at a timeout).
func TestAgainstOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	gen := map[string]func() float64{
		"constant":  func() float64 { return 3e9 },
		"uniform":   func() float64 { return float64(2e8 + r.Int64N(5e8)) },
		"lognormal": func() float64 { return math.Round(3e8 * math.Exp(0.9*r.NormFloat64())) },
		"bimodal": func() float64 {
			if r.Float64() < 0.1 {
				return float64(3e9 + r.Int64N(3e6))
			}
			return float64(2e8 + r.Int64N(5e8))
		},
	}
	qs := []float64{0, 0.001, 0.1, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999, 1}
	for name, g := range gen {
		for _, n := range []int{1, 2, 3, 10, 99, 100, 101, 1000, 100_000} {
			xs := make([]float64, n)
			is := make([]int64, n)
			for i := range xs {
				xs[i] = g()
				is[i] = int64(xs[i])
			}
			sorted := append([]float64(nil), xs...)
			sort.Float64s(sorted)
			SortInt64(is)
			for _, q := range qs {
				want := oracle(xs, q)
				if got := Sorted(sorted, q); math.Abs(got-want) > 1e-9*math.Abs(want) {
					t.Errorf("%s n=%d q=%v: Sorted %v, oracle %v", name, n, q, got, want)
				}
				if got := Int64(is, q); math.Abs(got-want) > 1e-6*math.Abs(want) {
					t.Errorf("%s n=%d q=%v: Int64 %v, oracle %v", name, n, q, got, want)
				}
			}
		}
	}
}

// TestNumpyValues: values numpy's documentation gives for the default
// method.
func TestNumpyValues(t *testing.T) {
	cases := []struct {
		xs   []float64
		q    float64
		want float64
	}{
		{[]float64{1, 2, 3, 4, 7, 10}, 0.5, 3.5},
		{[]float64{1, 2, 3, 4}, 0.5, 2.5},
		{[]float64{1, 2, 3, 4}, 0.25, 1.75},
		{[]float64{15, 20, 35, 40, 50}, 0.4, 29},
	}
	for _, c := range cases {
		if got := Sorted(c.xs, c.q); got != c.want {
			t.Errorf("%v q=%v: %v, want %v", c.xs, c.q, got, c.want)
		}
	}
	if !math.IsNaN(Sorted(nil, 0.5)) || !math.IsNaN(Int64(nil, 0.5)) {
		t.Error("empty input must give NaN")
	}
}

// TestHistogramShowsPile: the failure histogram's width is on the 1-2-5
// ladder and narrow enough that a pile within 0.3% of a 3 s timeout lands
// in one bucket apart from failures 5% earlier.
func TestHistogramShowsPile(t *testing.T) {
	var xs []int64
	for i := 0; i < 19; i++ {
		xs = append(xs, 3_000_000_000+int64(i)*500_000) // 3.000–3.009 s
	}
	xs = append(xs, 2_850_000_000, 2_860_000_000)
	SortInt64(xs)
	w := NiceWidth(xs[len(xs)-1], 100)
	m := w
	for m%10 == 0 {
		m /= 10
	}
	if m != 1 && m != 2 && m != 5 {
		t.Errorf("width %d not on the 1-2-5 ladder", w)
	}
	h := Histogram(xs, w)
	total, top := 0, 0
	for _, b := range h {
		total += b.Count
		if b.FromMs <= 3000 && 3009 < b.ToMs {
			top = b.Count
		}
	}
	if total != len(xs) || top != 19 || len(h) < 2 {
		t.Errorf("width %dms: buckets %+v; want all 19 at 3 s in one bucket, apart from the 2 earlier", w/1e6, h)
	}
}
