package check

import (
	"testing"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/policy"
)

// In a real Online Boutique minute some requests are the frontend's root
// span alone (no child span): the trace then has no root with children,
// and its one span is a top-level call. The analysis still calls the hop
// the root (most of its spans are roots), so check never reports it as an
// unconfigured hop, neither for the recommended policy nor for one that
// lists every other hop.
func TestRootAloneIsNotUnconfigured(t *testing.T) {
	spans := readSpansLoose(t, "../testdata/real/nezha-online-boutique/2022-08-23-12_02-subset_trace.csv", ingest.Options{Map: nezhaMap})
	l := analyse(spans, nil)
	const root = "frontend hipstershop.Frontend/Recv."
	alone := 0
	for _, r := range l.reqs {
		if r.Root == nil && len(r.Calls) == 1 && r.Calls[0].Hop == root {
			alone++
		}
	}
	var h *analyze.Hop
	for i := range l.rep.Hops {
		if l.rep.Hops[i].Hop == root {
			h = &l.rep.Hops[i]
		}
	}
	if alone == 0 || h == nil || h.Role != analyze.RoleRoot {
		t.Fatalf("the fixture does not have the shape: %d lone roots, hop %+v", alone, h)
	}
	rec, err := policy.Parse("recommended.yaml", l.rec.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	// A policy that lists every hop but the root, at the recommended
	// values: the root falls back to default, and that is not a finding.
	listed := &policy.Policy{Name: "listed", Budget: rec.Budget, Default: rec.Default, Hops: map[string]policy.Hop{}}
	for _, x := range l.rep.Hops {
		if x.Hop != root {
			listed.Hops[x.Hop] = rec.For(x.Hop)
		}
	}
	for _, p := range []*policy.Policy{rec, listed} {
		for _, f := range Lint(l.rep, l.reqs, p) {
			if f.Code == CodeUnconfiguredHop && f.Hop == root {
				t.Errorf("%s: the root is linted as unconfigured: %s", p.Name, f.Message)
			}
		}
	}
}
