package analyze

import (
	"bytes"
	"testing"

	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/span"
)

// analyse runs the analysis the way the command does, without the
// recommendation (package recommend).
func analyse(spans []span.Span, opt Options) *Report {
	reqs, probs := span.Assemble(spans)
	return analysed(spans, reqs, probs, opt)
}

// analysed is everything the analysis adds to a report, in the order
// package recommend runs it with the recommendation left out: Measure,
// then where the tail comes from and the endpoints.
func analysed(spans []span.Span, reqs []*span.Request, probs span.Problems, opt Options) *Report {
	rep := Measure(spans, reqs, probs, opt)
	WhereTailComesFrom(rep, reqs)
	MapEndpoints(rep, reqs)
	return rep
}

func hopOf(rep *Report, name string) *Hop {
	for i := range rep.Hops {
		if rep.Hops[i].Hop == name {
			return &rep.Hops[i]
		}
	}
	return nil
}

// measured is an Accum's analysis without the recommendation, as package
// recommend runs it: Measure, where the tail comes from, the endpoints,
// then Complete.
func measured(a *Accum, opt Options) *Report {
	reqs, probs := span.Assemble(a.Spans())
	rep := a.Measure(reqs, probs, opt)
	WhereTailComesFrom(rep, reqs)
	MapEndpoints(rep, reqs)
	a.Complete(rep, reqs)
	return rep
}

func loadBytes(t *testing.T, data []byte) ([]span.Span, []*span.Request, span.Problems) {
	t.Helper()
	var spans []span.Span
	if _, err := ingest.ReadStream("t.jsonl", bytes.NewReader(data), ingest.Options{}, ingest.SinkFunc(func(s *span.Span) { spans = append(spans, *s) })); err != nil {
		t.Fatal(err)
	}
	reqs, probs := span.Assemble(spans)
	return spans, reqs, probs
}
