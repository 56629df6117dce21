package enforce_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tailscope/tailscope/enforce"
	"github.com/tailscope/tailscope/policy"
)

// FuzzCall runs one call under virtual time with a policy and attempts
// built from the input, and checks what must hold whatever they are: the
// call ends; it returns nil or a *Degraded (never another error) whose
// attempts are those started, within what the policy allows, whose
// Missing is plain words without the attempts' error text, and which
// ends by the budget; and with budget_aware and no hedge, every retry
// started had a whole attempt's time left.
func FuzzCall(f *testing.F) {
	f.Add(uint16(8000), uint16(3000), uint8(2), uint16(200), uint8(0), true, uint16(0), uint8(0), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Add(uint16(0), uint16(1000), uint8(3), uint16(50), uint8(1), false, uint16(0), uint8(0), []byte{10, 1, 20, 1, 30, 0})
	f.Add(uint16(2500), uint16(900), uint8(1), uint16(0), uint8(2), true, uint16(300), uint8(2), []byte{200, 0, 5, 0, 90, 2})
	f.Add(uint16(500), uint16(0), uint8(4), uint16(100), uint8(0), false, uint16(100), uint8(1), []byte{})
	f.Fuzz(func(t *testing.T, budgetMs, timeoutMs uint16, retries uint8, backoffMs uint16, jitter uint8, aware bool, hedgeMs uint16, hedgeMax uint8, script []byte) {
		ms := time.Millisecond
		hop := policy.Hop{Timeout: time.Duration(timeoutMs) * ms, Retries: int(retries % 6), BudgetAware: aware,
			Backoff: policy.Backoff{Base: time.Duration(backoffMs) * ms, Max: 4 * time.Duration(backoffMs) * ms,
				Jitter: []string{policy.JitterNone, policy.JitterFull, policy.JitterEqual}[jitter%3]}}
		if hedgeMs > 0 {
			hop.Hedge = policy.Hedge{Delay: time.Duration(hedgeMs) * ms, Max: 1 + int(hedgeMax)%policy.MaxHedges}
		}
		if budgetMs == 0 && hop.Timeout == 0 {
			hop.Timeout = 10 * time.Second // else an attempt that never answers is waited for forever
		}
		p := &policy.Policy{Budget: time.Duration(budgetMs) * ms, Default: hop}
		synctest.Test(t, func(t *testing.T) {
			var counts enforce.Counts
			pol := enforce.New(p, enforce.Options{Observe: counts.Observe})
			ctx, done := pol.Request(context.Background())
			defer done()
			deadline, bounded := ctx.Deadline()
			var mu sync.Mutex
			var starts []time.Time
			start := time.Now()
			err := pol.Call(ctx, "hop", func(ctx context.Context) error {
				mu.Lock()
				k := len(starts)
				starts = append(starts, time.Now())
				mu.Unlock()
				// Two bytes an attempt: its latency in 10ms steps (255:
				// never answers) and how it ends (0 ok, 1 error, 2 a
				// refusal); the script repeats.
				lat, how := byte(255), byte(0)
				if len(script) >= 2 {
					i := 2 * k % (len(script) &^ 1)
					lat, how = script[i], script[i+1]%3
				}
				if lat == 255 {
					<-ctx.Done()
					return errors.New("secret: still waiting")
				}
				select {
				case <-time.After(time.Duration(lat) * 10 * ms):
				case <-ctx.Done():
					return ctx.Err()
				}
				switch how {
				case 1:
					return errors.New("secret: upstream 503")
				case 2:
					return enforce.Permanent(errors.New("secret: 400 bad request"))
				}
				return nil
			})
			elapsed := time.Since(start)
			synctest.Wait()
			if bounded && elapsed > p.Budget {
				t.Errorf("ended after %v, past the %v budget", elapsed, p.Budget)
			}
			s := counts.Snapshot()
			if len(starts) > s.Attempts {
				t.Errorf("fn ran %d times, %d attempts counted", len(starts), s.Attempts)
			}
			if most := (1 + hop.Retries) * (1 + hop.Hedge.Max); s.Attempts > most {
				t.Errorf("%d attempts, the policy allows %d", s.Attempts, most)
			}
			if aware && bounded && hop.Hedge.Delay == 0 {
				for i, at := range starts[1:] {
					if left := deadline.Sub(at); left < hop.Timeout {
						t.Errorf("retry %d started with %v left, less than a %v attempt", i+1, left, hop.Timeout)
					}
				}
			}
			if err == nil {
				return
			}
			d, ok := err.(*enforce.Degraded)
			if !ok {
				t.Fatalf("%T %v, not a *Degraded", err, err)
			}
			if d.Attempts != s.Attempts || d.Elapsed != elapsed || d.Hop != "hop" || s.GiveUps != 1 {
				t.Errorf("%+v, counted %+v, elapsed %v", d, s, elapsed)
			}
			if !plainWords.MatchString(d.Missing) || !plainWords.MatchString(d.Error()) || strings.Contains(d.Error(), "secret") {
				t.Errorf("Missing %q, Error %q: not plain words", d.Missing, d.Error())
			}
			if d.Retryable != (d.Reason != enforce.ReasonNotRetryable && d.Reason != enforce.ReasonCanceled) {
				t.Errorf("%s: Retryable %v", d.Reason, d.Retryable)
			}
		})
	})
}
