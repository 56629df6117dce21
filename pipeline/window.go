package pipeline

import (
	"time"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/recommend"
	"github.com/tailscope/tailscope/span"
)

// CompareWindows compares the last d of the logs with the d before it,
// each window analysed on its own spans (those kept whole); label is d as
// the user wrote it, for the windows' labels ("the last 10m"). ok is false
// when either window holds no request: the logs cover less than twice d.
func (l *Logs) CompareWindows(d time.Duration, label string, opt analyze.Options) (c *analyze.Comparison, ok bool) {
	before, after, _, _, _ := analyze.SplitByTime(l.Spans, d)
	if len(after) == 0 || len(before) == 0 {
		return nil, false
	}
	window := func(spans []span.Span) *analyze.Report {
		reqs, probs := span.Assemble(spans)
		rep, _ := recommend.Run(spans, reqs, probs, opt)
		return rep
	}
	return analyze.Compare(window(before), window(after), "the "+label+" before", "the last "+label), true
}
