package analyze

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/tailscope/tailscope/span"
	"github.com/tailscope/tailscope/span/spantest"
)

// On a fan-out to 40 services, one of them slow in 3% of the requests:
// worst first names it, with most of the share, a reason with numbers and
// example traces; the hop table is ordered by the ranking, and --sort name
// restores the alphabetical order.
func TestWorstFirstFanOut(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	g := &spantest.TraceGen{T0: time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC).UnixNano()}
	slow := map[string]bool{}
	for i := range 600 {
		var cs []spantest.Callee
		for k := range 40 {
			c := spantest.Callee{Name: fmt.Sprintf("s%02d", k), Server: spantest.RMS(r, 10, 60), Gap: spantest.RMS(r, 1, 3)}
			if k == 17 && r.IntN(100) < 3 {
				c.Server += spantest.RMS(r, 700, 900)
				slow[fmt.Sprintf("t%04d", i)] = true
			}
			cs = append(cs, c)
		}
		g.Add(fmt.Sprintf("t%04d", i), true, cs)
	}
	rep := analyse(g.Spans, Options{})
	if len(rep.TailRanking) == 0 {
		t.Fatal("no tail ranking")
	}
	top := rep.TailRanking[0]
	t.Logf("tail: %+v", *rep.TailRequests)
	for _, e := range rep.TailRanking[:min(4, len(rep.TailRanking))] {
		t.Logf("%s %.1f %.3f %s %v", e.Hop, e.Score, e.Share, e.Reason, e.Examples)
	}
	if top.Hop != "s17 handle" {
		t.Fatalf("first: %s, want s17 handle", top.Hop)
	}
	if top.Share < 0.7 {
		t.Errorf("share %.2f: the injected hop should explain most of the tail", top.Share)
	}
	if !strings.Contains(top.Reason, "at p50 against") || len(top.Examples) == 0 || !slow[top.Examples[0]] {
		t.Errorf("reason or examples: %q %v", top.Reason, top.Examples)
	}
	// Its caller is charged only the gap: the client hop is not second
	// with the callee's time.
	for _, e := range rep.TailRanking[1:] {
		if e.Hop == "gw → s17" && e.Share > 0.05 {
			t.Errorf("the caller of the slow hop is charged its callee's time: %+v", e)
		}
	}
	if rep.Hops[0].Hop != "s17 handle" || rep.HopOrder != "rank" {
		t.Errorf("hop table not ordered by the ranking: first %s (%s)", rep.Hops[0].Hop, rep.HopOrder)
	}
	rep.SortHops("name")
	for i := 1; i < len(rep.Hops); i++ {
		if rep.Hops[i-1].Hop > rep.Hops[i].Hop {
			t.Fatalf("--sort name: %s before %s", rep.Hops[i-1].Hop, rep.Hops[i].Hop)
		}
	}
}

// A hop that fails fast ranks through its failures: a failed request
// counts as one at the p99, charged to the hop it failed in.
func TestWorstFirstFastFailures(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	g := &spantest.TraceGen{T0: time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC).UnixNano()}
	for i := range 400 {
		cs := []spantest.Callee{{Name: "auth", Server: spantest.RMS(r, 5, 15), Gap: spantest.RMS(r, 1, 2)}, {Name: "cart", Server: spantest.RMS(r, 20, 80), Gap: spantest.RMS(r, 1, 2)}}
		if i%25 == 3 {
			cs[0] = spantest.Callee{Name: "auth", Server: 2 * time.Millisecond, Gap: time.Millisecond, Failed: true}
			cs = cs[:1]
		}
		g.Add(fmt.Sprintf("t%04d", i), false, cs)
	}
	rep := analyse(g.Spans, Options{})
	if len(rep.TailRanking) == 0 || rep.TailRanking[0].Hop != "auth handle" {
		t.Fatalf("ranking: %+v", rep.TailRanking)
	}
	e := rep.TailRanking[0]
	if e.Failures != 16 || !strings.Contains(e.Reason, "16 of the 16 failed requests failed in it") {
		t.Errorf("failures: %d, %q", e.Failures, e.Reason)
	}
}

