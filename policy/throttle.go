package policy

import "maps"

// Throttle is gRPC's retryThrottling, per hop: a bucket of tokens that
// starts full at MaxTokens; a failed attempt takes one, a successful one
// gives back TokenRatio (within 0 and MaxTokens), and a retry or a hedge
// may be sent only while more than half the tokens are left. A hop without
// a budget (or with MaxTokens 0) is not throttled.
//
// It is the one implementation of the rule: the replay (package replay)
// carries a Throttle from request to request in start order, and the
// runtime (package enforce) shares one, under its lock, among the
// requests of a process, so that what check predicts is what runs. A
// Throttle is not safe for concurrent use; a nil one allows everything.
type Throttle struct {
	budget map[string]RetryBudget
	tokens map[string]float64
}

// NewThrottle returns a full bucket per hop of budget.
func NewThrottle(budget map[string]RetryBudget) *Throttle {
	return &Throttle{budget: budget, tokens: map[string]float64{}}
}

// level is hop's tokens and budget; ok is false when hop is not throttled.
func (t *Throttle) level(hop string) (float64, RetryBudget, bool) {
	rb, has := t.budget[hop]
	if !has || rb.MaxTokens <= 0 {
		return 0, rb, false
	}
	v, seen := t.tokens[hop]
	if !seen {
		v = float64(rb.MaxTokens)
	}
	return v, rb, true
}

// Allows reports whether hop may send a retry or a hedge now.
func (t *Throttle) Allows(hop string) bool {
	if t == nil {
		return true
	}
	v, rb, ok := t.level(hop)
	return !ok || v > float64(rb.MaxTokens)/2
}

// Count adds an attempt's outcome to hop's bucket.
func (t *Throttle) Count(hop string, success bool) {
	if t == nil {
		return
	}
	v, rb, ok := t.level(hop)
	if !ok {
		return
	}
	if success {
		v = min(float64(rb.MaxTokens), v+rb.TokenRatio)
	} else {
		v = max(0, v-1)
	}
	t.tokens[hop] = v
}

// Clone is a copy of t whose buckets change apart from t's (nil for nil).
func (t *Throttle) Clone() *Throttle {
	if t == nil {
		return nil
	}
	return &Throttle{budget: t.budget, tokens: maps.Clone(t.tokens)}
}
