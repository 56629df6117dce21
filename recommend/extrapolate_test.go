package recommend

import (
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/quantile"
)

// ttsOf is the time to success of n calls whose durations (ns) are
// x(u) at evenly spaced u in (0, 1): a hop with a known distribution.
func ttsOf(n int, x func(u float64) float64) analyze.TimeToSuccess {
	v := make([]int64, n)
	for i := range v {
		v[i] = int64(x((float64(i) + 0.5) / float64(n)))
	}
	sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
	return analyze.TimeToSuccess{N: n, Known: n, P50: float64(v[n/2]), Max: v[n-1],
		At: func(q float64) float64 { return quantile.Int64(v, q) }}
}

// TestExtrapolateBasis: the words of an extrapolated timeout's basis. A
// tail the model puts absurdly far out is not printed as a duration (it
// is the formula's, not the hop's), a value no rounding moves gets no
// arrow to itself, and a hop with more successes than the fit reads is
// named by its own count.
func TestExtrapolateBasis(t *testing.T) {
	pareto := func(alpha float64) func(float64) float64 {
		return func(u float64) float64 { return 1e7 * math.Pow(1-u, -1/alpha) }
	}
	for _, c := range []struct {
		name      string
		tts       analyze.TimeToSuccess
		want, not []string
	}{
		{"far beyond", ttsOf(954, pareto(0.3)), []string{"the tail of the 954 successes (", "over 100× the slowest success", "the timeout stops at 4× it: "}, []string{"so the timeout stops there"}},
		{"beyond", ttsOf(954, pareto(1.2)), []string{"past 4× the slowest success", "so the timeout stops there: "}, []string{"over 100×"}},
		{"many successes", ttsOf(5000, func(u float64) float64 { return 1e7 * math.Exp(0.3*math.Sqrt(-2*math.Log(1-u))) }), []string{"the tail of the 5000 successes (", "fitted to 1000 of their quantiles"}, nil},
	} {
		_, basis, _, _ := extrapolate(c.tts, 1e-4, 0.1)
		for _, w := range c.want {
			if !strings.Contains(basis, w) {
				t.Errorf("%s: basis lacks %q:\n%s", c.name, w, basis)
			}
		}
		for _, w := range c.not {
			if strings.Contains(basis, w) {
				t.Errorf("%s: basis has %q:\n%s", c.name, w, basis)
			}
		}
		if i := strings.Index(basis, " → "); i >= 0 {
			before := basis[:i]
			at := before[strings.LastIndex(before, " ")+1:]
			if strings.HasPrefix(basis[i+len(" → "):], at+" ") || strings.HasSuffix(basis, " → "+at) {
				t.Errorf("%s: an arrow from %s to itself:\n%s", c.name, at, basis)
			}
		}
	}
}
