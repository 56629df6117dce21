package recommend

import (
	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/policy"
)

// collapseIDHops leaves out of the recommended policy the id-laden hops
// whose recommendation rests on too few successes (keep), when the
// default already covers them (no retries, no hedge, a timeout no longer
// than the default's): otherwise a policy file lists every id ever seen,
// grows with the logs, and its entries say nothing the default does not.
// The replay that checks the policy runs after this, so the request-level
// target still holds; hops measured well enough stay listed.
func collapseIDHops(rep *analyze.Report, p *policy.Policy) {
	u := rep.UnboundedHops()
	if u == nil {
		return
	}
	for i := range rep.Hops {
		h := &rep.Hops[i]
		hp, ok := p.Hops[h.Hop]
		if !ok || !u.IDLaden(h.Hop) || h.Recommendation.Action != analyze.ActionKeep ||
			hp.Retries > 0 || hp.Hedge.Delay > 0 || hp.Timeout > p.Default.Timeout {
			continue
		}
		delete(p.Hops, h.Hop)
		u.Unlisted++
		h.Recommendation.Basis += "; not listed in the policy: the hop names carry ids (" + analyze.WarnUnboundedHops + "), and the default covers it"
	}
}
