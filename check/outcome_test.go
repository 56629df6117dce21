package check

import (
	"strings"
	"testing"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/policy"
)

// Logs that say no span's outcome (the Nezha CSVs have no status column;
// the canonical OTLP example one unset span) get the unknown-outcomes
// warning and a succeeded count marked inferred, and check's min-success
// gate counts none of their requests as a success unless optimistic. Logs
// with a status (the seed sample, a Zipkin export) are untouched.
func TestUnknownOutcomes(t *testing.T) {
	for _, c := range []struct {
		path    string
		opt     ingest.Options
		unknown bool
	}{
		{"../testdata/real/nezha-trainticket/fault-12_06_trace.csv", ingest.Options{Map: nezhaMap}, true},
		{"../testdata/real/nezha-online-boutique/2022-08-23-12_02-subset_trace.csv", ingest.Options{Map: nezhaMap}, true},
		{"../testdata/real/otel-proto/trace.json", ingest.Options{}, true},
		{"../testdata/real/zipkin/smartthings-oauth-authorization.json", ingest.Options{}, false},
		{seedDir + "/recorded-under-A.jsonl", ingest.Options{}, false},
		{seedDir + "/spans.jsonl", ingest.Options{}, false},
	} {
		t.Run(c.path, func(t *testing.T) {
			l := analyse(readSpansLoose(t, c.path, c.opt), nil)
			rq := l.rep.Requests
			warned := false
			for _, w := range l.rep.Warnings {
				warned = warned || w.Code == analyze.WarnUnknownOutcomes
			}
			if rq.SucceededInferred != c.unknown || warned != c.unknown {
				t.Fatalf("succeeded_inferred %v, warned %v, want %v", rq.SucceededInferred, warned, c.unknown)
			}
			if rq.Succeeded == 0 {
				t.Fatal("the test needs requests counted as succeeded")
			}
			p, err := policy.Parse("rec.yaml", l.rec.Marshal())
			if err != nil {
				t.Fatal(err)
			}
			for _, optimistic := range []bool{false, true} {
				cr := Run(l.rep, l.reqs, []*policy.Policy{p}, Options{Gates: Gates{MinSuccess: 0.5, Optimistic: optimistic}})
				g := cr.Results[0].Gates[0]
				want := !c.unknown || optimistic
				if g.Pass != want {
					t.Errorf("optimistic %v: min-success passes %v (%s), want %v", optimistic, g.Pass, g.Got, want)
				}
				if c.unknown && !optimistic && !strings.Contains(g.Got, "no request's outcome") {
					t.Errorf("the gate does not say why: %s", g.Got)
				}
			}
		})
	}
}
