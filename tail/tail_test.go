package tail

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// tailDist is a generated hop's true time to success (ms).
type tailDist struct {
	name string
	draw func(r *rand.Rand) float64
	surv func(x float64) float64 // P(X > x)
}

func lognormalDist(median, sigma float64) tailDist {
	return tailDist{fmt.Sprintf("lognormal(%g,σ%g)", median, sigma),
		func(r *rand.Rand) float64 { return median * math.Exp(sigma*r.NormFloat64()) },
		func(x float64) float64 { return normSurv(math.Log(x/median) / sigma) }}
}

func paretoDist(floor, xm, alpha float64) tailDist {
	return tailDist{fmt.Sprintf("pareto(%g+%g,α%g)", floor, xm, alpha),
		func(r *rand.Rand) float64 { return floor + xm*math.Pow(1-r.Float64(), -1/alpha) },
		func(x float64) float64 {
			if x-floor < xm {
				return 1
			}
			return math.Pow((x-floor)/xm, -alpha)
		}}
}

func bimodalDist(fast, slow, sigma, w float64) tailDist {
	return tailDist{fmt.Sprintf("bimodal(%g/%g,σ%g,w%g)", fast, slow, sigma, w),
		func(r *rand.Rand) float64 {
			if r.Float64() < w {
				return slow * math.Exp(sigma*r.NormFloat64())
			}
			return fast * math.Exp(sigma*r.NormFloat64())
		},
		func(x float64) float64 {
			return (1-w)*normSurv(math.Log(x/fast)/sigma) + w*normSurv(math.Log(x/slow)/sigma)
		}}
}

// trimodalDist is a fast path and two slow ones (weights w1, w2), all σ.
func trimodalDist(fast, slow1, slow2, sigma, w1, w2 float64) tailDist {
	return tailDist{fmt.Sprintf("trimodal(%g/%g/%g,σ%g,w%g/%g)", fast, slow1, slow2, sigma, w1, w2),
		func(r *rand.Rand) float64 {
			switch u := r.Float64(); {
			case u < w2:
				return slow2 * math.Exp(sigma*r.NormFloat64())
			case u < w1+w2:
				return slow1 * math.Exp(sigma*r.NormFloat64())
			}
			return fast * math.Exp(sigma*r.NormFloat64())
		},
		func(x float64) float64 {
			return (1-w1-w2)*normSurv(math.Log(x/fast)/sigma) + w1*normSurv(math.Log(x/slow1)/sigma) + w2*normSurv(math.Log(x/slow2)/sigma)
		}}
}

// uniformBodyDist is a body uniform on [lo, hi] ms (not normal on any
// scale) and, with weight w, a lognormal slow mode.
func uniformBodyDist(lo, hi, slow, sigma, w float64) tailDist {
	return tailDist{fmt.Sprintf("uniform(%g-%g)+slow(%g,σ%g,w%g)", lo, hi, slow, sigma, w),
		func(r *rand.Rand) float64 {
			if r.Float64() < w {
				return slow * math.Exp(sigma*r.NormFloat64())
			}
			return lo + (hi-lo)*r.Float64()
		},
		func(x float64) float64 {
			return (1-w)*min(1, max(0, (hi-x)/(hi-lo))) + w*normSurv(math.Log(x/slow)/sigma)
		}}
}

// tailDists are the generated hops the model is validated on: the
// families and ranges of docs/DESIGN.md §5, and hops with two slow modes
// or a body that is not lognormal (what the gap starts are for).
func tailDists() []tailDist {
	var ds []tailDist
	for _, s := range []float64{0.3, 0.5, 0.7, 1.0} {
		ds = append(ds, lognormalDist(40, s))
	}
	for _, a := range []float64{1.8, 2.2, 2.5, 3} {
		ds = append(ds, paretoDist(5, 10, a))
	}
	for _, w := range []float64{0.05, 0.1, 0.3} {
		for _, s := range []float64{0.3, 0.5} {
			ds = append(ds, bimodalDist(8, 90, s, w))
		}
	}
	ds = append(ds, trimodalDist(8, 90, 900, 0.3, 0.12, 0.03), trimodalDist(10, 60, 400, 0.4, 0.1, 0.05),
		uniformBodyDist(5, 30, 300, 0.3, 0.1), uniformBodyDist(20, 60, 250, 0.4, 0.05))
	return ds
}

