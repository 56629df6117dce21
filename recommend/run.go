// Package recommend is the recommendation engine (docs/DESIGN.md §5, §11):
// from the statistics package analyze measured and the requests package
// span rebuilt, it recommends each hop's timeout, retries, hedge, retry
// budget and ejection, raises the timeouts until the policy replayed on the
// logs (package replay) meets the request-level false-timeout target,
// validates the policy on requests held out of its fit, and predicts its
// effect. It fills the report's recommendation fields and returns the
// policy.
//
// It sits above analyze and replay and uses both: a recommendation is
// statistics checked by replay, and neither of those needs to know what
// is recommended, so analyze stays statistics and streaming state and
// replay a simulator of any policy.
package recommend

import (
	"fmt"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/internal/par"
	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/span"
)

// Run analyses spans and recommends a policy: the report, with its
// recommendation filled in, and the recommended policy, with each hop's
// basis as its comment (what `tailscope recommend` writes). reqs and probs
// come from span.Assemble(spans).
func Run(spans []span.Span, reqs []*span.Request, probs span.Problems, opt analyze.Options) (*analyze.Report, *policy.Policy) {
	opt = opt.WithDefaults()
	rep := analyze.Measure(spans, reqs, probs, opt)
	return rep, complete(rep, reqs, opt)
}

// RunAccum is Run over what an analyze.Accum accumulated; reqs and probs
// come from span.Assemble(a.Spans()). When the logs were sampled, the hops
// no sampled trace reached are left to the policy's default.
func RunAccum(a *analyze.Accum, reqs []*span.Request, probs span.Problems, opt analyze.Options) (*analyze.Report, *policy.Policy) {
	opt = opt.WithDefaults()
	rep := a.Measure(reqs, probs, opt)
	p := complete(rep, reqs, opt)
	// One pass over the hops, not one per name: logs with ids in their
	// hop names hold 100k hops, nearly all of them outside the sample.
	outside := map[string]bool{}
	for _, name := range a.Complete(rep, reqs) {
		outside[name] = true
	}
	for i := range rep.Hops {
		if h := &rep.Hops[i]; outside[h.Hop] {
			h.Recommendation = analyze.Recommendation{Action: analyze.ActionKeep, Basis: "not in the trace sample: covered by the default"}
		}
	}
	return rep, p
}

// complete recommends on a measured report and adds what comes after the
// recommendation: the unbounded-hops warning (which counts the hops the
// policy left to its default), the policy in the report's form with its
// safety (held out and predicted), the predicted effect, where the tail
// comes from, ejections and endpoints.
func complete(rep *analyze.Report, reqs []*span.Request, opt analyze.Options) *policy.Policy {
	// The held-out validation fits its own policy on the earlier requests
	// and reads nothing the recommendation writes: it runs beside it, on
	// the cores the recommendation's sequential steps (the replays that
	// raise timeouts) leave idle.
	var (
		rec         *policy.Policy
		safety      *analyze.Safety
		last        *lastReplay
		heldOut     *analyze.HeldOut
		heldOutNote string
		br          *budgetRule
	)
	par.Do(func() {
		heldOut, heldOutNote = holdOut(rep, reqs, opt, analyze.FalseTimeoutTarget(opt))
	}, func() {
		rec, safety, last, br = recommendPolicy(rep, reqs, opt)
	})
	if heldOut != nil && heldOut.Requests > 0 && !heldOut.Met {
		how := "and no scale of its timeouts up to ×4 lost fewer"
		if heldOut.Scale > 1 {
			how = "even with every timeout ×" + units.Decimal(heldOut.Scale, 2) + ", which this policy carries"
		}
		rep.Warnings = append(rep.Warnings, analyze.Warning{Code: "held-out-target-missed",
			Message: fmt.Sprintf("fitted on the requests before %s and replayed on the %d later that succeeded, the policy lost %d to drift (outside the incidents the logs name), more than the %s target allows, %s: the recommended policy is not certified for the next window",
				heldOut.FittedUntil, heldOut.Requests, heldOut.DriftLost, units.Percent(analyze.FalseTimeoutTarget(opt), 3), how)})
	}
	if heldOut != nil && heldOut.Scale > 1 {
		safety = carryScale(rep, reqs, rec, br, heldOut.Scale, opt, last, safety) // drift.go
	}
	if u := rep.UnboundedHops(); u != nil {
		rep.Warnings = append(rep.Warnings, u.Warning(opt.Names))
	}
	incidentBasis(rep, rec) // drift.go
	rep.RecommendedPolicy = DocOf(rec)
	safety.HeldOut, safety.HeldOutNote = heldOut, heldOutNote
	rep.RecommendedPolicy.Safety = safety
	// The predicted effect only replays reqs under the recommendation, or
	// reuses the engine's last replay (it reads the policy, writes nothing
	// shared); the tail's sources only read reqs and write the report's
	// hops and ranking: run them at once. Ejections come after both, as
	// they read the gaps and write the policy's comments.
	// The policy in force is replayed whole: the analysis reads only its
	// timeouts (analyze.InForce), a replay all of it.
	inForce, _ := opt.PolicyInForce.(*policy.Policy)
	par.Do(func() {
		rep.PredictedEffect = predictEffect(reqs, inForce, rec, last)
	}, func() {
		analyze.WhereTailComesFrom(rep, reqs)
	})
	recommendEjections(rep, rec)
	analyze.MapEndpoints(rep, reqs)
	return rec
}

// FromAccum is RunAccum on the requests assembled from a.Spans().
func FromAccum(a *analyze.Accum, opt analyze.Options) (*analyze.Report, *policy.Policy) {
	reqs, probs := span.Assemble(a.Spans())
	return RunAccum(a, reqs, probs, opt)
}
