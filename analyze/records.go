package analyze

import (
	"fmt"
	"slices"

	"github.com/tailscope/tailscope/bound"

	"github.com/tailscope/tailscope/internal/units"
)

// Records check, block by block, the timeouts that are extrapolated past
// a hop's data (docs/DESIGN.md §5, "Records"). An extrapolated timeout
// stands on the hop's slowest success and a fitted tail: anchor × slowest.
// The fit says how far past the data the hop goes if tomorrow is today
// again; drift between windows is what it cannot see, and what a hop of a
// hundred calls gets most wrong (measured on the real TrainTicket day:
// hops of 55–160 calls whose next-half calls needed 3–5× their slowest
// fitted success, with fits that put their timeouts at 1.1× it).
//
// So each quiet block of each such hop is held out in turn: had the hop's
// timeout been anchor × the slowest success of its other quiet blocks,
// how many of the block's successes would it have cut — and how many at
// f × that, for each f of RecordFactors. Pooled over the hops, the least
// f whose count is within a call's share of the target is the factor the
// extrapolated timeouts carry (recommend/drift.go). On stationary traffic
// a block rarely beats the others' slowest by the fitted margin and the
// factor is 1; it grows where the logs show blocks going past it.

// RecordFactors are the factors Records counts at: from none to
// MaxHeadroom, the furthest a timeout is carried past its tail.
var RecordFactors = [...]float64{1, 1.25, 1.5, 1.75, 2, 2.5, 3, 4}

// minRecordCalls is the fewest successes a hop's other quiet blocks must
// hold for a block to be compared with their slowest: the slowest of a
// handful of calls says little of the hop.
const minRecordCalls = 30

// Records is the held-out-block count of the extrapolated timeouts (JSON
// `timeline.headroom.records`).
type Records struct {
	// Calls is how many successful calls were held out, over Hops hops.
	Calls int `json:"calls"`
	Hops  int `json:"hops"`
	// Beyond is, per factor, how many of them were longer than factor ×
	// the timeout their hop's other quiet blocks would have given.
	Beyond []RecordCount `json:"beyond"`
}

// RecordCount is one factor's count in Records.
type RecordCount struct {
	Factor float64 `json:"factor"`
	Calls  int     `json:"calls"`
}

// MeasureRecords counts Records over the call hops whose anchor is
// positive (anchor(i): rep.Hops[i]'s timeout over its slowest success; 0
// leaves the hop out) and keeps them in the timeline; nil when no block
// could be held out (no timeline, too few blocks or calls).
func (rep *Report) MeasureRecords(anchor func(i int) float64) *Records {
	tl := rep.Timeline
	if tl == nil || !tl.Measured {
		return nil
	}
	rc := &Records{Beyond: make([]RecordCount, len(RecordFactors))}
	for i, f := range RecordFactors {
		rc.Beyond[i].Factor = f
	}
	for i := range rep.Hops {
		h := &rep.Hops[i]
		a := anchor(i)
		if h.Role != RoleCall || h.Blocks == nil || a <= 0 {
			continue
		}
		if recordHop(h.Blocks, a, rc) {
			rc.Hops++
		}
	}
	if rc.Calls == 0 {
		return nil
	}
	tl.Headroom.Records = rc
	return rc
}

// recordHop adds one hop's held-out blocks to rc; false when none could
// be held out.
func recordHop(bl []HopBlock, anchor float64, rc *Records) bool {
	// The two largest quiet block maxima and the quiet successes in all:
	// a block's rest is every other quiet block, whose slowest is the
	// largest maximum, or the second when the block holds the largest.
	var top, second int64
	total := 0
	for _, hb := range bl {
		if hb.Incident || len(hb.ok) == 0 {
			continue
		}
		total += len(hb.ok)
		if m := hb.ok[len(hb.ok)-1]; m > top {
			top, second = m, top
		} else if m > second {
			second = m
		}
	}
	held := false
	for _, hb := range bl {
		if hb.Incident || len(hb.ok) == 0 || total-len(hb.ok) < minRecordCalls {
			continue
		}
		rest := top
		if hb.ok[len(hb.ok)-1] == top {
			rest = second
		}
		if rest <= 0 {
			continue
		}
		held = true
		rc.Calls += len(hb.ok)
		for j, f := range RecordFactors {
			// ok is ascending: the calls past the limit are its tail.
			k, _ := slices.BinarySearch(hb.ok, int64(f*anchor*float64(rest))+1)
			rc.Beyond[j].Calls += len(hb.ok) - k
		}
	}
	return held
}

// recordAlpha is how unlikely a count must be under a call's share of the
// target to be more than chance (the fallback of Factor below).
const recordAlpha = 0.01

// Factor is what the extrapolated timeouts of hops whose calls may each
// take share of the request target carry: the least of RecordFactors
// whose count is at most max(1, share × the calls held out); and the
// words for a basis. 1 and "" on nil Records.
//
// The held-out blocks stand for the next window, and the next window is
// judged by a count: drift may lose at most max(1, target × requests)
// (the held-out replay's rule, recommend/heldout.go). A count merely consistent
// with the share under a binomial test (the rule before) let 6 calls past
// where 2.3 were allowed pass as chance on a real TrainTicket day, and the
// other half of that day then lost 5 requests to drift where 2 were
// allowed. The max(1, …) keeps a stationary hop at 1: one call past a
// timeout drawn from a few hundred is chance.
//
// When even the last factor leaves more than that, the calls left are past
// the cap every extrapolated timeout keeps to, and no factor covers them:
// carrying every timeout to the cap for them would only hold stuck calls
// longer (on a tenth of a real day's traces 2 of 7,863 such calls did
// that). The factor is then the least whose count is consistent with the
// share (Binomial(calls, share) reaches it with probability at least
// recordAlpha), or the last when none is.
func (rc *Records) Factor(share float64) (float64, string) {
	if rc == nil || len(rc.Beyond) == 0 {
		return 1, ""
	}
	allow := share * float64(rc.Calls)
	words := func(b RecordCount, at string) string {
		return fmt.Sprintf("held out block by block, the extrapolated timeouts of %s would have cut %d of %s %s %s× (a share of %s allows %s)",
			units.Count(rc.Hops, "hop", "hops"), b.Calls, units.Count(rc.Calls, "call", "calls"), at, units.Decimal(b.Factor, 2), units.Percent(share, 3), units.Decimal(max(1, allow), 1))
	}
	for _, b := range rc.Beyond {
		if float64(b.Calls) <= max(1, allow) {
			return b.Factor, words(b, "at")
		}
	}
	for _, b := range rc.Beyond {
		if bound.BinomialTail(b.Calls, rc.Calls, share) >= recordAlpha {
			return b.Factor, words(b, "at") + ", no more than chance"
		}
	}
	last := rc.Beyond[len(rc.Beyond)-1]
	return last.Factor, words(last, "even at")
}