// drawSorted is n draws of d in ns, ascending.
func drawSorted(d tailDist, n int, seed uint64) []float64 {
	r := rand.New(rand.NewPCG(seed, 23))
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = d.draw(r) * 1e6
	}
	slices.Sort(xs)
	return xs
}

// The model holds its share on generated hops it was not fitted to: per
// family, over 20 samples each of 300 and 1,000 successes, the true
// probability of exceeding the fitted quantile at p, as a multiple of p
// (the loss), and the share of fits whose quantile is beyond the true one
// at p/20 (a timeout bought by brute force). Measured when written, and
// (in brackets) with the fit on every point from every start that it
// replaced:
//
//	family     loss at 1e-3    at 1.25e-4     beyond p/20 at 1e-3  at 1.25e-4
//	lognormal  1.14 (1.14)     1.28 (1.28)    0.05 (0.05)          0.05 (0.05)
//	pareto     0.83 (0.90)     1.61 (1.85)    0    (0)             0    (0.03)
//	bimodal    1.20 (1.21)     1.93 (1.94)    0.01 (0)             0.05 (0.04)
//	trimodal   1.37 (1.37)     3.13 (3.13)    0.19 (0.19)          0.24 (0.24)
//	uniform    1.26 (1.27)     2.29 (2.29)    0    (0)             0.07 (0.07)
//
// What the bounds catch: one lognormal fitted to the whole sample loses
// 19× its share at 1e-3 on the Pareto samples and 14–46× on bimodal ones;
// an exponential tail over the top decile alone loses 3–4× on the Pareto
// samples and puts 85% of the 90/10 σ 0.3 bimodal fits beyond p/20.
func TestFitTailOnGeneratedHops(t *testing.T) {
	type acc struct{ loss, beyond, n float64 }
	got := map[string]*[2]acc{}
	var fams []string
	for _, d := range tailDists() {
		fam := d.name[:strings.IndexByte(d.name, '(')]
		if got[fam] == nil {
			got[fam] = &[2]acc{}
			fams = append(fams, fam)
		}
		for _, n := range []int{300, 1000} {
			for seed := uint64(1); seed <= 20; seed++ {
				m := Fit(drawSorted(d, n, seed))
				for i, p := range []float64{1e-3, 1.25e-4} {
					s := d.surv(m.Quantile(p) / 1e6)
					a := &got[fam][i]
					a.loss += s / p
					if s < p/20 {
						a.beyond++
					}
					a.n++
				}
			}
		}
	}
	bound := map[string][2]float64{ // loss at 1e-3 and 1.25e-4
		"lognormal": {1.5, 1.7}, "pareto": {1.3, 2.4}, "bimodal": {1.8, 2.9}, "trimodal": {2, 4.5}, "uniform": {1.8, 3.3},
	}
	beyondMax := map[string]float64{"trimodal": 0.35}
	for _, fam := range fams {
		a := got[fam]
		t.Logf("%-10s loss %.2f %.2f  beyond p/20 %.2f %.2f", fam, a[0].loss/a[0].n, a[1].loss/a[1].n, a[0].beyond/a[0].n, a[1].beyond/a[1].n)
		for i, p := range []float64{1e-3, 1.25e-4} {
			if l := a[i].loss / a[i].n; l > bound[fam][i] {
				t.Errorf("%s at %g: mean loss %.2f× the asked probability, bound %.1f", fam, p, l, bound[fam][i])
			}
			limit := beyondMax[fam]
			if limit == 0 {
				limit = 0.12
			}
			if b := a[i].beyond / a[i].n; b > limit {
				t.Errorf("%s at %g: %.0f%% of the fits beyond the true quantile at p/20, bound %.0f%%", fam, p, 100*b, 100*limit)
			}
		}
	}
}

