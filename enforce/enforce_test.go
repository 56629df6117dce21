package enforce_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tailscope/tailscope/enforce"
	"github.com/tailscope/tailscope/policy"
)

// hang is an attempt that never answers: it waits for its context.
func hang(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

// after is an attempt that answers with err after d.
func after(d time.Duration, err error) func(context.Context) error {
	return func(ctx context.Context) error {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func onePolicy(budget time.Duration, h policy.Hop) *policy.Policy {
	return &policy.Policy{Name: "test", Budget: budget, Default: h}
}

// TestBudgetAwareStartsTwo: with a budget of 8s, 3s attempts, 200ms
// backoff and 2 retries, a hop that never answers gets two attempts: after
// the second (at 6.2s) 1.8s are left, less than the backoff and a whole
// attempt, so the third is not sent and the caller hears at once. Without
// budget_aware the third is sent and the budget cuts it at 8s.
func TestBudgetAwareStartsTwo(t *testing.T) {
	for _, tc := range []struct {
		aware    bool
		attempts int
		elapsed  time.Duration
	}{
		{true, 2, 6200 * time.Millisecond},
		{false, 3, 8 * time.Second},
	} {
		synctest.Test(t, func(t *testing.T) {
			hop := policy.Hop{Timeout: 3 * time.Second, Retries: 2, BudgetAware: tc.aware,
				Backoff: policy.Backoff{Base: 200 * time.Millisecond, Max: 200 * time.Millisecond}}
			var counts enforce.Counts
			pol := enforce.New(onePolicy(8*time.Second, hop), enforce.Options{Observe: counts.Observe})
			ctx, done := pol.Request(context.Background())
			defer done()
			var started atomic.Int32
			err := pol.Call(ctx, "retrieve", func(ctx context.Context) error {
				started.Add(1)
				return hang(ctx)
			})
			var d *enforce.Degraded
			if !errors.As(err, &d) {
				t.Fatalf("budget_aware %v: got %v, want a *Degraded", tc.aware, err)
			}
			if int(started.Load()) != tc.attempts || d.Attempts != tc.attempts || d.Elapsed != tc.elapsed || d.Reason != enforce.ReasonBudget {
				t.Errorf("budget_aware %v: %d attempts started, Degraded %+v; want %d attempts, %v, reason budget",
					tc.aware, started.Load(), d, tc.attempts, tc.elapsed)
			}
			if s := counts.Snapshot(); s.Attempts != tc.attempts || s.GiveUpsByReason[enforce.ReasonBudget] != 1 {
				t.Errorf("budget_aware %v: counted %+v", tc.aware, s)
			}
		})
	}
}

// plainWords is what Missing may hold: words, numbers, durations and
// punctuation of a sentence; no newline, no quote, no brace, no error
// text.
var plainWords = regexp.MustCompile(`^[A-Za-z0-9 .,:()'µ-]+$`)

// TestGiveUpReasons: every way a call gives up is a *Degraded with its
// reason, its attempts and its time, and a Missing in plain words that
// never carries the attempt's error text.
func TestGiveUpReasons(t *testing.T) {
	const secret = `upstream said: {"error":"index shard 7 unavailable"}` + "\n\tat Retriever.search"
	boom := errors.New(secret)
	s := time.Second
	tests := []struct {
		name      string
		budget    time.Duration
		hop       policy.Hop
		throttle  map[string]policy.RetryBudget
		fn        func(context.Context) error
		cancelAt  time.Duration // cancel the request then, 0: never
		reason    enforce.Reason
		attempts  int
		elapsed   time.Duration
		retryable bool
	}{
		{name: "every attempt ran past the hop's timeout",
			hop: policy.Hop{Timeout: s, Retries: 2}, fn: hang,
			reason: enforce.ReasonTimeout, attempts: 3, elapsed: 3 * s, retryable: true},
		{name: "one attempt, no retry, past the timeout",
			hop: policy.Hop{Timeout: s}, fn: hang,
			reason: enforce.ReasonTimeout, attempts: 1, elapsed: s, retryable: true},
		{name: "every attempt failed fast",
			hop: policy.Hop{Timeout: s, Retries: 2, Backoff: policy.Backoff{Base: 100 * time.Millisecond, Max: 400 * time.Millisecond}},
			fn:  after(10*time.Millisecond, boom),
			// 10ms, 100ms wait, 10ms, 200ms wait, 10ms
			reason: enforce.ReasonRetriesExhausted, attempts: 3, elapsed: 330 * time.Millisecond, retryable: true},
		{name: "a refusal is not retried",
			hop: policy.Hop{Timeout: s, Retries: 2}, fn: after(10*time.Millisecond, enforce.Permanent(boom)),
			reason: enforce.ReasonNotRetryable, attempts: 1, elapsed: 10 * time.Millisecond, retryable: false},
		{name: "the budget cuts the attempt",
			budget: 2500 * time.Millisecond, hop: policy.Hop{Timeout: s, Retries: 5}, fn: hang,
			reason: enforce.ReasonBudget, attempts: 3, elapsed: 2500 * time.Millisecond, retryable: true},
		{name: "a backoff that would reach the deadline is not waited out in vain",
			budget: 1500 * time.Millisecond, hop: policy.Hop{Timeout: s, Retries: 1, Backoff: policy.Backoff{Base: s, Max: s}},
			fn:     after(800*time.Millisecond, boom),
			reason: enforce.ReasonBudget, attempts: 1, elapsed: 1500 * time.Millisecond, retryable: true},
		{name: "the retry budget is spent",
			hop:      policy.Hop{Timeout: s, Retries: 5},
			throttle: map[string]policy.RetryBudget{"retrieve": {MaxTokens: 4, TokenRatio: 0.1}},
			// 4 tokens: after two failures 2 are left, not more than half.
			fn:     after(10*time.Millisecond, boom),
			reason: enforce.ReasonThrottled, attempts: 2, elapsed: 20 * time.Millisecond, retryable: true},
		{name: "the caller cancels",
			hop: policy.Hop{Timeout: s, Retries: 5}, fn: hang, cancelAt: 1500 * time.Millisecond,
			reason: enforce.ReasonCanceled, attempts: 2, elapsed: 1500 * time.Millisecond, retryable: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				pol := enforce.New(onePolicy(tc.budget, tc.hop), enforce.Options{Throttle: tc.throttle})
				ctx, done := pol.Request(context.Background())
				defer done()
				if tc.cancelAt > 0 {
					time.AfterFunc(tc.cancelAt, done)
				}
				err := pol.Call(ctx, "retrieve", tc.fn)
				var d *enforce.Degraded
				if !errors.As(err, &d) {
					t.Fatalf("got %T %v, want a *Degraded", err, err)
				}
				if d.Hop != "retrieve" || d.Reason != tc.reason || d.Attempts != tc.attempts || d.Elapsed != tc.elapsed || d.Retryable != tc.retryable {
					t.Errorf("got %+v\nwant reason %q, %d attempts, %v, retryable %v", d, tc.reason, tc.attempts, tc.elapsed, tc.retryable)
				}
				for _, text := range []string{d.Missing, d.Error()} {
					if strings.Contains(text, "shard") || strings.Contains(text, "upstream") || strings.Contains(text, "deadline exceeded") {
						t.Errorf("the error's text leaked into %q", text)
					}
				}
				if !plainWords.MatchString(d.Missing) || !strings.HasPrefix(d.Missing, "the answer from retrieve: ") {
					t.Errorf("Missing %q is not a plain sentence about retrieve", d.Missing)
				}
				if tc.fn != nil && tc.reason != enforce.ReasonTimeout && tc.reason != enforce.ReasonBudget && tc.reason != enforce.ReasonCanceled && !errors.Is(err, boom) {
					t.Errorf("the last attempt's error is not reachable for logs: %v", err)
				}
			})
		})
	}
}

