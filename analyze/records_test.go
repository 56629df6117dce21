package analyze

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// recordBlocks are blocks of n lognormal successes each (median med ns,
// σ 0.4), the block at slow (if ≥ 0) scaled by by.
func recordBlocks(seed uint64, blocks, n int, med float64, slow int, by float64) []HopBlock {
	r := rand.New(rand.NewPCG(seed, 11))
	bl := make([]HopBlock, blocks)
	for b := range bl {
		for range n {
			d := med * math.Exp(0.4*r.NormFloat64())
			if b == slow {
				d *= by
			}
			bl[b].ok = append(bl[b].ok, int64(d))
		}
		slices.Sort(bl[b].ok)
	}
	return bl
}

// TestRecordHopCountsByHand: each block's calls are counted against
// factor × anchor × the slowest of the other quiet blocks, as counted here
// by hand; incident blocks and blocks whose rest is too small are left out.
func TestRecordHopCountsByHand(t *testing.T) {
	bl := recordBlocks(1, 6, 40, 20e6, 3, 3)
	bl[5].Incident = true
	const anchor = 1.2
	rc := &Records{Beyond: make([]RecordCount, len(RecordFactors))}
	if !recordHop(bl, anchor, rc) {
		t.Fatal("no block held out")
	}
	want := make([]int, len(RecordFactors))
	calls := 0
	for b := range bl {
		if bl[b].Incident {
			continue
		}
		var rest int64
		for o := range bl {
			if o != b && !bl[o].Incident {
				rest = max(rest, bl[o].ok[len(bl[o].ok)-1])
			}
		}
		calls += len(bl[b].ok)
		for j, f := range RecordFactors {
			for _, d := range bl[b].ok {
				if float64(d) > f*anchor*float64(rest) {
					want[j]++
				}
			}
		}
	}
	if rc.Calls != calls {
		t.Errorf("calls %d, want %d (the incident block left out)", rc.Calls, calls)
	}
	for j := range want {
		if rc.Beyond[j].Calls != want[j] {
			t.Errorf("factor %g: %d beyond, want %d", RecordFactors[j], rc.Beyond[j].Calls, want[j])
		}
	}
	if want[0] == 0 {
		t.Error("the block at 3× should put calls past the others' slowest")
	}
	// A hop whose other blocks hold fewer than minRecordCalls successes
	// is not held out.
	small := recordBlocks(2, 3, minRecordCalls/2-1, 20e6, -1, 1)
	if recordHop(small, anchor, &Records{Beyond: make([]RecordCount, len(RecordFactors))}) {
		t.Error("a hop of a few dozen calls was held out")
	}
}

// TestRecordsFactor: the factor is 1 on stationary hops (a count within
// the share, or consistent with it), rises to where the count fits on
// hops with a slow block, and is the last factor when none fits.
func TestRecordsFactor(t *testing.T) {
	const share = 1e-3
	measure := func(slow int, by float64) *Records {
		rc := &Records{Beyond: make([]RecordCount, len(RecordFactors))}
		for i, f := range RecordFactors {
			rc.Beyond[i].Factor = f
		}
		for h := range 20 {
			s := -1
			if h < 4 {
				s = slow
			}
			if recordHop(recordBlocks(uint64(h+10), 8, 150, 20e6, s, by), 1.2, rc) {
				rc.Hops++
			}
		}
		return rc
	}
	if f, why := measure(-1, 1).Factor(share); f != 1 || why == "" {
		t.Errorf("stationary hops: factor %g (%s), want 1", f, why)
	}
	drifted := measure(2, 3)
	f, why := drifted.Factor(share)
	if f <= 1 || f >= RecordFactors[len(RecordFactors)-1] {
		t.Errorf("hops with a block at 3×: factor %g (%s), want between 1 and the last", f, why)
	}
	for _, b := range drifted.Beyond {
		if b.Factor < f && float64(b.Calls) <= share*float64(drifted.Calls) {
			t.Errorf("factor %g fits (%d calls) but %g was chosen", b.Factor, b.Calls, f)
		}
	}
	if f, _ := measure(2, 30).Factor(share); f != RecordFactors[len(RecordFactors)-1] {
		t.Errorf("hops with a block at 30×: factor %g, want the last, %g", f, RecordFactors[len(RecordFactors)-1])
	}
	var none *Records
	if f, why := none.Factor(share); f != 1 || why != "" {
		t.Errorf("nil records: %g %q", f, why)
	}
}

// TestRecordsFactorRule: the rule on counts, case by case. A count is
// judged as the next window is: within max(1, share × calls), not merely
// consistent with the share; only when no factor brings it there (calls
// past even the last factor) does a count consistent with the share by a
// binomial test do, and failing that the last factor.
func TestRecordsFactorRule(t *testing.T) {
	rec := func(calls int, beyond ...int) *Records {
		rc := &Records{Calls: calls, Hops: 8}
		for i, n := range beyond {
			rc.Beyond = append(rc.Beyond, RecordCount{Factor: RecordFactors[i], Calls: n})
		}
		return rc
	}
	for _, c := range []struct {
		name  string
		rc    *Records
		share float64
		want  float64
		words string
	}{
		// 7 past 1× where 3 are allowed: consistent with the share at 1%
		// (the rule before took 1), but more than the count allows.
		{"count over the share", rec(24000, 7, 3, 1, 1, 0, 0, 0, 0), 1.25e-4, 1.25, "allows 3)"},
		{"within the share", rec(24000, 3, 1, 0, 0, 0, 0, 0, 0), 1.25e-4, 1, "allows 3)"},
		// One call where 0.3 are allowed is chance: max(1, …).
		{"one call", rec(2400, 1, 0, 0, 0, 0, 0, 0, 0), 1.25e-4, 1, "allows 1)"},
		{"two calls", rec(2400, 2, 1, 0, 0, 0, 0, 0, 0), 1.25e-4, 1.25, "allows 1)"},
		// Calls past every factor: no factor covers them; 3 where 0.7 are
		// allowed is consistent with the share, so 1.
		{"outliers past the cap", rec(7863, 3, 3, 3, 3, 3, 3, 3, 2), 9e-5, 1, "no more than chance"},
		{"past the cap, not chance", rec(7863, 40, 40, 40, 40, 40, 40, 40, 30), 9e-5, 4, "even at 4×"},
	} {
		f, why := c.rc.Factor(c.share)
		if f != c.want || !strings.Contains(why, c.words) {
			t.Errorf("%s: factor %g (%s), want %g and %q", c.name, f, why, c.want, c.words)
		}
	}
}
