package policy

import "testing"

// TestThrottle: gRPC's retryThrottling per hop — a full bucket of
// MaxTokens, a failure takes one, a success gives back TokenRatio within
// MaxTokens, retries allowed while more than half is left; a hop without
// a budget and a nil Throttle are never throttled.
func TestThrottle(t *testing.T) {
	th := NewThrottle(map[string]RetryBudget{"a": {MaxTokens: 4, TokenRatio: 0.5}, "zero": {MaxTokens: 0}})
	steps := []struct {
		ok    bool
		allow bool // after the step
	}{
		{false, true},  // 3 > 2
		{false, false}, // 2, not more than half
		{true, true},   // 2.5
		{true, true},   // 3
		{false, false}, // 2, not more than half
		{false, false}, // 1
		{false, false}, // 0
		{false, false}, // stays 0
		{true, false},  // 0.5
	}
	if !th.Allows("a") {
		t.Fatal("a full bucket throttles")
	}
	for i, s := range steps {
		th.Count("a", s.ok)
		if got := th.Allows("a"); got != s.allow {
			t.Errorf("step %d (ok %v): allows %v, want %v (tokens %v)", i, s.ok, got, s.allow, th.tokens["a"])
		}
	}
	c := th.Clone()
	for range 10 {
		c.Count("a", true)
	}
	if th.tokens["a"] != 0.5 || c.tokens["a"] != 4 {
		t.Errorf("clone shares tokens: original %v, clone %v (want 0.5 and the 4 cap)", th.tokens["a"], c.tokens["a"])
	}
	for range 10 {
		th.Count("zero", false)
		th.Count("none", false)
	}
	if !th.Allows("zero") || !th.Allows("none") {
		t.Error("a hop without a budget is throttled")
	}
	var nilT *Throttle
	nilT.Count("a", false)
	if !nilT.Allows("a") || nilT.Clone() != nil {
		t.Error("a nil Throttle throttles")
	}
}