// TestParts: Missing names a hop's part as the options say.
func TestParts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pol := enforce.New(onePolicy(0, policy.Hop{Timeout: time.Second}), enforce.Options{Parts: map[string]string{"retrieve": "the retrieved passages"}})
		err := pol.Call(context.Background(), "retrieve", hang)
		var d *enforce.Degraded
		if !errors.As(err, &d) || d.Missing != "the retrieved passages: it did not answer within its 1s timeout" {
			t.Errorf("got %v", err)
		}
	})
}

// TestHedgeFirstWins: a slow attempt is hedged after the delay; the hedge
// answers first, its value is returned, and the slow attempt is cancelled.
func TestHedgeFirstWins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hop := policy.Hop{Timeout: 5 * time.Second, Hedge: policy.Hedge{Delay: 100 * time.Millisecond, Max: 2}}
		var counts enforce.Counts
		pol := enforce.New(onePolicy(0, hop), enforce.Options{Observe: counts.Observe})
		var n atomic.Int32
		cancelled := make(chan string, 3)
		lat := []time.Duration{2 * time.Second, 50 * time.Millisecond, time.Second}
		answer := []string{"slow", "fast", "late"}
		start := time.Now()
		v, err := enforce.Do(context.Background(), pol, "rank", func(ctx context.Context) (string, error) {
			i := n.Add(1) - 1
			if err := after(lat[i], nil)(ctx); err != nil {
				cancelled <- answer[i]
				return "", err
			}
			return answer[i], nil
		})
		if err != nil || v != "fast" || time.Since(start) != 150*time.Millisecond {
			t.Fatalf("got %q, %v after %v; want fast after 150ms", v, err, time.Since(start))
		}
		synctest.Wait()
		if len(cancelled) != 1 || <-cancelled != "slow" {
			t.Errorf("the slow attempt was not cancelled (%d cancelled)", len(cancelled))
		}
		if s := counts.Snapshot(); s.Attempts != 2 || s.Hedges != 1 || s.HedgesWon != 1 || s.GiveUps != 0 {
			t.Errorf("counted %+v, want 2 attempts, 1 hedge that won", s)
		}
	})
}