// A delay injected between one caller and its callee (the server's own
// time unchanged) shows as that hop's gap, with a gap-tail warning; a
// callee that is itself slow does not.
func TestGapBetweenCallerAndCallee(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	g := &spantest.TraceGen{T0: time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC).UnixNano()}
	for i := range 500 {
		pay := spantest.Callee{Name: "pay", Server: spantest.RMS(r, 20, 40), Gap: spantest.RMS(r, 1, 2)}
		if r.IntN(100) < 5 {
			pay.Gap += spantest.RMS(r, 400, 600) // the network between gw and pay
		}
		stock := spantest.Callee{Name: "stock", Server: spantest.RMS(r, 20, 40), Gap: spantest.RMS(r, 1, 2)}
		if r.IntN(100) < 5 {
			stock.Server += spantest.RMS(r, 400, 600) // stock itself is slow
		}
		g.Add(fmt.Sprintf("t%04d", i), false, []spantest.Callee{pay, stock})
	}
	rep := analyse(g.Spans, Options{})
	pay, stock := hopOf(rep, "gw → pay"), hopOf(rep, "gw → stock")
	if pay == nil || pay.Gap == nil || stock == nil || stock.Gap == nil {
		t.Fatal("no gap on the client hops")
	}
	t.Logf("pay: %+v", *pay.Gap)
	t.Logf("stock: %+v", *stock.Gap)
	x := pay.Gap
	if x.ServerHop != "pay handle" || x.Pairs != 500 || !x.MakesTail || *x.GapP99Ms < 400 || *x.ServerP99Ms > 45 || *x.GapP50Ms > 3 {
		t.Errorf("pay gap: %+v", *x)
	}
	// Said once, in the warning (the human reports put it in the tail's
	// section): the failure evidence is about failures.
	if strings.Contains(pay.Evidence, "callee") {
		t.Errorf("pay evidence repeats the gap: %q", pay.Evidence)
	}
	if stock.Gap.MakesTail || *stock.Gap.GapP99Ms > 3 {
		t.Errorf("stock: the callee is slow, not the Gap: %+v", *stock.Gap)
	}
	n := 0
	for _, w := range rep.Warnings {
		if w.Code == "gap-tail" {
			n++
			if w.Hop != "gw → pay" || !strings.Contains(w.Message, "e.g. trace") {
				t.Errorf("warning: %+v", w)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d gap-tail warnings, want 1", n)
	}
	// The ranking puts the gap on the caller, the slow callee on itself.
	got := map[string]bool{}
	for _, e := range rep.TailRanking[:min(2, len(rep.TailRanking))] {
		got[e.Hop] = true
	}
	if !got["gw → pay"] || !got["stock handle"] {
		t.Errorf("ranking: %+v", rep.TailRanking)
	}
}

// Two windows: "search" is slow in 5% of the requests in both (always
// slow), "pay" gets slower in the second. Compare ranks pay first, and
// search's score is about 0; the window summaries say what each holds.
func TestCompareRanksWhatChanged(t *testing.T) {
	window := func(seed uint64, payBad bool) *Report {
		r := rand.New(rand.NewPCG(seed, 9))
		g := &spantest.TraceGen{T0: time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC).UnixNano()}
		for i := range 800 {
			search := spantest.Callee{Name: "search", Server: spantest.RMS(r, 100, 300), Gap: spantest.RMS(r, 1, 2)}
			if r.IntN(100) < 5 {
				search.Server += spantest.RMS(r, 1500, 2500)
			}
			pay := spantest.Callee{Name: "pay", Server: spantest.RMS(r, 20, 40), Gap: spantest.RMS(r, 1, 2)}
			if payBad && r.IntN(100) < 15 {
				pay.Server += spantest.RMS(r, 600, 900)
			}
			cart := spantest.Callee{Name: "cart", Server: spantest.RMS(r, 10, 30), Gap: spantest.RMS(r, 1, 2)}
			g.Add(fmt.Sprintf("w%d-%04d", seed, i), false, []spantest.Callee{search, pay, cart})
		}
		return analyse(g.Spans, Options{})
	}
	before, after := window(1, false), window(2, true)
	c := Compare(before, after, "last week", "today")
	for _, h := range c.Ranking[:4] {
		t.Logf("%s %.1f %s %v", h.Hop, h.Score, h.Reason, h.Examples)
	}
	t.Logf("before %+v", c.Before)
	t.Logf("after %+v", c.After)
	if c.Ranking[0].Hop != "pay handle" {
		t.Fatalf("first: %s, want pay handle", c.Ranking[0].Hop)
	}
	if c.Ranking[0].Before == nil || c.Ranking[0].After == nil || *c.Ranking[0].After.P99Ms < 3**c.Ranking[0].Before.P99Ms {
		t.Errorf("pay before/after: %+v %+v", c.Ranking[0].Before, c.Ranking[0].After)
	}
	for _, h := range c.Ranking {
		if h.Hop == "search handle" && h.Score > c.Ranking[0].Score/4 {
			t.Errorf("search, slow in both windows, scores %.1f against pay's %.1f", h.Score, c.Ranking[0].Score)
		}
	}
	if c.Before.Label != "last week" || c.Before.Requests != 800 || c.After.Requests != 800 || c.Before.P99Ms == nil || c.After.TailRequests == 0 {
		t.Errorf("summaries: %+v %+v", c.Before, c.After)
	}
	if !strings.Contains(c.Ranking[0].Reason, "p99") || len(c.Ranking[0].Examples) == 0 {
		t.Errorf("reason or examples: %+v", c.Ranking[0])
	}
}

