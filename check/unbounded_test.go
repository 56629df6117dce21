package check

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/recommend"
	"github.com/tailscope/tailscope/span"
)

// A policy cannot list every id: the hops whose names differ only in ids
// (analyze's unbounded-hops) that fall back to default are one info
// finding, not a warning per id; a named hop missing from the policy is
// still warned about on its own.
func TestUnconfiguredIDHopsOneFinding(t *testing.T) {
	var spans []span.Span
	t0 := int64(1_767_225_600) * 1e9
	for i := range 1200 {
		id := fmt.Sprintf("t%05d", i)
		at := t0 + int64(i)*1e9
		spans = append(spans, span.Span{TraceID: id, SpanID: id + "r", Service: "gw", Name: "gw", Hop: "gateway", Kind: "server", Start: at, Duration: 300e6, Weight: 1})
		for k := range 3 {
			hop := fmt.Sprintf("GET /users/%d", 10000+(i*3+k)%900)
			switch {
			case k == 2 && i%2 == 0:
				hop = "login"
			case k == 1 && i%3 == 0:
				hop = "search"
			}
			spans = append(spans, span.Span{TraceID: id, SpanID: fmt.Sprintf("%s%d", id, k), ParentID: id + "r", Service: "api", Name: hop, Hop: hop,
				Kind: "client", Start: at + int64(k)*90e6, Duration: int64(20+(i*k)%60) * 1e6, Weight: 1})
		}
	}
	reqs, probs := span.Assemble(spans)
	rep, p := recommend.Run(spans, reqs, probs, analyze.Options{})
	if rep.UnboundedHops() == nil {
		t.Fatalf("no %s over %d hops", analyze.WarnUnboundedHops, len(rep.Hops))
	}
	delete(p.Hops, "search") // a named hop the policy forgot
	per, grouped := 0, 0
	for _, f := range Lint(rep, reqs, p) {
		if f.Code != CodeUnconfiguredHop {
			continue
		}
		switch {
		case f.Hop == "search":
			per++
		case f.Hop == "" && strings.Contains(f.Message, analyze.WarnUnboundedHops):
			grouped++
		default:
			t.Errorf("a finding of its own for %q: %s", f.Hop, f.Message)
		}
	}
	if per != 1 || grouped != 1 {
		t.Errorf("%d findings for search, %d grouped for the id-laden hops; want 1 and 1", per, grouped)
	}
}
