package enforce_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tailscope/tailscope/enforce"
	"github.com/tailscope/tailscope/policy"
)

// TestNotIdempotent: a hop whose policy says idempotent: false is not
// hedged and not retried after an attempt that may have reached it (an
// error, a timeout); DoWith's Unsent lets it be retried after an error
// that shows the request never left, and its Idempotent overrides the
// key for one call.
func TestNotIdempotent(t *testing.T) {
	refused := errors.New("connection refused")
	boom := errors.New("upstream 503")
	ms := time.Millisecond
	hop := policy.Hop{Timeout: time.Second, Retries: 2, Backoff: policy.Backoff{Base: 10 * ms, Max: 10 * ms},
		Hedge: policy.Hedge{Delay: 100 * ms, Max: 2}, Idempotent: policy.NotIdempotent}
	tests := []struct {
		name     string
		opt      enforce.CallOptions
		errs     []error // by attempt; nil: hang
		attempts int
		reason   enforce.Reason
		elapsed  time.Duration
	}{
		{"an error", enforce.CallOptions{}, []error{boom}, 1, enforce.ReasonRetriesExhausted, 0},
		{"a timeout, not hedged", enforce.CallOptions{}, []error{nil}, 1, enforce.ReasonTimeout, time.Second},
		{"unsent, then an error", enforce.CallOptions{Unsent: func(err error) bool { return errors.Is(err, refused) }},
			[]error{refused, refused, boom}, 3, enforce.ReasonRetriesExhausted, 20 * ms},
		{"idempotent for this call", enforce.CallOptions{Idempotent: policy.Idempotent}, []error{boom}, 3, enforce.ReasonRetriesExhausted, 20 * ms},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var counts enforce.Counts
				pol := enforce.New(onePolicy(0, hop), enforce.Options{Observe: counts.Observe})
				start := time.Now()
				_, err := enforce.DoWith(context.Background(), pol, "charge", tc.opt, func(ctx context.Context) (int, error) {
					a, _ := enforce.AttemptOf(ctx)
					if e := tc.errs[min(a.N, len(tc.errs))-1]; e != nil {
						return 0, e
					}
					return 0, hang(ctx)
				})
				var d *enforce.Degraded
				if !errors.As(err, &d) || d.Attempts != tc.attempts || d.Reason != tc.reason || time.Since(start) != tc.elapsed {
					t.Errorf("%+v after %v; want %d attempts, %s, after %v", d, time.Since(start), tc.attempts, tc.reason, tc.elapsed)
				}
				if s := counts.Snapshot(); s.Hedges != 0 || s.Attempts != tc.attempts {
					t.Errorf("counted %+v", s)
				}
			})
		})
	}
	synctest.Test(t, func(t *testing.T) {
		pol := enforce.New(onePolicy(0, hop), enforce.Options{})
		n := 0
		pol.Call(context.Background(), "charge", func(context.Context) error { n++; return boom })
		if n != 1 {
			t.Errorf("Call of a hop that is not idempotent: %d attempts", n)
		}
	})
}
