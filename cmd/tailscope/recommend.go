package main

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/policy"
)

const recommendUsage = `Usage: tailscope recommend [flags] PATH... [-o policy.yaml]

Writes the policy tailscope recommends for the logs, as a policy file
that 'tailscope check --policy' reads back and passes:

  - only remote calls get a timeout (client/producer spans, or by the
    trace's shape when spans carry no kind); callee-side, in-process and
    root spans are bounded by the calls above them and the budget;
  - per call hop, timeout = round_up_nice(p × (1 + margin)) of its time to
    success, where p is --percentile or higher: requests make K calls, so
    each call may cut only --false-timeouts / K of its successes; a hop with
    too few successes for p gets its slowest success × (1 + margin), never
    a value below an observed success; never below 50ms;
  - the policy is then replayed on the same logs, and the timeouts that
    cut requests which succeeded as logged are raised until at most
    --false-timeouts of them fail (the basis says which and why);
  - observe-first when the tail is censored (too many attempts were cut by
    the timeout in force): a canary timeout to learn the tail, never a guess;
  - retries 0 for ran-to-timeout hops; 1–2 with full-jitter exponential
    backoff for transient hops whose retry yield shows they help;
    budget-aware retries on;
  - a budget covering every logged request (root span included) and the
    critical path with every configured retry, × (1 + margin), or
    --max-budget.

Each hop carries a comment with its basis. Without -o the policy goes to
stdout. --emit envoy|grpc prints the equivalent Envoy routes or gRPC
service config instead, with the differences in semantics stated.

Examples:
  tailscope recommend logs/ -o policy.yaml
  tailscope recommend --percentile 99.9 --max-budget 20s spans.jsonl
  tailscope recommend --emit grpc spans.jsonl > service-config.json
`

func runRecommend(e *env, args []string) error {
	fs := newFlags(e, "recommend", recommendUsage)
	var in inputFlags
	var an analysisFlags
	var output, emit string
	fs.StringVarP(&output, "output", "o", "", "write the policy file here (atomically) instead of stdout")
	fs.StringVar(&emit, "emit", "policy", "what to write: policy (tailscope's YAML), envoy (route timeout/retry_policy), grpc (service config methodConfig)")
	an.register(fs)
	in.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if emit != "policy" && emit != "envoy" && emit != "grpc" {
		return usagef("--emit %q: want policy, envoy or grpc", emit)
	}
	aopt, err := an.options()
	if err != nil {
		return err
	}
	l, err := load(e, fs.Args(), &in)
	if err != nil {
		return err
	}
	rep := l.Report(aopt)
	p := rep.Recommended()
	// The hops whose timeout the policy sets: only remote calls get one
	// (callee-side, in-process and root hops are bounded by the calls
	// above them and the budget).
	hops := p.HopNames()
	var body []byte
	switch emit {
	case "policy":
		body = append([]byte(header(rep)), p.Marshal()...)
	case "envoy":
		body = []byte(policy.Envoy(p, hops))
	case "grpc":
		out, notes := policy.GRPC(p, hops)
		body = []byte(out)
		if !in.quiet {
			fmt.Fprintln(e.stderr, "tailscope: gRPC's methodConfig timeout covers the whole call with its retries, and maxAttempts counts the first attempt (at most 5).")
			for _, n := range notes {
				fmt.Fprintln(e.stderr, "tailscope:", visible(n))
			}
		}
	}
	if err := writeTo(e, output, func(w io.Writer) error { _, err := w.Write(body); return err }); err != nil {
		return err
	}
	if output != "" && output != "-" && !in.quiet {
		fmt.Fprintf(e.stdout, "wrote %s: %d hops, budget %s\n", output, len(hops), analyze.FormatDuration(p.Budget))
		for _, name := range hops {
			h := p.For(name)
			hedge := ""
			if h.Hedge.Delay > 0 {
				hedge = fmt.Sprintf("  hedge after %s (at most %d)", analyze.FormatDuration(h.Hedge.Delay), h.Hedge.Max)
			}
			fmt.Fprintf(e.stdout, "  %-*s %-13s %8s  retries %d%s\n", width(hops), visible(name), actionOf(rep, name), analyze.FormatDuration(h.Timeout), h.Retries, hedge)
		}
	}
	return nil
}

// header is the comment at the top of a written policy: what it came from.
func header(rep *analyze.Report) string {
	var b strings.Builder
	b.WriteString("# Recommended by tailscope from ")
	files := make([]string, 0, len(rep.Inputs))
	for _, in := range rep.Inputs {
		files = append(files, in.File)
	}
	fmt.Fprintf(&b, "%s (%d spans, %d requests).\n", strings.Join(files, ", "), rep.Spans, rep.Requests.Count)
	for _, h := range rep.Hops {
		if h.Recommendation.Action == analyze.ActionObserveFirst {
			b.WriteString("# Some hops are observe-first: their timeouts are canaries to learn the tail, not measurements.\n")
			break
		}
	}
	return b.String()
}

func width(names []string) int {
	w := 0
	for _, n := range names {
		w = max(w, utf8.RuneCountInString(visible(n)))
	}
	return w
}

// actionOf is the recommendation's action for a hop.
func actionOf(rep *analyze.Report, hop string) string {
	for _, h := range rep.Hops {
		if h.Hop == hop {
			return h.Recommendation.Action
		}
	}
	return ""
}
