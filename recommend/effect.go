package recommend

import (
	"maps"
	"time"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/replay"
	"github.com/tailscope/tailscope/span"
)

// predictEffect replays the requests under the recommendation, beside the
// policy in force when it is known, or beside the outcomes as logged.
// last is the engine's last replay of the same requests: when rec has not
// changed since, its result is the recommendation's column.
func predictEffect(reqs []*span.Request, inForce, rec *policy.Policy, last *lastReplay) []analyze.Effect {
	var out []analyze.Effect
	if inForce != nil {
		out = append(out, analyze.Effect{Policy: "in force", Summary: replay.Run(reqs, inForce, replay.Options{}).Summary()})
	} else {
		out = append(out, analyze.Effect{Policy: "as logged", Summary: replay.Observed(reqs).Summary()})
	}
	res := last.of(rec)
	if res == nil {
		res = replay.Run(reqs, rec, replay.Options{})
	}
	out = append(out, analyze.Effect{Policy: "recommended", Summary: res.Summary()})
	return out
}

// lastReplay is a replay of the requests under a policy, with what of the
// policy a replay reads (budget, default, hops) as it was then. The engine
// replays the logs under its policy last, and the predicted effect replays
// them under the final policy again: unless the policy changed in between
// (a budget cap, durations clamped), the result is the same, so it is kept
// rather than computed twice.
type lastReplay struct {
	budget time.Duration
	def    policy.Hop
	hops   map[string]policy.Hop
	res    *replay.Result
}

// replayAll replays reqs under p, as replay.Run with no options, and keeps
// the result in last for the predicted effect.
func replayAll(last *lastReplay, reqs []*span.Request, p *policy.Policy) *replay.Result {
	res := replay.Run(reqs, p, replay.Options{})
	*last = lastReplay{budget: p.Budget, def: p.Default, hops: maps.Clone(p.Hops), res: res}
	return res
}

// of is the kept result when p reads as the policy it was replayed under,
// nil otherwise.
func (l *lastReplay) of(p *policy.Policy) *replay.Result {
	if l == nil || l.budget != p.Budget || l.def != p.Default || !maps.Equal(l.hops, p.Hops) {
		return nil
	}
	return l.res
}
