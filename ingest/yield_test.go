package ingest_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/recommend"
	"github.com/tailscope/tailscope/span"
)

// hopTruth is what a generated log holds for one hop, counted as it is
// written.
type hopTruth struct {
	attempts, calls, failed, timeouts int
	retried, recovered                int // calls with a second attempt; of them, ended in success
	afterTO, afterTOok                int // attempt n timed out and n+1 was made; n+1 succeeded
	afterFF, afterFFok                int // the same after another failure
}

// wildLog writes a six-hop log (one request per trace, each calling the
// six hops once under a root span) in the spellings of the wild: attempts
// numbered from 0 ("attempt"), from 1 (Envoy's x-envoy-attempt-count) or
// as counts of earlier tries (grpc-previous-rpc-attempts, absent on the
// first), and failures coded as text (ECONNRESET, UNAVAILABLE, EPIPE,
// ETIMEDOUT). plain writes the same spans with numeric codes and no
// attempt numbers at all, so that the two can be compared.
func wildLog(seed uint64, traces int, plain bool) (string, map[string]*hopTruth) {
	rng := rand.New(rand.NewPCG(seed, 12))
	truth := map[string]*hopTruth{}
	var b strings.Builder
	t0 := int64(1_767_225_600_000_000_000)
	type hopSpec struct {
		name string
		// numbering: "0" 0-based attempt, "1" 1-based Envoy count,
		// "prev" count of earlier tries, "" none.
		numbering string
		// fail decides attempt k's outcome: failed, timed out, its code
		// as text and as a number, and its duration in ms.
		fail func(k int) (failed, timeout bool, text string, code int, ms float64)
	}
	ok := func(ms float64) (bool, bool, string, int, float64) { return false, false, "", 0, ms }
	hops := []hopSpec{
		{"login", "0", func(int) (bool, bool, string, int, float64) { return ok(5 + rng.Float64()*20) }},
		// 503-like failures, fast, mostly recovered by the next attempt.
		{"inventory", "0", func(k int) (bool, bool, string, int, float64) {
			p := 0.3
			if k > 0 {
				p = 0.15
			}
			if rng.Float64() < p {
				if rng.IntN(2) == 0 {
					return true, false, "ECONNRESET", 503, 2 + rng.Float64()*10
				}
				return true, false, "UNAVAILABLE", 503, 2 + rng.Float64()*10
			}
			return ok(20 + rng.Float64()*80)
		}},
		// Timeouts on the first attempt, always recovered.
		{"pricing", "prev", func(k int) (bool, bool, string, int, float64) {
			if k == 0 && rng.Float64() < 0.2 {
				return true, true, "ETIMEDOUT", 504, 800 + rng.Float64()*2
			}
			return ok(30 + rng.Float64()*200)
		}},
		// Failures never retried, numbered from 0.
		{"catalog", "0", func(k int) (bool, bool, string, int, float64) {
			if k == 0 && rng.Float64() < 0.1 {
				return true, false, "EPIPE", 502, 1 + rng.Float64()*5
			}
			return ok(10 + rng.Float64()*50)
		}},
		// Envoy's 1-based count, with retried resets.
		{"checkout", "1", func(k int) (bool, bool, string, int, float64) {
			if k == 0 && rng.Float64() < 0.25 {
				return true, false, "connection reset", 503, 3 + rng.Float64()*4
			}
			return ok(40 + rng.Float64()*100)
		}},
		{"notify", "", func(int) (bool, bool, string, int, float64) { return ok(1 + rng.Float64()*3) }},
	}
	for i := range traces {
		tid := fmt.Sprintf("%032x", i+1)
		root := fmt.Sprintf("%016x", uint64(i)<<8|1)
		start := t0 + int64(i)*2_000_000_000
		cur := start + 1_000_000
		sid := 2
		for _, h := range hops {
			tr := truth[h.name]
			if tr == nil {
				tr = &hopTruth{}
				truth[h.name] = tr
			}
			tr.calls++
			type att struct{ failed, timeout bool }
			var atts []att
			for k := 0; k < 3; k++ {
				failed, timeout, text, code, ms := h.fail(k)
				if h.numbering == "" && k > 0 {
					break // a hop without numbers is never retried here
				}
				fmt.Fprintf(&b, `{"trace_id":"%s","span_id":"%016x","parent_id":"%s","hop":"%s","start":%d,"duration_ms":%.3f`,
					tid, uint64(i)<<8|uint64(sid), root, h.name, cur, ms)
				sid++
				switch {
				case failed && plain:
					fmt.Fprintf(&b, `,"status":"error","code":%d`, code)
				case failed:
					fmt.Fprintf(&b, `,"status":"error","code":%q`, text)
				default:
					b.WriteString(`,"status":"ok"`)
				}
				if timeout && plain {
					b.WriteString(`,"timeout":true`)
				}
				if !plain {
					switch h.numbering {
					case "0":
						fmt.Fprintf(&b, `,"attempt":%d`, k)
					case "1":
						fmt.Fprintf(&b, `,"x-envoy-attempt-count":%d`, k+1)
					case "prev":
						if k > 0 {
							fmt.Fprintf(&b, `,"grpc-previous-rpc-attempts":%d`, k)
						}
					}
				}
				b.WriteString("}\n")
				cur += int64(ms*1e6) + 1_000_000
				atts = append(atts, att{failed, timeout})
				if !failed {
					break
				}
			}
			tr.attempts += len(atts)
			for k, a := range atts {
				if a.failed {
					tr.failed++
				}
				if a.timeout {
					tr.timeouts++
				}
				if k+1 < len(atts) && a.failed {
					next := atts[k+1]
					if a.timeout {
						tr.afterTO++
						if !next.failed {
							tr.afterTOok++
						}
					} else {
						tr.afterFF++
						if !next.failed {
							tr.afterFFok++
						}
					}
				}
			}
			if len(atts) > 1 {
				tr.retried++
				if !atts[len(atts)-1].failed {
					tr.recovered++
				}
			}
		}
		fmt.Fprintf(&b, `{"trace_id":"%s","span_id":"%s","hop":"frontend","start":%d,"duration_ms":%.3f,"status":"ok"}`+"\n",
			tid, root, start, float64(cur-start)/1e6)
	}
	return b.String(), truth
}

