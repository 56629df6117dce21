package analyze

import (
	"math"
	"math/rand/v2"
	"slices"
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
