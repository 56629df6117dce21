// Command chain is an example service that applies a tailscope policy at
// run time with package enforce: the three-hop chain of the seed sample
// (forward → retrieve → generate) behind one HTTP endpoint, its hops
// simulated in process with a heavy tail.
//
//	go run ./examples/chain -policy policy.yaml -addr localhost:8080
//	curl 'localhost:8080/answer?q=why+is+p99+high'
//	curl localhost:8080/metrics
//
// The policy file is the one `tailscope recommend` writes and `tailscope
// check` replays (the built-in one when -policy is not given). What the
// example shows is structured degradation: when retrieve gives up, the
// answer is generated without passages and the response says, in plain
// words, what is missing and whether asking again could help; the error's
// text never reaches the answer. /metrics prints what the Observe hook
// counted: attempts, hedges won, give-ups by reason.
package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/tailscope/tailscope/enforce"
	"github.com/tailscope/tailscope/policy"
)

//go:embed policy.yaml
var builtin []byte

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("chain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "localhost:8080", "address to listen on")
	file := fs.String("policy", "", "policy file (default: the built-in example policy)")
	slow := fs.Float64("slow", 0.1, "share of calls that hit a hop's slow tail")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	p, err := load(*file)
	if err != nil {
		fmt.Fprintf(stderr, "chain: %v\n", err)
		return 1
	}
	var counts enforce.Counts
	s := &service{
		pol: enforce.New(p, enforce.Options{
			Observe: counts.Observe,
			Parts:   map[string]string{"forward": "the question as understood", "retrieve": "the supporting passages", "generate": "the written answer"},
		}),
		hops: simulated(*slow),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/answer", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(s.answer(r.Context(), r.URL.Query().Get("q")))
	})
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		writeMetrics(w, counts.Snapshot())
	})
	fmt.Fprintf(stderr, "chain: listening on %s (policy %s, budget %s)\n", *addr, p.Name, p.Budget)
	if err := http.ListenAndServe(*addr, mux); err != nil {
		fmt.Fprintf(stderr, "chain: %v\n", err)
		return 1
	}
	return 0
}

func load(file string) (*policy.Policy, error) {
	if file == "" {
		p, err := policy.Parse("policy.yaml", builtin)
		if p != nil {
			p.Name = "built-in"
		}
		return p, err
	}
	return policy.Load(file)
}

// hops are the three backends.
type hops struct {
	forward  func(ctx context.Context, q string) (string, error)
	retrieve func(ctx context.Context, q string) ([]string, error)
	generate func(ctx context.Context, q string, passages []string, missing []string) (string, error)
}

type service struct {
	pol  *enforce.Policy
	hops hops
}

// Answer is the response: the answer, and what is missing from it.
type Answer struct {
	Answer  string `json:"answer,omitempty"`
	Missing []Gap  `json:"missing,omitempty"`
}

// Gap is a part of the answer that a hop could not give in time.
type Gap struct {
	Hop       string  `json:"hop"`
	What      string  `json:"what"`
	Reason    string  `json:"reason"`
	Attempts  int     `json:"attempts"`
	ElapsedMs float64 `json:"elapsed_ms"`
	Retryable bool    `json:"retryable"`
}

// answer runs one request under the policy's budget. A hop that gives up
// leaves a Gap; retrieve's gap does not stop the chain (generate is told
// what it lacks), forward's and generate's end it.
func (s *service) answer(ctx context.Context, q string) Answer {
	ctx, done := s.pol.Request(ctx)
	defer done()
	var a Answer
	gap := func(err error) {
		var d *enforce.Degraded
		if errors.As(err, &d) {
			a.Missing = append(a.Missing, Gap{Hop: d.Hop, What: d.Missing, Reason: string(d.Reason), Attempts: d.Attempts,
				ElapsedMs: float64(d.Elapsed) / float64(time.Millisecond), Retryable: d.Retryable})
		}
	}
	query, err := enforce.Do(ctx, s.pol, "forward", func(ctx context.Context) (string, error) { return s.hops.forward(ctx, q) })
	if err != nil {
		gap(err)
		return a
	}
	passages, err := enforce.Do(ctx, s.pol, "retrieve", func(ctx context.Context) ([]string, error) { return s.hops.retrieve(ctx, query) })
	if err != nil {
		gap(err)
	}
	var lacking []string
	for _, g := range a.Missing {
		lacking = append(lacking, g.What)
	}
	text, err := enforce.Do(ctx, s.pol, "generate", func(ctx context.Context) (string, error) {
		return s.hops.generate(ctx, query, passages, lacking)
	})
	if err != nil {
		gap(err)
		return a
	}
	a.Answer = text
	return a
}

// simulated are in-process hops whose latency has a body and a slow tail
// (a share slow of the calls take 2–12 s, the seed sample's shape).
func simulated(slow float64) hops {
	wait := func(ctx context.Context, body time.Duration) error {
		d := time.Duration(float64(body) * (0.5 + rand.Float64()))
		if rand.Float64() < slow {
			d = 2*time.Second + time.Duration(rand.Int64N(int64(10*time.Second)))
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return hops{
		forward: func(ctx context.Context, q string) (string, error) {
			return strings.TrimSpace(q), wait(ctx, 300*time.Millisecond)
		},
		retrieve: func(ctx context.Context, q string) ([]string, error) {
			if err := wait(ctx, 350*time.Millisecond); err != nil {
				return nil, err
			}
			return []string{"passage about " + q}, nil
		},
		generate: func(ctx context.Context, q string, passages, missing []string) (string, error) {
			if err := wait(ctx, 500*time.Millisecond); err != nil {
				return "", err
			}
			if len(passages) == 0 {
				return fmt.Sprintf("An answer to %q from general knowledge only (missing: %s).", q, strings.Join(missing, "; ")), nil
			}
			return fmt.Sprintf("An answer to %q grounded in %d passages.", q, len(passages)), nil
		},
	}
}

// writeMetrics prints the counts in Prometheus' text format.
func writeMetrics(w io.Writer, s enforce.Snapshot) {
	names := func(m map[string]int) []string {
		var ns []string
		for n := range m {
			ns = append(ns, n)
		}
		sort.Strings(ns)
		return ns
	}
	for _, h := range names(s.AttemptsByHop) {
		fmt.Fprintf(w, "enforce_attempts_total{hop=%q} %d\n", h, s.AttemptsByHop[h])
	}
	for _, h := range names(s.HedgesByHop) {
		fmt.Fprintf(w, "enforce_hedges_total{hop=%q} %d\n", h, s.HedgesByHop[h])
	}
	for _, h := range names(s.HedgesWonByHop) {
		fmt.Fprintf(w, "enforce_hedges_won_total{hop=%q} %d\n", h, s.HedgesWonByHop[h])
	}
	var hs []string
	for h := range s.GiveUpsByHop {
		hs = append(hs, h)
	}
	sort.Strings(hs)
	for _, h := range hs {
		var rs []string
		for r := range s.GiveUpsByHop[h] {
			rs = append(rs, string(r))
		}
		sort.Strings(rs)
		for _, r := range rs {
			fmt.Fprintf(w, "enforce_give_ups_total{hop=%q,reason=%q} %d\n", h, r, s.GiveUpsByHop[h][enforce.Reason(r)])
		}
	}
}