// TestHedgesAllFail: the try fails when its last attempt does, and a
// retry follows with its own hedges.
func TestHedgesAllFail(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hop := policy.Hop{Timeout: time.Second, Retries: 1, Hedge: policy.Hedge{Delay: 300 * time.Millisecond, Max: 1}}
		var counts enforce.Counts
		pol := enforce.New(onePolicy(0, hop), enforce.Options{Observe: counts.Observe})
		err := pol.Call(context.Background(), "rank", hang)
		var d *enforce.Degraded
		// Each try: the attempt at 0 cut at 1s, the hedge at 0.3s cut at
		// 1.3s; the retry at 1.3s likewise, ending at 2.6s.
		if !errors.As(err, &d) || d.Attempts != 4 || d.Elapsed != 2600*time.Millisecond || d.Reason != enforce.ReasonTimeout {
			t.Fatalf("got %+v", d)
		}
		if s := counts.Snapshot(); s.Hedges != 2 || s.HedgesWon != 0 {
			t.Errorf("counted %+v", s)
		}
	})
}

// TestNestedSeesWhatIsLeft: a call made inside an attempt runs under that
// attempt's deadline: Left reports it, a budget-aware retry that would
// outlive it is not sent, and the inner give-up reaches the outer caller
// as a *Degraded for each level.
func TestNestedSeesWhatIsLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &policy.Policy{Budget: 10 * time.Second, Default: policy.Hop{Timeout: 4 * time.Second},
			Hops: map[string]policy.Hop{"index": {Timeout: 1500 * time.Millisecond, Retries: 3, BudgetAware: true}}}
		pol := enforce.New(p, enforce.Options{DefaultHops: []string{"retrieve"}})
		ctx, done := pol.Request(context.Background())
		defer done()
		if left, ok := enforce.Left(ctx); !ok || left != 10*time.Second {
			t.Fatalf("request: left %v %v, want the 10s budget", left, ok)
		}
		var inner *enforce.Degraded
		err := pol.Call(ctx, "retrieve", func(ctx context.Context) error {
			if left, _ := enforce.Left(ctx); left != 4*time.Second {
				t.Errorf("inside the attempt: left %v, want its 4s timeout", left)
			}
			err := pol.Call(ctx, "index", hang)
			if !errors.As(err, &inner) {
				t.Errorf("inner call: %v", err)
			}
			return err
		})
		// index: 1.5s, 1.5s; at 3s only 1s is left of retrieve's 4s,
		// less than an attempt: it gives up at 3s, and retrieve with it.
		if inner == nil || inner.Attempts != 2 || inner.Reason != enforce.ReasonBudget || inner.Elapsed != 3*time.Second {
			t.Errorf("inner %+v", inner)
		}
		var outer *enforce.Degraded
		if !errors.As(err, &outer) || outer.Hop != "retrieve" || outer.Reason != enforce.ReasonRetriesExhausted || outer.Elapsed != 3*time.Second {
			t.Errorf("outer %+v", outer)
		}
	})
}

