package enforce_test

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tailscope/tailscope/enforce"
	"github.com/tailscope/tailscope/policy"
)

// recorder is an Observe hook that keeps every event.
type recorder struct {
	mu     sync.Mutex
	events []enforce.Event
}

func (r *recorder) Observe(e enforce.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// lines are the events as one line each: kind, attempt, hedge, outcome or
// reason, latency, elapsed.
func (r *recorder) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		s := fmt.Sprintf("%s #%d", e.Kind, e.Attempt)
		if e.Hedge {
			s += " hedge"
		}
		switch e.Kind {
		case enforce.KindAttemptEnd:
			s += fmt.Sprintf(" %s %v", e.Outcome, e.Latency)
		case enforce.KindGiveUp:
			s += " " + string(e.Reason)
		case enforce.KindUnknownHop:
			s = fmt.Sprintf("%s %q suggest %q", e.Kind, e.Hop, e.Suggest)
		}
		out = append(out, s+fmt.Sprintf(" @%v", e.Elapsed))
	}
	return out
}

func checkLines(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

// TestObserveEveryAttempt: Observe hears each attempt start and end, with
// its number, outcome and latency, and the success; fn is told its
// attempt through AttemptOf.
func TestObserveEveryAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms := time.Millisecond
		hop := policy.Hop{Timeout: time.Second, Retries: 2, Backoff: policy.Backoff{Base: 100 * ms, Max: 100 * ms}}
		var rec recorder
		pol := enforce.New(onePolicy(0, hop), enforce.Options{Observe: rec.Observe})
		var mu sync.Mutex // fn's goroutines are not waited for
		var seen []enforce.Attempt
		err := pol.Call(context.Background(), "cart", func(ctx context.Context) error {
			a, ok := enforce.AttemptOf(ctx)
			if !ok {
				t.Error("AttemptOf: no attempt in fn's context")
			}
			mu.Lock()
			seen = append(seen, a)
			mu.Unlock()
			switch a.N {
			case 1:
				return hang(ctx)
			case 2:
				return after(50*ms, errors.New("connection reset by peer"))(ctx)
			}
			return after(30*ms, nil)(ctx)
		})
		if err != nil {
			t.Fatal(err)
		}
		checkLines(t, rec.lines(), []string{
			"attempt #1 @0s",
			"attempt end #1 timeout 1s @1s",
			"attempt #2 @1.1s",
			"attempt end #2 error 50ms @1.15s",
			"attempt #3 @1.25s",
			"attempt end #3 ok 30ms @1.28s",
			"success #3 @1.28s",
		})
		want := []enforce.Attempt{{Hop: "cart", N: 1}, {Hop: "cart", N: 2, Retry: 1}, {Hop: "cart", N: 3, Retry: 2}}
		mu.Lock()
		defer mu.Unlock()
		if fmt.Sprint(seen) != fmt.Sprint(want) {
			t.Errorf("AttemptOf: %v, want %v", seen, want)
		}
		if _, ok := enforce.AttemptOf(context.Background()); ok {
			t.Error("AttemptOf outside an attempt")
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		for _, e := range rec.events {
			if e.Kind == enforce.KindAttemptEnd && (e.Outcome == enforce.OutcomeOK) != (e.Err == nil) {
				t.Errorf("attempt %d: outcome %s with error %v", e.Attempt, e.Outcome, e.Err)
			}
		}
	})
}

// TestObserveOutcomes: each way an attempt ends has its outcome: a hedge
// that wins and the attempt it beat (lost, told after the call returned),
// a refusal, the budget, the caller's cancel.
func TestObserveOutcomes(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name     string
		budget   time.Duration
		hop      policy.Hop
		fn       func(n int) func(context.Context) error
		cancelAt time.Duration
		want     []string
	}{
		{name: "hedge wins",
			hop: policy.Hop{Timeout: 5 * time.Second, Hedge: policy.Hedge{Delay: 100 * ms, Max: 2}},
			fn: func(n int) func(context.Context) error {
				return after([]time.Duration{2 * time.Second, 50 * ms}[n-1], nil)
			},
			want: []string{
				"attempt #1 @0s",
				"attempt #2 hedge @100ms",
				"attempt end #2 hedge ok 50ms @150ms",
				"hedge won #2 hedge @150ms",
				"success #2 hedge @150ms",
				"attempt end #1 lost 150ms @150ms",
			}},
		{name: "refused",
			hop: policy.Hop{Timeout: time.Second, Retries: 2},
			fn: func(int) func(context.Context) error {
				return after(20*ms, enforce.Permanent(errors.New("400")))
			},
			want: []string{
				"attempt #1 @0s",
				"attempt end #1 not retryable 20ms @20ms",
				"give up #0 not retryable @20ms",
			}},
		{name: "budget",
			budget: 1500 * ms, hop: policy.Hop{Timeout: time.Second, Retries: 2},
			fn: func(int) func(context.Context) error { return hang },
			want: []string{
				"attempt #1 @0s",
				"attempt end #1 timeout 1s @1s",
				"attempt #2 @1s",
				"attempt end #2 budget 500ms @1.5s",
				"give up #0 budget @1.5s",
			}},
		{name: "canceled",
			hop: policy.Hop{Timeout: time.Second, Retries: 2},
			fn:  func(int) func(context.Context) error { return hang }, cancelAt: 300 * ms,
			want: []string{
				"attempt #1 @0s",
				"attempt end #1 canceled 300ms @300ms",
				"give up #0 canceled @300ms",
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var rec recorder
				pol := enforce.New(onePolicy(tc.budget, tc.hop), enforce.Options{Observe: rec.Observe})
				ctx, done := pol.Request(context.Background())
				defer done()
				if tc.cancelAt > 0 {
					time.AfterFunc(tc.cancelAt, done)
				}
				pol.Call(ctx, "cart", func(ctx context.Context) error {
					a, _ := enforce.AttemptOf(ctx)
					return tc.fn(a.N)(ctx)
				})
				synctest.Wait() // the lost attempt ends after the call
				checkLines(t, rec.lines(), tc.want)
			})
		})
	}
}

