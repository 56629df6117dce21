package enforce_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/enforce"
	"github.com/tailscope/tailscope/policy"
)

// A budget already spent before the first attempt starts runs the
// function no time, and the give-up says so: no "ran out after 1 attempt"
// for an attempt that never ran.
func TestBudgetSpentBeforeTheFirstAttempt(t *testing.T) {
	p, err := policy.Parse("p.yaml", []byte("budget: 1ns\ndefault:\n  timeout: 1s\n  retries: 2\n  budget_aware: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	pol := enforce.New(p, enforce.Options{})
	ctx, done := pol.Request(context.Background())
	defer done()
	runs := 0
	err = pol.Call(ctx, "db", func(context.Context) error { runs++; return nil })
	var d *enforce.Degraded
	if !errors.As(err, &d) {
		t.Fatalf("err %v: want a *Degraded", err)
	}
	// The attempt is counted as the replay counts it; it ran nothing.
	if runs != 0 || d.Ran != 0 {
		t.Errorf("ran %d times, Degraded.Ran %d: want 0 and 0", runs, d.Ran)
	}
	if msg := d.Error(); strings.Contains(msg, "after 1 attempt") || !strings.Contains(msg, "before") {
		t.Errorf("Degraded says %q", msg)
	}
}
