package analyze

import (
	"github.com/tailscope/tailscope/outcome"
	"github.com/tailscope/tailscope/span"
)

// The recommendation as data: the values of a hop's role and of its
// recommendation's action, the request-level target the options ask for,
// and the report's types that package recommend fills (the replay check,
// the predicted effect). The engine that decides them is package recommend,
// which runs after the analysis; the roles are decided here, from the call
// trees, since they are what the logs say of each hop.

// Recommendation actions. Only a hop whose role is a call gets a timeout
// of its own; the others say why not.
const (
	// ActionSet is a timeout taken from the hop's measured time to success.
	ActionSet = "set"
	// ActionObserveFirst is a canary timeout: the tail is censored by the
	// timeout in force, so it cannot be measured yet.
	ActionObserveFirst = "observe-first"
	// ActionKeep is a hop with too few successful attempts to measure: the
	// timeout in force is kept (or, when none is known, the slowest
	// success × margin), never lowered below an observed success.
	ActionKeep = "keep"
	// ActionCallee marks a hop whose spans are the callee's own record
	// (server, consumer): the caller's timeout bounds it, so the policy
	// sets nothing for it.
	ActionCallee = "callee-side"
	// ActionInProcess marks work inside one service (internal spans, or a
	// child in its parent's service with no remote child): there is no
	// call to time out; the calls above it bound it.
	ActionInProcess = "in-process"
	// ActionRequest marks the trace root: the request itself, bounded by
	// the policy's budget, not by a hop timeout.
	ActionRequest = "request"
)

// Roles of a hop (Hop.Role).
const (
	RoleCall      = "call"
	RoleCallee    = "callee"
	RoleInProcess = "in-process"
	RoleRoot      = "root"
)

// MinSamplesRecommend is the number of time-to-success samples below which
// no timeout is derived from the data.
const MinSamplesRecommend = 20

// DefaultFalseTimeouts is the share of the requests that succeeded as
// logged which a recommendation may fail when replayed on the same logs
// (0.1%): the false-timeout rate a team accepts, chosen per request, not
// per hop.
const DefaultFalseTimeouts = 0.001

// CodeOutOfSample is the warning (and check's lint) that a policy's
// predicted false-timeout share on new traffic is above the target.
const CodeOutOfSample = "false-timeouts-out-of-sample"

// FalseTimeoutTarget is the request-level target opt asks for.
func FalseTimeoutTarget(opt Options) float64 {
	switch {
	case opt.FalseTimeouts < 0:
		return 0
	case opt.FalseTimeouts == 0:
		return DefaultFalseTimeouts
	}
	return opt.FalseTimeouts
}

// RecommendationCheck is the recommended policy replayed on the logs it was
// derived from: how many of the requests that succeeded as logged it
// fails, against the target, and which timeouts replay had to raise.
type RecommendationCheck struct {
	// Target is the share of logged successes the policy may fail.
	Target float64 `json:"target"`
	// CallsPerRequest is the mean number of calls with a timeout that a
	// request makes: per-hop cuts compound over them.
	CallsPerRequest float64 `json:"calls_per_request"`
	// Percentile is the per-call time-to-success percentile that the
	// target implies (at least the requested one).
	Percentile   float64  `json:"percentile"`
	LoggedOK     int      `json:"logged_successes"`
	Failed       int      `json:"failed"`
	Undetermined int      `json:"undetermined"`
	Share        float64  `json:"share"`
	Met          bool     `json:"met"`
	Rounds       int      `json:"rounds"`
	RaisedHops   []string `json:"raised_hops"`
}

// roleOfKind is a hop's role when no trace shows its place: by span kind.
func roleOfKind(kind string) string {
	switch kind {
	case "server", "consumer":
		return RoleCallee
	case "internal":
		return RoleInProcess
	}
	return RoleCall
}

// hopRoles decides each hop's role from the call trees: the role most of
// its calls have (package span decides a call's role from its kind or the
// trace's shape); a hop whose spans are mostly trace roots is the root.
func hopRoles(reqs []*span.Request) map[string]string {
	count := map[string]*[4]int{}
	bump := func(hop string, i int) {
		c := count[hop]
		if c == nil {
			c = new([4]int)
			count[hop] = c
		}
		c[i]++
	}
	for _, r := range reqs {
		if r.Root != nil {
			bump(r.Root.Hop, 3)
		}
		EachCall(r.Calls, func(c *span.Call) { bump(c.Hop, int(c.Role)) })
	}
	names := [4]string{RoleCall, RoleCallee, RoleInProcess, RoleRoot}
	out := make(map[string]string, len(count))
	for hop, c := range count {
		best := 0
		for i := 1; i < 4; i++ {
			if c[i] > c[best] {
				best = i
			}
		}
		out[hop] = names[best]
	}
	return out
}

// EachCall visits every call under cs, iteratively.
func EachCall(cs []*span.Call, f func(*span.Call)) {
	stack := [][]*span.Call{cs}
	for len(stack) > 0 {
		level := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, c := range level {
			f(c)
			for _, a := range c.Attempts {
				if len(a.Calls) > 0 {
					stack = append(stack, a.Calls)
				}
			}
		}
	}
}

// Effect is one column of the predicted-effect table: the requests of the
// logs under one policy.
type Effect struct {
	// Policy is "as logged", "in force" or "recommended".
	Policy string `json:"policy"`
	outcome.Summary
}

// HeldOutMode says whether to hold part of the logs out.
type HeldOutMode int

const (
	// HeldOutAuto holds out when the logs have enough requests.
	HeldOutAuto HeldOutMode = iota
	// HeldOutOff never holds out (a second fit costs a second analysis).
	HeldOutOff
)