// TestCountsSuccessesAndOutcomes: Counts counts successes and the
// attempts' outcomes besides what it counted before.
func TestCountsSuccessesAndOutcomes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var counts enforce.Counts
		pol := enforce.New(onePolicy(0, policy.Hop{Timeout: time.Second, Retries: 1}), enforce.Options{Observe: counts.Observe})
		n := 0
		for range 3 {
			pol.Call(context.Background(), "cart", func(ctx context.Context) error {
				if n++; n != 2 && n != 4 {
					return enforce.HTTPStatus(503)
				}
				return nil
			})
		}
		// 503 ok | 503 ok | 503 503
		s := counts.Snapshot()
		if s.Attempts != 6 || s.Successes != 2 || s.GiveUps != 1 || s.Outcomes[enforce.OutcomeError] != 4 || s.Outcomes[enforce.OutcomeOK] != 2 ||
			s.OutcomesByHop["cart"][enforce.OutcomeOK] != 2 || s.SuccessesByHop["cart"] != 2 {
			t.Errorf("counted %+v", s)
		}
	})
}

// TestDefaultRetryable: what a retry can fix is retried, what it cannot
// is not.
func TestDefaultRetryable(t *testing.T) {
	dnsMissing := &net.DNSError{Err: "no such host", Name: "cart.invalid", IsNotFound: true}
	tests := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("something we do not know"), true},
		{enforce.Permanent(errors.New("no")), false},
		{enforce.HTTPStatus(400), false},
		{enforce.HTTPStatus(404), false},
		{enforce.HTTPStatus(408), false},
		{enforce.HTTPStatus(500), false},
		{enforce.HTTPStatus(501), false},
		{enforce.HTTPStatus(429), true},
		{enforce.HTTPStatus(502), true},
		{enforce.HTTPStatus(503), true},
		{enforce.HTTPStatus(504), true},
		{fmt.Errorf("calling cart: %w", enforce.HTTPStatus(503)), true},
		{context.Canceled, false},
		{context.DeadlineExceeded, true},
		{&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
		{syscall.ECONNRESET, true},
		{io.ErrUnexpectedEOF, true},
		{&net.DNSError{Err: "timeout", Name: "cart", IsTimeout: true}, true},
		{dnsMissing, false},
		{fmt.Errorf("get: %w", x509.UnknownAuthorityError{}), false},
		{&enforce.Degraded{Reason: enforce.ReasonBudget, Retryable: true}, true},
		{&enforce.Degraded{Reason: enforce.ReasonNotRetryable}, false},
	}
	for _, tc := range tests {
		if got := enforce.DefaultRetryable(tc.err); got != tc.want {
			t.Errorf("DefaultRetryable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestStatusRetriedByDefault: a call wrapped by hand that returns
// HTTPStatus gets the default's answer: a 400 is tried once, a 503 as
// often as the policy allows; Options.Retryable overrides the default.
func TestStatusRetriedByDefault(t *testing.T) {
	hop := policy.Hop{Timeout: time.Second, Retries: 2}
	for _, tc := range []struct {
		code      int
		retryable func(error) bool
		attempts  int
		reason    enforce.Reason
	}{
		{400, nil, 1, enforce.ReasonNotRetryable},
		{503, nil, 3, enforce.ReasonRetriesExhausted},
		{500, func(err error) bool {
			var h *enforce.HTTPError
			return errors.As(err, &h) && h.StatusCode == 500 || enforce.DefaultRetryable(err)
		}, 3, enforce.ReasonRetriesExhausted},
	} {
		synctest.Test(t, func(t *testing.T) {
			pol := enforce.New(onePolicy(0, hop), enforce.Options{Retryable: tc.retryable})
			n := 0
			err := pol.Call(context.Background(), "api", func(context.Context) error { n++; return enforce.HTTPStatus(tc.code) })
			var d *enforce.Degraded
			if !errors.As(err, &d) || n != tc.attempts || d.Attempts != tc.attempts || d.Reason != tc.reason {
				t.Errorf("HTTP %d: %d attempts, %v; want %d, %s", tc.code, n, err, tc.attempts, tc.reason)
			}
		})
	}
}

// TestUnknownHopWarnsOnce: a call to a hop the policy does not list runs
// under the default, and is reported once per name, with the closest
// listed name; DefaultHops are not reported, nor is any hop of a policy
// that lists none.
func TestUnknownHopWarnsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &policy.Policy{Name: "shop", Default: policy.Hop{Timeout: 2 * time.Second, Retries: 1},
			Hops: map[string]policy.Hop{"cart": {Timeout: 300 * time.Millisecond}, "retrieve": {Timeout: time.Second}}}
		var warnings []string
		var rec recorder
		pol := enforce.New(p, enforce.Options{Observe: rec.Observe, DefaultHops: []string{"audit"},
			Warn: func(msg string) { warnings = append(warnings, msg) }})
		for _, hop := range []string{"Cart", "cart", "Cart", "retreive", "audit", "Cart", "payments"} {
			start := time.Now()
			pol.Call(context.Background(), hop, hang)
			if hop == "Cart" && time.Since(start) != 4*time.Second {
				t.Errorf("Cart ran %v, want the default's 2 × 2s", time.Since(start))
			}
		}
		want := []string{
			`enforce: hop "Cart" is not in policy "shop": its calls run under the default (2s timeout, 1 retry); did you mean "cart"?`,
			`enforce: hop "retreive" is not in policy "shop": its calls run under the default (2s timeout, 1 retry); did you mean "retrieve"?`,
			`enforce: hop "payments" is not in policy "shop": its calls run under the default (2s timeout, 1 retry)`,
		}
		if strings.Join(warnings, "\n") != strings.Join(want, "\n") {
			t.Errorf("warnings:\n\t%s\nwant:\n\t%s", strings.Join(warnings, "\n\t"), strings.Join(want, "\n\t"))
		}
		var unknown []string
		for _, l := range rec.lines() {
			if strings.HasPrefix(l, "unknown hop") {
				unknown = append(unknown, l)
			}
		}
		checkLines(t, unknown, []string{`unknown hop "Cart" suggest "cart" @0s`, `unknown hop "retreive" suggest "retrieve" @0s`, `unknown hop "payments" suggest "" @0s`})

		quiet := enforce.New(onePolicy(0, policy.Hop{Timeout: time.Second}), enforce.Options{Warn: func(msg string) { t.Errorf("warned %q", msg) }})
		quiet.Call(context.Background(), "anything", func(context.Context) error { return nil })
	})
}

