package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tailscope/tailscope/enforce"
)

// fake returns hops that answer after fixed latencies (0: hang until
// cancelled) or with err.
func fake(fwd, ret, gen time.Duration, fwdErr error) hops {
	wait := func(ctx context.Context, d time.Duration) error {
		if d == 0 {
			<-ctx.Done()
			return errors.New("connection reset by peer: stack trace follows")
		}
		select {
		case <-time.After(d):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return hops{
		forward: func(ctx context.Context, q string) (string, error) {
			if fwdErr != nil {
				return "", fwdErr
			}
			return q, wait(ctx, fwd)
		},
		retrieve: func(ctx context.Context, q string) ([]string, error) {
			return []string{"p1", "p2"}, wait(ctx, ret)
		},
		generate: func(ctx context.Context, q string, passages, missing []string) (string, error) {
			if err := wait(ctx, gen); err != nil {
				return "", err
			}
			if len(passages) == 0 {
				return "general: " + strings.Join(missing, "; "), nil
			}
			return "grounded", nil
		},
	}
}

// TestAnswerDegrades runs the service's request path under virtual time
// with the built-in policy: a retrieve that never answers leaves a gap in
// plain words and the answer is still written; a forward that refuses
// ends the request with a gap that is not retryable; fast hops answer in
// full. The error's text never reaches the response.
func TestAnswerDegrades(t *testing.T) {
	p, err := load("")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		hops   hops
		answer string
		gaps   []string // hop/reason/retryable
	}{
		{"all fast", fake(100*time.Millisecond, 200*time.Millisecond, 300*time.Millisecond, nil), "grounded", nil},
		{"retrieve never answers", fake(100*time.Millisecond, 0, 300*time.Millisecond, nil),
			"general: the supporting passages: ", []string{"retrieve/timeout/true"}},
		{"forward refuses", fake(0, 0, 0, enforce.Permanent(errors.New("400 bad request"))), "", []string{"forward/not retryable/false"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var counts enforce.Counts
				s := &service{pol: enforce.New(p, enforce.Options{Observe: counts.Observe,
					Parts: map[string]string{"retrieve": "the supporting passages"}}), hops: tc.hops}
				a := s.answer(context.Background(), "why")
				if !strings.HasPrefix(a.Answer, tc.answer) || (tc.answer == "") != (a.Answer == "") {
					t.Errorf("answer %q, want %q…", a.Answer, tc.answer)
				}
				var gaps []string
				for _, g := range a.Missing {
					gaps = append(gaps, g.Hop+"/"+g.Reason+"/"+map[bool]string{true: "true", false: "false"}[g.Retryable])
					if strings.Contains(g.What, "reset") || strings.Contains(g.What, "400") {
						t.Errorf("error text in the gap: %q", g.What)
					}
				}
				if strings.Join(gaps, ",") != strings.Join(tc.gaps, ",") {
					t.Errorf("gaps %v, want %v", gaps, tc.gaps)
				}
				if strings.Contains(a.Answer, "reset") {
					t.Errorf("error text in the answer: %q", a.Answer)
				}
				var m bytes.Buffer
				writeMetrics(&m, counts.Snapshot())
				if !strings.Contains(m.String(), `enforce_attempts_total{hop="forward"} 1`) {
					t.Errorf("metrics:\n%s", m.String())
				}
			})
		})
	}
}
