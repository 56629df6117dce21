package recommend

import (
	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/span"
)

// analyse runs the analysis and the recommendation the way the command
// does.
func analyse(spans []span.Span, opt analyze.Options) (*analyze.Report, *policy.Policy) {
	reqs, probs := span.Assemble(spans)
	return Run(spans, reqs, probs, opt)
}

func hopOf(rep *analyze.Report, name string) *analyze.Hop {
	for i := range rep.Hops {
		if rep.Hops[i].Hop == name {
			return &rep.Hops[i]
		}
	}
	return nil
}
