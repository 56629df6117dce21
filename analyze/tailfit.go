package analyze

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/tailscope/tailscope/internal/par"
)

// This file models a hop's time to success beyond its data: where a hop has
// too few successes for the order statistic a request-level target asks for
// (risk.go), its timeout comes from a fitted tail instead of "the slowest
// success × margin", whose out-of-sample risk is about 1/(n+1) per call
// whatever the margin.
//
// The model, and why (validated on generated samples in tailfit_test.go and
// docs/DESIGN.md §5):
//
//   - On log durations, a mixture of one or two normals fitted by EM, the
//     number of components chosen by BIC. Latencies are close to lognormal,
//     and a hop that sometimes takes a slow path (a cache miss, a cold
//     start) is two lognormals: the mixture follows the slow mode's own tail
//     instead of drawing a line across the gap between the modes, which is
//     what a single tail fit over the top decile does (it put timeouts 10×
//     too high on generated 90/10 hops).
//   - A mixture fitted to the whole sample is led by the body: where the
//     top of a hop decays exponentially on a linear scale (a queue, delays
//     in fixed steps; seen on real exports), it bends down too early and
//     puts the far quantile too low. So the quantile is never below an
//     exponential tail fitted to the excesses over the top tenth (peaks
//     over a threshold with shape 0). On lognormal hops that tail is the
//     lighter one and changes nothing.
//   - A mixture of lognormals cannot follow a power-law tail: on Pareto
//     samples it put the quantile 20× too low in probability. So the fit is
//     checked against the sample's own upper tail: the Hill estimate (mean
//     log-excess over the top tenth) against what one lognormal fitted to
//     the whole sample predicts over the same threshold (the mixture's
//     prediction when its top component is a slow mode set apart). When the sample's tail is heavier by more than
//     1.5 standard errors, the quantile is the larger of the mixture's and
//     the Weissman (Pareto tail) extrapolation, aimed at half the asked
//     probability to pay for the Hill estimate's noise.
//
// Exponential and generalized-Pareto peaks-over-threshold fits were tried
// and rejected: an exponential tail on durations is too light for lognormal
// and Pareto hops (unsafe), a GPD on the top tenth of 300 successes was too
// noisy, and a Pareto tail alone is too heavy for lognormal hops (timeouts
// far above need).

// maxTailPoints bounds the points the tail model is fitted to: above it the
// model reads evenly spaced quantiles of the hop's time to success (the
// digest's own), which keeps EM's cost fixed on big hops.
const maxTailPoints = 1000

// minTailPoints is the fewest successes a tail is fitted to.
const minTailPoints = MinSamplesRecommend

// minTopTail is the fewest values the exponential and Pareto tails are
// fitted to.
const minTopTail = 10

// heavySlack is how many standard errors the Hill estimate may exceed the
// mixture's mean log-excess before the tail is called heavier than it.
const heavySlack = 1.5

// TailModel is a fitted upper tail of a hop's time to success.
type TailModel struct {
	// Kind names the model in the basis ("lognormal", "two-lognormal
	// mixture", with "+ Pareto tail" when the sample's tail is heavier).
	Kind string
	// survLog is P(log X > y) under the mixture.
	survLog func(y float64) float64
	lo, hi  float64 // log range searched for quantiles
	// Hill/Weissman tail, used when heavy.
	heavy    bool
	u, gamma float64 // threshold (ns) and Hill estimate
	k, n     int
	// Exponential tail over the top k: threshold and mean excess (ns).
	eu, beta float64
}

