package recommend

import (
	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/policy"
)

// recommendEjections adds the eject advice to the hops whose tail or
// failures concentrate on one instance, and to the calls into a callee hop
// that does (through the client/server pairs, Hop.Gap), and records them in
// the policy for --emit envoy. The numbers of the recommendation do not
// change: the timeout and retries stay what the logs need until the
// instance is ejected.
func recommendEjections(rep *analyze.Report, p *policy.Policy) {
	own := map[string]*analyze.Eject{}
	for i := range rep.Hops {
		h := &rep.Hops[i]
		if e := h.Ejection(); e != nil {
			own[h.Hop] = e
		}
	}
	if len(own) == 0 {
		return
	}
	for i := range rep.Hops {
		h := &rep.Hops[i]
		e := own[h.Hop]
		if e == nil && h.Gap != nil && own[h.Gap.ServerHop] != nil {
			c := *own[h.Gap.ServerHop]
			c.From = h.Gap.ServerHop
			e = &c
		}
		if e == nil {
			continue
		}
		h.Recommendation.Eject = e
		h.Recommendation.Basis += "; " + e.Sentence()
		if _, ok := p.Hops[h.Hop]; ok {
			p.Comments[h.Hop] = h.Recommendation.Basis
			if p.Ejections == nil {
				p.Ejections = map[string]policy.Ejection{}
			}
			p.Ejections[h.Hop] = policy.Ejection{Key: e.Key, Value: e.Value, Of: e.Of, Lift: e.Lift, Share: e.Share, Instances: e.Instances}
		}
	}
}