// TestDoSucceedsAfterRetry: Do returns the value of the attempt that
// answered, after a failure and a backoff.
func TestDoSucceedsAfterRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pol := enforce.New(onePolicy(0, policy.Hop{Timeout: time.Second, Retries: 1,
			Backoff: policy.Backoff{Base: 50 * time.Millisecond, Max: 50 * time.Millisecond}}), enforce.Options{})
		var n atomic.Int32
		start := time.Now()
		v, err := enforce.Do(context.Background(), pol, "generate", func(ctx context.Context) (int, error) {
			if n.Add(1) == 1 {
				return 0, hang(ctx)
			}
			return 42, nil
		})
		if err != nil || v != 42 || time.Since(start) != 1050*time.Millisecond {
			t.Errorf("got %d, %v after %v", v, err, time.Since(start))
		}
	})
}

// TestJitterDraws: the backoff's jitter takes the draw Options.Jitter
// gives, for the retry it is for.
func TestJitterDraws(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hop := policy.Hop{Retries: 2, Backoff: policy.Backoff{Base: time.Second, Max: 8 * time.Second, Jitter: policy.JitterFull}}
		var asked []int
		pol := enforce.New(onePolicy(0, hop), enforce.Options{Jitter: func(_ context.Context, hop string, k int) float64 {
			asked = append(asked, k)
			return 0.25
		}})
		start := time.Now()
		pol.Call(context.Background(), "a", func(context.Context) error { return errors.New("no") })
		// 0.25×1s + 0.25×2s
		if time.Since(start) != 750*time.Millisecond || len(asked) != 2 || asked[0] != 1 || asked[1] != 2 {
			t.Errorf("waited %v, draws asked for %v", time.Since(start), asked)
		}
	})
}

// TestPanicReachesCaller: a panic in an attempt is raised in the caller's
// goroutine, where it can be recovered.
func TestPanicReachesCaller(t *testing.T) {
	pol := enforce.New(onePolicy(0, policy.Hop{Timeout: time.Second}), enforce.Options{})
	defer func() {
		if r := recover(); r != "bad index" {
			t.Errorf("recovered %v", r)
		}
	}()
	pol.Call(context.Background(), "a", func(context.Context) error { panic("bad index") })
	t.Error("no panic")
}

// TestLoad reads a policy file, and reports a bad one with its position.
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(good, []byte("budget: 8s\ndefault:\n  timeout: 3s\n  retries: 2\n  backoff: 200ms\n  budget_aware: true\n"), 0o644)
	os.WriteFile(bad, []byte("budget: 8s\ndefault:\n  timeout: soon\n"), 0o644)
	pol, err := enforce.Load(good)
	if err != nil {
		t.Fatal(err)
	}
	if h := pol.Policy().For("any"); pol.Policy().Budget != 8*time.Second || h.Timeout != 3*time.Second || h.Retries != 2 || !h.BudgetAware {
		t.Errorf("loaded %+v", pol.Policy())
	}
	if _, err := enforce.Load(bad); err == nil || !strings.Contains(err.Error(), "bad.yaml:3") || !strings.Contains(err.Error(), "default.timeout") {
		t.Errorf("bad file: %v", err)
	}
}