// SplitByTime: a trace goes by its first span's start, whole.
func TestSplitByTime(t *testing.T) {
	base := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC).UnixNano()
	sec := int64(time.Second)
	var spans []span.Span
	for i := range 30 {
		id := fmt.Sprintf("t%02d", i)
		t0 := base + int64(i)*sec
		spans = append(spans, span.Span{TraceID: id, SpanID: "a", Hop: "x", Start: t0, Duration: sec / 2},
			span.Span{TraceID: id, SpanID: "b", ParentID: "a", Hop: "y", Start: t0 + 1, Duration: sec / 4})
	}
	before, after, from, mid, to := SplitByTime(spanPointers(spans), 10*time.Second)
	if to != base+29*sec+sec/2 || mid != to-10*sec || from != mid-10*sec {
		t.Errorf("bounds %d %d %d", from-base, mid-base, to-base)
	}
	traces := func(ss []span.Span) map[string]int {
		m := map[string]int{}
		for _, s := range ss {
			m[s.TraceID]++
		}
		return m
	}
	b, a := traces(before), traces(after)
	if len(a) != 10 || len(b) != 10 || a["t20"] != 2 || b["t10"] != 2 || b["t09"] != 0 {
		t.Errorf("before %v after %v", b, a)
	}
}

// A hop that starts failing fast ranks first in a comparison through its
// failures (each failed request counted as one at the baseline's p99),
// although it made no request slower.
func TestCompareRanksNewFailures(t *testing.T) {
	window := func(seed uint64, authFails bool) *Report {
		r := rand.New(rand.NewPCG(seed, 11))
		g := &spantest.TraceGen{T0: time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC).UnixNano()}
		for i := range 600 {
			search := spantest.Callee{Name: "search", Server: spantest.RMS(r, 100, 300), Gap: spantest.RMS(r, 1, 2)}
			if r.IntN(100) < 5 {
				search.Server += spantest.RMS(r, 1500, 2500)
			}
			auth := spantest.Callee{Name: "auth", Server: spantest.RMS(r, 5, 10), Gap: spantest.RMS(r, 1, 2)}
			cs := []spantest.Callee{auth, search}
			if authFails && r.IntN(100) < 8 {
				cs = []spantest.Callee{{Name: "auth", Server: 3 * time.Millisecond, Gap: time.Millisecond, Failed: true}}
			}
			g.Add(fmt.Sprintf("w%d-%04d", seed, i), false, cs)
		}
		return analyse(g.Spans, Options{})
	}
	c := Compare(window(1, false), window(2, true), "before", "after")
	for _, h := range c.Ranking[:3] {
		t.Logf("%s %.1f %s", h.Hop, h.Score, h.Reason)
	}
	top := c.Ranking[0]
	if top.Hop != "auth handle" || top.After == nil || top.After.FailedRequests == 0 || !strings.Contains(top.Reason, "requests failed in it 0 →") {
		t.Errorf("first: %+v", top)
	}
}

