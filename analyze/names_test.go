package analyze

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/option"
	"github.com/tailscope/tailscope/route"
	"github.com/tailscope/tailscope/span"
)

// angled names each option <Name>, so that a test sees a message ask the
// caller's Names for the setting rather than spell a flag.
func angled(o option.Option) string { return "<" + o.String() + ">" }

// TestMessagesNameOptions: the analysis names the settings its messages
// speak of by the caller's Names (architecture III, item 6), and by the
// options' own names without one.
func TestMessagesNameOptions(t *testing.T) {
	e := &HopLimitError{Limit: 5, HopBy: []string{"name", "service"}}
	if got, want := e.Error(), "the most MaxHops allows: group the spans by a bounded name with HopBy name or HopBy service, narrow them with Hops, or raise MaxHops"; !strings.Contains(got, want) {
		t.Errorf("without Names: %q, want it to hold %q", got, want)
	}
	e.HopBy, e.Names = nil, angled
	if got, want := e.Error(), "with <HopBy> (service+name, or attr:KEY of a route template), narrow them with <Hops>, or raise <MaxHops>"; !strings.Contains(got, want) {
		t.Errorf("with Names: %q, want it to hold %q", got, want)
	}
	a := NewAccum(0)
	for i := range 3 {
		sp := boundSpan(fmt.Sprint(i), "a", "", fmt.Sprint("h", i), i)
		a.Add(&sp)
	}
	if err := a.OverHopLimit(2, angled); err == nil || !strings.Contains(err.Error(), "the most <MaxHops> allows") {
		t.Errorf("OverHopLimit: %v", err)
	}

	var es []route.Endpoint
	for i := range MaxRoutesPerService + 1 {
		es = append(es, route.Endpoint{Hop: "h", Caller: "web", Service: "users", Method: "GET", Route: fmt.Sprintf("/users/%d", i), Calls: 1})
	}
	if out := boundRoutes(es, angled); len(out) != 1 || !strings.HasSuffix(out[0].Unmapped, "(<HopBy> attr:http.route)") {
		t.Errorf("concrete paths folded: %+v", out)
	}

	spans := []span.Span{{TraceID: "t", SpanID: "a", Hop: "h", Start: 1, Duration: 1e6}}
	reqs, probs := span.Assemble(spans)
	rep := Measure(spans, reqs, probs, Options{Names: angled})
	found := false
	for _, w := range rep.Warnings {
		if w.Code == WarnUnknownOutcomes {
			found = true
			if !strings.Contains(w.Message, "check's <MinSuccess> counts no request as a success unless <Optimistic>") {
				t.Errorf("%s: %s", w.Code, w.Message)
			}
		}
	}
	if !found {
		t.Errorf("no %s warning: %+v", WarnUnknownOutcomes, rep.Warnings)
	}
}
