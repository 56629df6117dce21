// The analyze command: its flags and usage, and the flags that shape an analysis (shared by recommend and check).

package main

import (
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/report"
)

const analyzeUsage = `Usage: tailscope analyze [flags] PATH...

Reads span logs and reports, per hop: attempts, calls, failures, latency
percentiles (p50 … p99.9, max; linear interpolation, exact), the
failure-time histogram and failure class (ran-to-timeout, transient, mixed,
none, too-few), retry yield, the timeout in force; then request outcomes,
where failures land, and a recommended policy.

PATH is a file, a directory (recursed), a glob, or - for stdin; .gz and .zst
are decompressed. The format is sniffed from content unless --input says.

The report opens with where the tail comes from: the hops that explain the
slow and the failed requests, worst first (they order the hop table; --sort
name keeps it alphabetical), and the client/server gaps that make a
caller's tail. --compare BASELINE (or --compare-window DURATION) adds what
changed: every hop's p50/p95/p99, failure rate and class in both windows,
ranked by how much its change moves the request tail.

Examples:
  tailscope analyze spans.jsonl
  tailscope analyze --compare last-week/ today/
  tailscope analyze --compare-window 10m spans.jsonl
  tailscope analyze --format json -o report.json logs/
  tailscope analyze --policy-in-force current.yaml --percentile 99.9 traces.json.gz
`

// analysisFlags are the flags that shape an analysis.
type analysisFlags struct {
	policyInForce string
	percentile    float64
	margin        float64
	maxBudget     string
	falseTimeouts string
	hedgeLoad     string
	block         string
}

func (a *analysisFlags) register(fs interface {
	StringVar(*string, string, string, string)
	Float64Var(*float64, string, float64, string)
}) {
	fs.StringVar(&a.policyInForce, "policy-in-force", "", "the policy the logs were recorded under (gives each hop's timeout)")
	fs.Float64Var(&a.percentile, "percentile", 99, "target percentile of the recommended timeouts (99.9 for ~0.1% false timeouts)")
	fs.Float64Var(&a.margin, "margin", 0.10, "margin added on top of the target percentile")
	fs.StringVar(&a.maxBudget, "max-budget", "", "cap on the recommended end-to-end budget (e.g. 20s)")
	fs.StringVar(&a.falseTimeouts, "false-timeouts", "0.1%", "request-level false-timeout target: the share of the requests that succeeded\nas logged that the recommended policy may fail when replayed on them\n(0.1% or 0.001; 0 for none); per-hop percentiles are raised to meet it")
	fs.StringVar(&a.block, "block", "", "length of the time blocks drift and incidents are measured over (e.g. 10m;\ndefault: 10m when the logs span an hour or more, else a sixth of their span)")
	fs.StringVar(&a.hedgeLoad, "hedge-load", "0", "extra attempts the recommendation may spend on hedges (2% hedges at about p98\nof time to success, where a hop's slow attempts are independent draws); 0: no hedges")
}

// parseRate reads a share given as a percentage ("0.1%") or a fraction
// ("0.001").
func parseRate(flag, s string) (float64, error) {
	t := strings.TrimSpace(s)
	pct := strings.HasSuffix(t, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(t, "%"), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, usagef("--%s %q: want a share like 0.1%% or 0.001", flag, s)
	}
	if pct {
		v /= 100
	}
	if v < 0 || v > 1 {
		return 0, usagef("--%s %q: want a share between 0 and 100%%", flag, s)
	}
	return v, nil
}

// rateOption maps a parsed share to analyze's convention (0 means the
// default there, a negative value none at all).
func rateOption(v float64) float64 {
	if v == 0 {
		return -1
	}
	return v
}

func (a *analysisFlags) options() (analyze.Options, error) {
	o := analyze.Options{Percentile: a.percentile, Margin: a.margin, Names: flagNames}
	ft, err := parseRate("false-timeouts", a.falseTimeouts)
	if err != nil {
		return o, err
	}
	o.FalseTimeouts = rateOption(ft)
	if o.HedgeLoad, err = parseRate("hedge-load", a.hedgeLoad); err != nil {
		return o, err
	}
	if o.HedgeLoad >= 0.5 {
		return o, usagef("--hedge-load %q: want a share below 50%%, e.g. 2%%", a.hedgeLoad)
	}
	if a.percentile <= 0 || a.percentile >= 100 {
		return o, usagef("--percentile %g: want a value between 0 and 100, e.g. 99", a.percentile)
	}
	if a.margin < 0 || a.margin > 10 {
		return o, usagef("--margin %g: want a fraction like 0.10", a.margin)
	}
	if a.block != "" {
		d, err := parseDur(a.block)
		if err != nil || d < analyze.MinBlock {
			return o, usagef("--block %q: want a duration of at least %s, e.g. 10m", a.block, analyze.MinBlock)
		}
		o.Block = d
	}
	if a.maxBudget != "" {
		d, err := parseDur(a.maxBudget)
		if err != nil {
			return o, usagef("--max-budget: %v", err)
		}
		o.MaxBudget = d
	}
	if a.policyInForce != "" {
		p, err := policy.Load(a.policyInForce)
		if err != nil {
			return o, err
		}
		if p.Config != nil {
			// A config's routes map to hops only through the analysis
			// that the policy in force feeds.
			return o, usagef("--policy-in-force %s is a deployed %s config: give the policy as a tailscope policy file", a.policyInForce, p.Config.Format)
		}
		o.PolicyInForce = p
	}
	return o, nil
}

func runAnalyze(e *env, args []string) error {
	fs := newFlags(e, "analyze", analyzeUsage)
	var in inputFlags
	var out outputFlags
	var an analysisFlags
	var tf tailFlags
	var traceURL string
	var verbose bool
	out.register(fs)
	an.register(fs)
	tf.register(fs)
	fs.StringVar(&traceURL, "trace-url", "", "link the trace ids the report cites to your trace UI, in HTML and Markdown\n(e.g. https://jaeger.example/trace/{trace_id})")
	fs.BoolVar(&verbose, "verbose", false, "text: each hop's full basis under the recommendation, as JSON, Markdown and HTML\nkeep it in their details (the table says what set the value in a few words)")
	in.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if traceURL != "" {
		if why := report.ValidTraceURL(traceURL); why != "" {
			return usagef("--trace-url %q: %s, e.g. https://jaeger.example/trace/{trace_id}", traceURL, why)
		}
	}
	if err := out.check(); err != nil {
		return err
	}
	if err := tf.check(); err != nil {
		return err
	}
	if err := notAnInput(e, out.output, fs.Args(), tf.compare, named(an.policyInForce)); err != nil {
		return err
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
	if err := tf.apply(e, rep, l, fs.Args(), &in, aopt); err != nil {
		return err
	}
	return out.write(e, func(w io.Writer) error {
		ro := renderOptions(e, out.output)
		ro.TraceURL = traceURL
		ro.Verbose = verbose
		return report.Analysis(w, out.format, rep, ro)
	})
}
