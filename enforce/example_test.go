package enforce_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/tailscope/tailscope/enforce"
	"github.com/tailscope/tailscope/policy"
)

// A hop that refuses the request is not retried, and the caller gets a
// gap in plain words instead of the refusal's text.
func Example() {
	p, err := policy.Parse("policy.yaml", []byte("budget: 8s\ndefault:\n  timeout: 3s\n  retries: 2\n  backoff: 200ms\n  budget_aware: true\n"))
	if err != nil {
		panic(err)
	}
	pol := enforce.New(p, enforce.Options{})
	ctx, done := pol.Request(context.Background())
	defer done()
	err = pol.Call(ctx, "retrieve", func(ctx context.Context) error {
		return enforce.Permanent(errors.New("HTTP 403: token expired for user 1234"))
	})
	var d *enforce.Degraded
	if errors.As(err, &d) {
		fmt.Println(d.Hop, "|", d.Reason, "|", d.Attempts, "attempt | retryable:", d.Retryable)
		fmt.Println(d.Missing)
	}
	// Output:
	// retrieve | not retryable | 1 attempt | retryable: false
	// the answer from retrieve: it refused the request with an error that a retry cannot fix
}