// FitTail fits the model to ascending positive durations in ns (at least
// minTailPoints). It never fails: degenerate samples (all equal) give a
// model whose quantiles are that value.
func FitTail(xs []float64) TailModel {
	n := len(xs)
	y := make([]float64, n)
	for i, x := range xs {
		y[i] = math.Log(max(x, 1e3)) // 1 µs floor: a log of 0 is no duration
	}
	m := TailModel{n: n, lo: y[0] - 60, hi: y[n-1] + 60}
	var upper float64
	m.survLog, m.Kind, upper = mixture(y)
	// The tails are fitted over the top tenth, but never across the gap
	// below a slow mode: with two components, only over the values above
	// the upper one's median (a threshold in the fast mode would measure
	// the gap, not the tail, and put the quantile 10× too high).
	m.k = max(minTopTail, n/10)
	above := n - sort.SearchFloat64s(y, upper)
	m.k = min(m.k, above)
	if m.k < minTopTail || m.k >= n {
		m.k = 0
		return m
	}
	u := y[n-m.k-1]
	m.eu = xs[n-m.k-1]
	for _, x := range xs[n-m.k:] {
		m.beta += x - m.eu
	}
	m.beta /= float64(m.k)
	var g float64
	for _, v := range y[n-m.k:] {
		g += v - u
	}
	g /= float64(m.k)
	// The mixture's mean log-excess over u: ∫ S(t) dt / S(u) over t > u.
	// Against one lognormal fitted to the whole sample, not against a
	// mixture of overlapping components: such a mixture of four can bend to follow a power law over the
	// data and then fall away beyond it, hiding the very tail the test is
	// for (measured: Pareto hops lost 20× their share).
	// A slow mode set apart is the mixture's own business: there the top
	// tenth lies in that mode, and the mixture is the reference.
	body := m.survLog
	if math.IsInf(upper, -1) {
		one := fitNormals(y, []int{0, n})
		body = func(t float64) float64 { return normSurv((t - one.m[0]) / one.sd[0]) }
	}
	su := body(u)
	gm := 0.0
	if su > 0 {
		const steps = 4000
		span := (y[n-1] - u) * 20
		if span <= 0 {
			span = 1
		}
		h := span / steps
		for i := 0; i < steps; i++ {
			gm += body(u+(float64(i)+0.5)*h) * h
		}
		gm /= su
	}
	if g > gm*(1+heavySlack/math.Sqrt(float64(m.k))) && g > 0 {
		m.heavy, m.u, m.gamma = true, math.Exp(u), g
	}
	return m
}

// Quantile is the duration (ns) a new success exceeds with probability p.
func (m TailModel) Quantile(p float64) float64 {
	v, _ := m.QuantileBy(p)
	return v
}

// QuantileBy is Quantile and the part of the model that set it.
func (m TailModel) QuantileBy(p float64) (float64, string) {
	lo, hi := m.lo, m.hi
	for i := 0; i < 200 && hi-lo > 1e-9; i++ {
		mid := (lo + hi) / 2
		if m.survLog(mid) > p {
			lo = mid
		} else {
			hi = mid
		}
	}
	q, by := math.Exp(hi), m.Kind
	if m.k > 0 && m.beta > 0 {
		if e := m.eu + m.beta*math.Log(float64(m.k)/(float64(m.n)*p)); e > q {
			q, by = e, "an exponential tail over the top tenth"
		}
	}
	if m.heavy {
		if w := m.u * math.Pow(float64(m.k)/(float64(m.n)*p/2), m.gamma); w > q {
			q, by = w, "a Pareto tail over the top tenth"
		}
	}
	return q, by
}