// A gap that makes a caller's tail but is small in time (9–12 ms at p99 on
// a millisecond-scale hop, as on a real Online Boutique minute) is below
// GapMinMs: it is measured (Hop.Gap) but neither listed nor warned about.
func TestTrivialGapNotListed(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	g := &spantest.TraceGen{T0: time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC).UnixNano()}
	for i := range 500 {
		c := spantest.Callee{Name: "currency", Server: spantest.RMS(r, 1, 3), Gap: spantest.RMS(r, 0, 1)}
		if r.IntN(100) < 5 {
			c.Gap += spantest.RMS(r, 9, 12)
		}
		g.Add(fmt.Sprintf("t%04d", i), false, []spantest.Callee{c})
	}
	rep := analyse(g.Spans, Options{})
	h := hopOf(rep, "gw → currency")
	if h == nil || h.Gap == nil {
		t.Fatal("no gap on the client hop")
	}
	x := h.Gap
	if *x.GapP99Ms < 8 || *x.GapP99Ms >= GapMinMs || *x.GapP99Ms < *x.ClientP99Ms/2 || *x.ServerP99Ms > *x.ClientP99Ms/2 {
		t.Fatalf("the test's gap is not the trivial one it means to be: %+v", *x)
	}
	if x.MakesTail {
		t.Errorf("a %.3gms gap is listed as making the tail", *x.GapP99Ms)
	}
	for _, w := range rep.Warnings {
		if w.Code == "gap-tail" {
			t.Errorf("warning: %+v", w)
		}
	}
}

// A hop whose whole distribution moved (p50 8 ms → 600 ms) while the
// slowest requests were slow for another reason in both windows (a call
// beside it at 2–3 s in one request of ten) holds no more of the tail's
// critical path than before: its tail score is about 0, and it ranked
// near the bottom of 55 hops on a real pair of minutes. Its shift, what
// it adds to a typical request, ranks it first, and both are shown.
func TestCompareRanksAWholeDistributionShift(t *testing.T) {
	window := func(seed uint64, curMs [2]int) *Report {
		r := rand.New(rand.NewPCG(seed, 9))
		g := &spantest.TraceGen{T0: time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC).UnixNano()}
		for i := range 400 {
			slow := spantest.Callee{Name: "catalog", Server: spantest.RMS(r, 80, 120), Gap: spantest.RMS(r, 1, 2)}
			if i%10 == 3 {
				slow.Server = spantest.RMS(r, 2000, 3000)
			}
			cs := []spantest.Callee{slow, {Name: "currency", Server: spantest.RMS(r, curMs[0], curMs[1]), Gap: spantest.RMS(r, 1, 2)}}
			for k := range 20 { // other hops, unchanged
				cs = append(cs, spantest.Callee{Name: fmt.Sprintf("s%02d", k), Server: spantest.RMS(r, 1, 5), Gap: spantest.RMS(r, 0, 1)})
			}
			g.Add(fmt.Sprintf("t%04d", i), true, cs)
		}
		return analyse(g.Spans, Options{})
	}
	before, after := window(1, [2]int{6, 10}), window(2, [2]int{580, 620})
	c := Compare(before, after, "before", "after")
	var cur *HopChange
	rank := 0
	for i := range c.Ranking {
		if c.Ranking[i].Hop == "gw → currency" {
			cur, rank = &c.Ranking[i], i+1
		}
	}
	if cur == nil {
		t.Fatal("the moved hop is not ranked")
	}
	t.Logf("rank %d: score %v, shift %v: %s", rank, cur.Score, cur.ShiftMs, cur.Reason)
	if cur.Score > 100 {
		t.Fatalf("the test means a hop whose tail score barely moved; it scored %v", cur.Score)
	}
	if rank > 2 || cur.ShiftMs < 550 || cur.ShiftMs > 620 {
		t.Errorf("rank %d, shift %vms: want it in the first two with a shift of about 590ms", rank, cur.ShiftMs)
	}
	if !strings.Contains(cur.Reason, "its whole distribution moved") {
		t.Errorf("reason: %q", cur.Reason)
	}
	// Without the shift it would rank by its tail score alone.
	byTail := 1
	for _, h := range c.Ranking {
		if h.Score > cur.Score {
			byTail++
		}
	}
	t.Logf("by the tail score alone it ranks %d of %d", byTail, len(c.Ranking))
	if byTail <= rank {
		t.Errorf("the tail score alone ranks it %d: the test does not show what the shift adds", byTail)
	}
}