// TestCheck: Check and LoadWith refuse the names a policy does not list,
// each with the closest listed one.
func TestCheck(t *testing.T) {
	p := &policy.Policy{Name: "shop", Hops: map[string]policy.Hop{"cart": {}, "retrieve": {},
		"checkoutservice hipstershop.CartService/GetCart (client)": {}}}
	pol := enforce.New(p, enforce.Options{DefaultHops: []string{"audit"}})
	if err := pol.Check("cart", "retrieve", "audit"); err != nil {
		t.Errorf("listed names: %v", err)
	}
	err := pol.Check("Cart", "retreive", "GetCart", "payments", "Cart")
	var u *enforce.UnknownHopError
	if !errors.As(err, &u) || u.Hop != "Cart" || u.Suggest != "cart" {
		t.Fatalf("Check: %v", err)
	}
	want := `enforce: hop "Cart" is not in policy "shop" (did you mean "cart"?)
enforce: hop "retreive" is not in policy "shop" (did you mean "retrieve"?)
enforce: hop "GetCart" is not in policy "shop" (did you mean "checkoutservice hipstershop.CartService/GetCart (client)"?)
enforce: hop "payments" is not in policy "shop"`
	if err.Error() != want {
		t.Errorf("Check:\n%v\nwant:\n%s", err, want)
	}
	if err := enforce.New(onePolicy(0, policy.Hop{}), enforce.Options{}).Check("any"); err != nil {
		t.Errorf("a policy without hops: %v", err)
	}

	path := filepath.Join(t.TempDir(), "policy.yaml")
	os.WriteFile(path, []byte("budget: 8s\ndefault:\n  timeout: 3s\nhops:\n  cart:\n    timeout: 300ms\n"), 0o644)
	if _, err := enforce.LoadWith(path, enforce.Options{}, "cart"); err != nil {
		t.Errorf("LoadWith cart: %v", err)
	}
	if _, err := enforce.LoadWith(path, enforce.Options{}, "cart", "Cart"); err == nil || !strings.Contains(err.Error(), `hop "Cart" is not in policy `+path+` (did you mean "cart"?)`) {
		t.Errorf("LoadWith Cart: %v", err)
	}
}