// Exceed is Quantile's inverse, on models whose quantile each of the three
// parts sets somewhere (the mixture, the exponential tail, the Pareto
// tail), and it falls as t grows.
func TestTailExceedInvertsQuantile(t *testing.T) {
	parts := map[string]bool{}
	for _, kind := range []string{"lognormal", "bimodal", "pareto"} {
		for _, n := range []int{100, 300, 1000} {
			m := Fit(tailSample(n, kind, 3))
			for p := 0.5; p > 1e-9; p /= 3 {
				q, by := m.QuantileBy(p)
				parts[by] = true
				if e := m.Exceed(q); math.Abs(e-p) > 1e-6*p {
					t.Errorf("%s/%d (%s): Exceed(Quantile(%.3g) = %.4g ns) = %.6g (by %s)", kind, n, m.Kind, p, q, e, by)
				}
			}
			prev := 2.0
			for x := 1e5; x < 1e12; x *= 1.1 {
				e := m.Exceed(x)
				if e > prev || e < 1e-15 || e > 1 {
					t.Fatalf("%s/%d: Exceed(%.4g) = %.6g after %.6g", kind, n, x, e, prev)
				}
				prev = e
			}
		}
	}
	if len(parts) < 3 {
		t.Errorf("the samples exercise only %v", parts)
	}
}

// The mixture's mean excess in closed form is the integral it replaced,
// done numerically, from below the body to far out in the top part.
func TestMeanExcessClosedForm(t *testing.T) {
	f := normals{w: []float64{0.85, 0.12, 0.03}, m: []float64{16, 18.2, 20.5}, sd: []float64{0.4, 0.3, 0.6}}
	for _, u := range []float64{14, 16, 17.5, 19, 21, 23, 26} {
		var num float64
		const steps = 400000
		h := (40.0) / steps
		for i := 0; i < steps; i++ {
			num += f.surv(u+(float64(i)+0.5)*h) * h
		}
		want := num / f.surv(u)
		if got := f.meanExcess(u); math.Abs(got-want) > 1e-6*want {
			t.Errorf("u %g: mean excess %.9g, numerically %.9g", u, got, want)
		}
	}
	if got := f.meanExcess(80); got != 0 {
		t.Errorf("beyond every part: %g, want 0", got)
	}
}

// All equal: every quantile is that value, and nothing exceeds it.
func TestFitTailDegenerate(t *testing.T) {
	xs := make([]float64, 200)
	for i := range xs {
		xs[i] = 25e6
	}
	m := Fit(xs)
	for _, p := range []float64{0.1, 1e-3, 1e-6} {
		if q := m.Quantile(p); math.Abs(q-25e6) > 1e-3*25e6 {
			t.Errorf("Quantile(%g) = %g, want 25e6", p, q)
		}
	}
	if e := m.Exceed(26e6); e > 1e-9 {
		t.Errorf("Exceed just above the value: %g", e)
	}
}

