package recommend

import (
	"fmt"
	"math"
	"time"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/replay"
	"github.com/tailscope/tailscope/span"
)

// Held-out validation: the recommendation is fitted again on the earlier
// part of the logs (by request start) and replayed on the later part, which
// the fit never saw. It measures what the in-sample replay cannot: a policy
// fitted to one window meeting the next, as a rollout does. The policy
// recommended is still the one fitted on everything.

// HeldOutShare is the share of the requests, the latest by start, held out.
const HeldOutShare = 1.0 / 3

// MinHeldOut is the fewest requests worth holding out: fewer cannot show
// a loss rate anyone should act on, and leave the fit even fewer.
const MinHeldOut = 30

// holdOut fits on the earlier requests and replays the later ones; nil
// and a note saying why when it did not run.
func holdOut(reqs []*span.Request, opt analyze.Options) (*analyze.HeldOut, string) {
	if opt.HeldOut == analyze.HeldOutOff {
		return nil, "held-out validation was turned off"
	}
	n := len(reqs)
	cut := n - int(float64(n)*HeldOutShare)
	if n-cut < MinHeldOut {
		return nil, fmt.Sprintf("%s too few to hold any out: held-out validation replays the latest third and needs at least %d there (%d requests)",
			units.Count(n, "request is", "requests are"), MinHeldOut, int(math.Ceil(MinHeldOut/HeldOutShare)))
	}
	// Requests are sorted by start (span.Assemble); requests that start
	// at the same instant as the first held-out one stay on one side.
	fit, test := reqs[:cut], reqs[cut:]
	res := replay.Run(test, fitted(fit, opt), replay.Options{})
	h := &analyze.HeldOut{FittedRequests: len(fit), FittedUntil: time.Unix(0, test[0].Start).UTC().Format(time.RFC3339Nano)}
	for _, o := range res.Outcomes {
		if !o.LoggedOK {
			continue
		}
		h.Requests++
		if !o.OK && !o.Undetermined {
			h.Lost++
		}
	}
	if h.Requests > 0 {
		h.Share = units.Round(float64(h.Lost)/float64(h.Requests), 4)
	}
	return h, ""
}

// fitted is the policy recommended on reqs alone, as the held-out
// validation fits it: the statistics a recommendation reads, and the
// recommendation, nothing else.
func fitted(reqs []*span.Request, opt analyze.Options) *policy.Policy {
	var spans []span.Span
	for _, r := range reqs {
		if r.Root != nil {
			spans = append(spans, *r.Root)
		}
		analyze.EachCall(r.Calls, func(c *span.Call) {
			for _, a := range c.Attempts {
				spans = append(spans, *a.Span)
			}
		})
	}
	p, _, _ := recommendPolicy(analyze.MeasureFit(spans, reqs, opt), reqs, opt)
	return p
}
