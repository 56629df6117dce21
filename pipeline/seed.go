package pipeline

import (
	"bytes"
	"fmt"

	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/samples"
	"github.com/tailscope/tailscope/span"
)

// Seed reads a file of the embedded seed sample (spans.jsonl,
// recorded-under-A.jsonl: see package samples), the logs `tailscope demo`
// runs on.
func Seed(file string) (*Logs, error) {
	path := "seed-chain/" + file
	data, err := samples.SeedChain.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var spans []span.Span
	st, err := ingest.ReadStream(path, bytes.NewReader(data), ingest.Options{}, ingest.SinkFunc(func(s *span.Span) { spans = append(spans, *s) }))
	if err != nil {
		return nil, err
	}
	return FromSpans(spans, st), nil
}

// SeedPolicies are the seed sample's policies A–E, in table order, each
// named by its letter.
func SeedPolicies() ([]*policy.Policy, error) {
	var pols []*policy.Policy
	for _, name := range samples.Policies {
		path := "seed-chain/" + name + ".yaml"
		data, err := samples.SeedChain.ReadFile(path)
		if err != nil {
			return nil, err
		}
		p, err := policy.Parse(path, data)
		if err != nil {
			return nil, fmt.Errorf("embedded policy: %w", err)
		}
		p.Name = name
		pols = append(pols, p)
	}
	return pols, nil
}
