package analyze

import (
	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/replay"
	"github.com/tailscope/tailscope/span"
)

// Effect is one column of the predicted-effect table: the requests of the
// logs under one policy.
type Effect struct {
	// Policy is "as logged", "in force" or "recommended".
	Policy string `json:"policy"`
	replay.Summary
}

// predictEffect replays the requests under the recommendation, beside the
// policy in force when it is known, or beside the outcomes as logged.
func predictEffect(reqs []*span.Request, inForce, rec *policy.Policy) []Effect {
	var out []Effect
	if inForce != nil {
		out = append(out, Effect{Policy: "in force", Summary: replay.Run(reqs, inForce, replay.Options{}).Summary()})
	} else {
		out = append(out, Effect{Policy: "as logged", Summary: replay.Observed(reqs).Summary()})
	}
	out = append(out, Effect{Policy: "recommended", Summary: replay.Run(reqs, rec, replay.Options{}).Summary()})
	return out
}