// Exceed is the model's probability that a new success takes longer than
// t ns (the inverse of Quantile, found by bisection on it).
func (m TailModel) Exceed(t float64) float64 {
	lo, hi := 1e-15, 1.0
	for i := 0; i < 100; i++ {
		mid := math.Sqrt(lo * hi)
		if m.Quantile(mid) > t {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// mixture fits one, two or three normals to y (ascending log durations)
// by EM and returns the survival function of the one BIC prefers, its name
// and the mean of its upper component (−Inf for one normal). Each fit of
// two or three starts twice — at evenly spread quantiles, and split at the
// widest gaps of the sample, where separated modes show — and keeps the
// likelier: a slow mode of a few percent is found from the gap, a broad
// body from the quantiles.
func mixture(y []float64) (func(float64) float64, string, float64) {
	n := float64(len(y))
	// The fits are independent: all are run (on every core, the costly
	// ones converge in hundreds of EM iterations), then chosen in this
	// order, so the choice is the sequential loop's. Starts that cut the
	// sample alike give the same fit and are fitted once.
	starts := [][]int{{0, len(y)}}
	for k := 2; k <= maxComponents; k++ {
		for _, cuts := range [][]int{quantileCuts(len(y), k), gapCuts(y, k), bodyGapCuts(y, k)} {
			if cuts != nil {
				starts = append(starts, cuts)
			}
		}
	}
	first := make([]int, len(starts)) // the start whose fit each one reuses
	var distinct []int
	for i, c := range starts {
		first[i] = i
		for _, j := range distinct {
			if slices.Equal(starts[j], c) {
				first[i] = j
				break
			}
		}
		if first[i] == i {
			distinct = append(distinct, i)
		}
	}
	// Most components first: a four-component fit costs about four times
	// a two-component one, and started last it would leave the other
	// cores idle while it runs alone.
	slices.SortStableFunc(distinct, func(a, b int) int { return len(starts[b]) - len(starts[a]) })
	fits := make([]normals, len(starts))
	par.Each(len(distinct), func(d int) {
		i := distinct[d]
		fits[i] = fitNormals(y, starts[i])
	})
	best := fits[0]
	bestBIC := 2*best.ll - 2*math.Log(n)
	for i := 1; i < len(starts); i++ {
		f := fits[first[i]]
		if f.collapsed {
			continue
		}
		k := len(starts[i]) - 1
		if bic := 2*f.ll - float64(3*k-1)*math.Log(n); bic > bestBIC+bicMargin {
			best, bestBIC = f, bic
		}
	}
	name := "lognormal"
	upper := math.Inf(-1)
	if c := len(best.w); c > 1 {
		name = []string{"", "", "two", "three", "four"}[c] + "-lognormal mixture"
		// Only a slow mode set apart from the rest (its mean more than
		// two standard deviations of each beyond the next one's) has a
		// gap below it for the top tails to stay out of; overlapping
		// components are one broad tail, Pareto-like ones included.
		if best.m[c-1]-best.m[c-2] > 2*(best.sd[c-1]+best.sd[c-2]) {
			upper = best.m[c-1]
		}
	}
	f := best
	return func(t float64) float64 {
		s := 0.0
		for i := range f.w {
			s += f.w[i] * normSurv((t-f.m[i])/f.sd[i])
		}
		return s
	}, name, upper
}

// normals is a fitted mixture, components by ascending mean.
type normals struct {
	w, m, sd  []float64
	ll        float64
	collapsed bool // a component lost its weight: the fit has fewer
}

// bicMargin is how much better (in BIC) a mixture with more components
// must fit to be taken: 10 is "very strong" evidence on Kass and Raftery's
// scale. Plain BIC let a fourth component fit noise at the top of 300
// lognormal successes, and the narrower upper components put the far
// quantiles too low (median loss 0.26% against a 0.1% target on the
// generated chain, 0.10% with the margin).
const bicMargin = 10

// maxComponents is the most normals a mixture has: a broad body may take
// two, and up to two slow modes above it (a slow path, and a rarer
// slower one) each one more.
const maxComponents = 4

// bodyGapCuts starts the top k−2 components at the widest gaps and the
// body below them as two halves: a body that is not normal (uniform,
// skewed) then does not steal a component from a slow mode.
func bodyGapCuts(y []float64, k int) []int {
	if k < 3 {
		return nil
	}
	cuts := gapCuts(y, k-1)
	if cuts == nil || cuts[1] < 6 {
		return nil
	}
	return append([]int{0, cuts[1] / 2}, cuts[1:]...)
}

// quantileCuts starts k components on k equal slices of the sample.
func quantileCuts(n, k int) []int {
	cuts := make([]int, k+1)
	for i := range cuts {
		cuts[i] = n * i / k
	}
	return cuts
}

// gapCuts starts k components split at the k−1 widest gaps between
// neighbouring values, each side keeping at least 3 values; nil when
// there is no such split.
func gapCuts(y []float64, k int) []int {
	n := len(y)
	type gap struct {
		at int
		w  float64
	}
	var gaps []gap
	for i := 3; i <= n-3; i++ {
		gaps = append(gaps, gap{i, y[i] - y[i-1]})
	}
	sort.Slice(gaps, func(a, b int) bool { return gaps[a].w > gaps[b].w })
	cuts := []int{0, n}
	for _, g := range gaps {
		if len(cuts) == k+1 {
			break
		}
		ok := true
		for _, c := range cuts {
			if abs(g.at-c) < 3 {
				ok = false
			}
		}
		if ok {
			cuts = append(cuts, g.at)
		}
	}
	if len(cuts) != k+1 {
		return nil
	}
	sort.Ints(cuts)
	return cuts
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// fitNormals runs EM from components started on the slices y[cuts[i]:
// cuts[i+1]].
func fitNormals(y []float64, cuts []int) normals {
	n := float64(len(y))
	k := len(cuts) - 1
	var all float64
	for _, t := range y {
		all += t
	}
	mean := all / n
	var v float64
	for _, t := range y {
		v += (t - mean) * (t - mean)
	}
	v = max(v/n, 1e-12)
	floor := 1e-4 * v // keeps a component from collapsing onto one value
	f := normals{w: make([]float64, k), m: make([]float64, k), sd: make([]float64, k)}
	vars := make([]float64, k)
	for i := 0; i < k; i++ {
		part := y[cuts[i]:cuts[i+1]]
		var s, q float64
		for _, t := range part {
			s += t
		}
		mu := s / float64(len(part))
		for _, t := range part {
			q += (t - mu) * (t - mu)
		}
		f.w[i], f.m[i], vars[i] = float64(len(part))/n, mu, max(q/float64(len(part)), floor)
	}
	r := make([]float64, len(y)*k)
	lw := make([]float64, k)
	lnorm, twoVar := make([]float64, k), make([]float64, k)
	prev := math.Inf(-1)
	for it := 0; it < 300; it++ {
		f.ll = 0
		for j := range lw {
			lw[j] = math.Log(f.w[j])
			// normLogPDF's parts that do not depend on the point, computed
			// once an iteration instead of once a point: the same values,
			// so the same fit, at a third of the logarithms.
			lnorm[j] = -0.5 * math.Log(2*math.Pi*vars[j])
			twoVar[j] = 2 * vars[j]
		}
		for i, t := range y {
			row := r[i*k : (i+1)*k]
			top := math.Inf(-1)
			for j := range row {
				d := t - f.m[j]
				row[j] = lw[j] + (lnorm[j] - d*d/twoVar[j])
				top = max(top, row[j])
			}
			sum := 0.0
			for j := range row {
				// exp(0) is 1 and exp below its underflow is 0, exactly:
				// the top component and the far ones need no call.
				switch x := row[j] - top; {
				case x == 0:
					row[j] = 1
				case x < expUnderflow:
					row[j] = 0
				default:
					row[j] = math.Exp(x)
				}
				sum += row[j]
			}
			for j := range row {
				row[j] /= sum
			}
			if sum == 1 { // every other component underflowed: log(1) is 0
				f.ll += top
			} else {
				f.ll += top + math.Log(sum)
			}
		}
		for j := 0; j < k; j++ {
			var sw, s1 float64
			for i, t := range y {
				sw += r[i*k+j]
				s1 += r[i*k+j] * t
			}
			if sw/n < 1e-3 {
				f.collapsed = true
				return f
			}
			mu := s1 / sw
			var q float64
			for i, t := range y {
				q += r[i*k+j] * (t - mu) * (t - mu)
			}
			f.w[j], f.m[j], vars[j] = sw/n, mu, max(q/sw, floor)
		}
		if f.ll-prev < 1e-7*n {
			break
		}
		prev = f.ll
	}
	for j := range vars {
		f.sd[j] = math.Sqrt(vars[j])
	}
	// Components by ascending mean (EM keeps them apart, not ordered).
	idx := []int{}
	for j := 0; j < k; j++ {
		idx = append(idx, j)
	}
	sort.Slice(idx, func(a, b int) bool { return f.m[idx[a]] < f.m[idx[b]] })
	o := normals{ll: f.ll}
	for _, j := range idx {
		o.w, o.m, o.sd = append(o.w, f.w[j]), append(o.m, f.m[j]), append(o.sd, f.sd[j])
	}
	return o
}

// expUnderflow is the largest x below which math.Exp(x) is 0 (the
// constant of Go's math package, whose Exp returns 0 for x < it).
const expUnderflow = -7.45133219101941108420e+02

func normSurv(z float64) float64 { return 0.5 * math.Erfc(z/math.Sqrt2) }

func normLogPDF(t, m, v float64) float64 {
	return -0.5*math.Log(2*math.Pi*v) - (t-m)*(t-m)/(2*v)
}

// TailPoints reads a hop's time to success for the model: every success
// when there are at most maxTailPoints, else evenly spaced quantiles.
// ttsAt is the hop's quantile function (type 7: at i/(n−1) it is the i-th
// smallest exactly).
func TailPoints(at func(q float64) float64, n int) []float64 {
	if n < 2 {
		return nil
	}
	k := min(n, maxTailPoints)
	xs := make([]float64, k)
	for i := range xs {
		if k == n {
			xs[i] = at(float64(i) / float64(n-1))
		} else {
			xs[i] = at((float64(i) + 0.5) / float64(k))
		}
	}
	return xs
}

// DescribeModel is the basis's words for a model's quantile at p.
func DescribeModel(m TailModel, p float64) string {
	_, by := m.QuantileBy(p)
	s := fmt.Sprintf("the tail of the %d successes (%s", m.n, m.Kind)
	if m.heavy {
		s += ", heavier than it at the top"
	}
	if by != m.Kind {
		s += "; set by " + by
	}
	return s + ")"
}