func analyzeLog(t *testing.T, in string) (*analyze.Report, *ingest.Stats) {
	t.Helper()
	var spans []span.Span
	st, err := ingest.ReadStream("wild.jsonl", strings.NewReader(in), ingest.Options{}, ingest.SinkFunc(func(s *span.Span) { spans = append(spans, *s) }))
	if err != nil {
		t.Fatal(err)
	}
	reqs, pr := span.Assemble(spans)
	rep, _ := recommend.Run(spans, reqs, pr, analyze.Options{})
	return rep, st
}

// A six-hop log whose retries are numbered 0, 1, 2 (and others numbered
// from 1, or by counts of earlier tries) and whose failures are coded as
// text: every hop's attempts, calls, failures and retry yield are the
// ones written, and its latency the same as when the codes are numbers.
func TestZeroBasedAttemptsYield(t *testing.T) {
	in, truth := wildLog(3, 600, false)
	rep, st := analyzeLog(t, in)
	if st.Skipped != 0 || st.Ignored != 0 {
		t.Fatalf("skipped %v, ignored %v", st.SkippedByReason, st.IgnoredByField)
	}
	plainRep, _ := analyzeLog(t, func() string { s, _ := wildLog(3, 600, true); return s }())
	plain := map[string]analyze.Hop{}
	for _, h := range plainRep.Hops {
		plain[h.Hop] = h
	}
	seen := 0
	for _, h := range rep.Hops {
		tr := truth[h.Hop]
		if tr == nil {
			continue
		}
		seen++
		if h.Attempts != tr.attempts || h.Calls != tr.calls || h.FailedAttempts != tr.failed {
			t.Errorf("%s: attempts %d calls %d failed %d, want %d %d %d", h.Hop, h.Attempts, h.Calls, h.FailedAttempts, tr.attempts, tr.calls, tr.failed)
		}
		if tr.timeouts > 0 && h.TimeoutAttempts != tr.timeouts {
			t.Errorf("%s: %d timeout attempts, want %d", h.Hop, h.TimeoutAttempts, tr.timeouts)
		}
		y := h.RetryYield
		switch {
		case tr.retried == 0 && y != nil:
			t.Errorf("%s: retry yield %+v, want none", h.Hop, *y)
		case tr.retried > 0 && y == nil:
			t.Errorf("%s: no retry yield, want %d/%d", h.Hop, tr.recovered, tr.retried)
		case y != nil:
			if y.RetriedCalls != tr.retried || y.Recovered != tr.recovered ||
				y.AfterTimeout.Retried != tr.afterTO || y.AfterTimeout.Succeeded != tr.afterTOok ||
				y.AfterFastFailure.Retried != tr.afterFF || y.AfterFastFailure.Succeeded != tr.afterFFok {
				t.Errorf("%s: yield %+v, want retried %d recovered %d, after timeout %d/%d, after other %d/%d", h.Hop, *y,
					tr.retried, tr.recovered, tr.afterTOok, tr.afterTO, tr.afterFFok, tr.afterFF)
			}
		}
		// The same spans with numeric codes: the same latency and failures.
		p := plain[h.Hop]
		if fmtLat(p.LatencyMs) != fmtLat(h.LatencyMs) || p.FailedAttempts != h.FailedAttempts || p.Attempts != h.Attempts {
			t.Errorf("%s: latency %s failed %d, with numeric codes %s failed %d", h.Hop, fmtLat(h.LatencyMs), h.FailedAttempts, fmtLat(p.LatencyMs), p.FailedAttempts)
		}
	}
	if seen != len(truth) {
		t.Errorf("%d hops in the report, want %d", seen, len(truth))
	}
	if tr := truth["inventory"]; tr.retried < 100 || tr.afterFF < tr.retried {
		t.Fatalf("the generator retried too little to test anything: %+v", *tr)
	}
}

func fmtLat(l analyze.Latency) string {
	f := func(p *float64) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprint(*p)
	}
	return fmt.Sprintf("p50 %s p90 %s p95 %s p99 %s p999 %s max %s", f(l.P50), f(l.P90), f(l.P95), f(l.P99), f(l.P999), f(l.Max))
}
