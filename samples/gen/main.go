// Command gen writes the embedded seed sample (samples/seed-chain): the
// article's latency matrix as true latencies, as config A would have logged
// it, and the five policies A–E. Run it with `go generate ./samples`.
package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/tailscope/tailscope/samples/matrix"
)

var policies = []struct {
	name, title     string
	timeout, budget string
	retries         int
}{
	{"A", "baseline: the config chosen by feel", "3s", "30s", 2},
	{"B", "no retry", "3s", "30s", 0},
	{"C", "wide hop timeout, no retry", "12s", "30s", 0},
	{"D", "tight budget: budget = hop timeout × hops", "3s", "9s", 2},
	{"E", "aggressive: short timeout, one retry", "1s", "8s", 1},
}

func main() {
	dir := "seed-chain"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if err := run(dir); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	c := matrix.Article()
	reqs := matrix.Generate(c)
	var b bytes.Buffer
	if err := matrix.WriteTrue(&b, c, reqs); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "spans.jsonl"), b.Bytes(), 0o644); err != nil {
		return err
	}
	b.Reset()
	if err := matrix.WriteRecorded(&b, c, reqs, 3*time.Second, 2); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "recorded-under-A.jsonl"), b.Bytes(), 0o644); err != nil {
		return err
	}
	for _, p := range policies {
		y := fmt.Sprintf("# %s — %s (the source article's config %s)\nbudget: %s\ndefault:\n  timeout: %s\n  retries: %d\n  backoff: 0s\n  budget_aware: false\n",
			p.name, p.title, p.name, p.budget, p.timeout, p.retries)
		if err := os.WriteFile(filepath.Join(dir, p.name+".yaml"), []byte(y), 0o644); err != nil {
			return err
		}
	}
	return nil
}