// The bins hold the sample: counts add up to it, and counts, means and
// spreads give back its mean and variance; bins ascend, at most tailBins
// of them (one more when a value falls on an edge by rounding).
func TestBinLogs(t *testing.T) {
	for _, kind := range []string{"lognormal", "bimodal", "pareto"} {
		xs := tailSample(1000, kind, 5)
		y := make([]float64, len(xs))
		var mean float64
		for i, x := range xs {
			y[i] = math.Round(math.Log(x)*50) / 50 // quantized: runs of equal values
			mean += y[i]
		}
		mean /= float64(len(y))
		var v float64
		for _, t := range y {
			v += (t - mean) * (t - mean)
		}
		b := binLogs(y, tailBins)
		var n, bm, bv float64
		for i := range b.c {
			n += b.c[i]
			bm += b.c[i] * b.y[i]
		}
		bm /= n
		for i := range b.c {
			bv += b.c[i]*(b.y[i]-bm)*(b.y[i]-bm) + b.q[i]
		}
		if n != 1000 || b.n != 1000 || math.Abs(bm-mean) > 1e-12*math.Abs(mean) || math.Abs(bv-v) > 1e-9*v {
			t.Errorf("%s: %v points, mean %.15g (want %.15g), sum of squares %.12g (want %.12g)", kind, n, bm, mean, bv, v)
		}
		if len(b.c) > tailBins+1 {
			t.Errorf("%s: %d bins", kind, len(b.c))
		}
		for i := 1; i < len(b.y); i++ {
			if b.y[i] <= b.y[i-1] {
				t.Errorf("%s: bin %d's mean %g after %g", kind, i, b.y[i], b.y[i-1])
			}
		}
	}
}

// widestGaps keeps what sorting every gap would give first.
func TestWidestGaps(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for trial := 0; trial < 50; trial++ {
		n := 10 + r.IntN(300)
		y := make([]float64, n)
		for i := range y {
			y[i] = float64(r.IntN(40)) // many equal gaps
		}
		slices.Sort(y)
		var all []gap
		for i := 3; i <= n-3; i++ {
			all = append(all, gap{i, y[i] - y[i-1]})
		}
		slices.SortStableFunc(all, func(a, b gap) int {
			switch {
			case a.w > b.w:
				return -1
			case a.w < b.w:
				return 1
			}
			return 0
		})
		want := all[:min(len(all), maxGapCandidates)]
		if got := widestGaps(y); !slices.Equal(got, want) {
			t.Fatalf("n %d: %v, want %v", n, got, want)
		}
	}
}

// TestDescribeNamesTheSuccesses: a model of a hop with more successes
// than Points reads is described by the hop's count, with the points it
// was fitted to; one fitted to every success by that count alone.
func TestDescribeNamesTheSuccesses(t *testing.T) {
	at := func(q float64) float64 { return 1e6 * (1 + 9*q*q) }
	many := Fit(Points(at, 14400))
	if got := Describe(many, 1e-4, 14400); !strings.HasPrefix(got, "the tail of the 14400 successes (") || !strings.Contains(got, " fitted to 1000 of their quantiles") {
		t.Errorf("14400 successes: %q", got)
	}
	few := Fit(Points(at, 300))
	if got := Describe(few, 1e-4, 300); !strings.HasPrefix(got, "the tail of the 300 successes (") || strings.Contains(got, "quantiles") {
		t.Errorf("300 successes: %q", got)
	}
}

// TestDurationHeld: a tail heavy enough that its far quantile exceeds an
// int64 of nanoseconds gives the largest duration Duration allows, never
// a negative one (the float's conversion is undefined past int64).
func TestDurationHeld(t *testing.T) {
	xs := make([]float64, 954)
	for i := range xs {
		xs[i] = 1e7 * math.Pow(1-(float64(i)+0.5)/float64(len(xs)), -1/0.3)
	}
	m := Fit(xs)
	if q := m.Quantile(1e-4); q < float64(math.MaxInt64) {
		t.Skipf("the model's p99.99 %.3g ns fits an int64: no overflow to test", q)
	}
	if d := m.Duration(1e-4); d != time.Duration(1<<62) {
		t.Errorf("Duration = %v, want the 2^62 ns ceiling", d)
	}
	if d, q := m.Duration(0.5), m.Quantile(0.5); d != time.Duration(q) {
		t.Errorf("Duration(0.5) = %v, want the quantile %v", d, time.Duration(q))
	}
}
