// The check command: its flags and usage (policies, gates, retry model); runs check.Run and renders its report.

package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tailscope/tailscope/check"
	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/replay"
	"github.com/tailscope/tailscope/report"
)

const checkUsage = `Usage: tailscope check --policy FILE [--policy FILE...] [--baseline FILE] [gates] PATH...

Validates proposed timeout/retry policies before rollout. Each policy is
linted against what the logs show and every logged request is replayed
under it: success (a range when censored attempts leave outcomes
undetermined), p50/p95/p99 over all requests at the time each ended, where
failures land, mean time to failure, retry time spent and wasted. Several
policies give a side-by-side table.

Every policy is also held to the request-level false-timeout target: the
lint fails-logged-successes is an error when a policy fails more of the
requests that succeeded as logged than --max-false-timeouts (default
--false-timeouts, 0.1%), with or without gates.

Exit codes: 0 every policy passes, 3 a lint error or a failed gate,
1 an input error, 2 a usage error, 4 or 134 a crash (a bug), 130/143
interrupted. Undetermined requests count against gates unless --optimistic.

Examples:
  tailscope check --policy proposed.yaml logs/
  tailscope check --policy new.yaml --baseline current.yaml --no-worse --min-success 0.99 logs/
  tailscope check --policy A.yaml --policy B.yaml --format markdown spans.jsonl
`

// checkFlags are the flags of check (and demo, which runs check).
type checkFlags struct {
	policies       []string
	baseline       string
	minSuccess     float64
	maxP95         string
	maxP99         string
	maxFailureTime string
	noWorse        bool
	tolerance      float64
	optimistic     bool
	retryModel     string
	maxFalse       string
	maxPredicted   string
}

func (c *checkFlags) registerModel(fs interface {
	StringVar(*string, string, string, string)
}) {
	fs.StringVar(&c.retryModel, "retry-model", replay.ModelSame, "attempts beyond those logged: same (reuse the last one: persistent slowness) or independent (drawn from the hop's attempts)")
}

// parseDur reads a duration flag: at most policy.MaxDuration (1000h), the
// bound of the policy file, so that the arithmetic holds.
func parseDur(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 || d > policy.MaxDuration {
		return 0, fmt.Errorf("%q: want a duration like 3s or 800ms, at most 1000h", s)
	}
	return d, nil
}

func (c *checkFlags) options() (check.Options, error) {
	o := check.Options{Replay: replay.Options{RetryModel: c.retryModel}, Names: flagNames}
	if c.retryModel != replay.ModelSame && c.retryModel != replay.ModelIndependent {
		return o, usagef("--retry-model %q: want same or independent", c.retryModel)
	}
	g := check.Gates{MinSuccess: c.minSuccess, NoWorse: c.noWorse, Tolerance: c.tolerance, Optimistic: c.optimistic}
	if g.MinSuccess > 1 && g.MinSuccess <= 100 {
		g.MinSuccess /= 100 // --min-success 99 means 99%
	}
	if g.MinSuccess < 0 || g.MinSuccess > 1 {
		return o, usagef("--min-success %g: want a fraction like 0.99 (or a percentage like 99)", c.minSuccess)
	}
	for _, x := range []struct {
		flag, v string
		dst     *time.Duration
	}{{"max-p95", c.maxP95, &g.MaxP95}, {"max-p99", c.maxP99, &g.MaxP99}, {"max-failure-time", c.maxFailureTime, &g.MaxFailureTime}} {
		if x.v == "" {
			continue
		}
		d, err := parseDur(x.v)
		if err != nil {
			return o, usagef("--%s: %v", x.flag, err)
		}
		if d == 0 {
			// Zero means "no gate" inside: a gate of zero would pass
			// anything, the opposite of what was asked.
			return o, usagef("--%s %s: want a duration above 0 (no request takes no time); leave the flag out for no gate", x.flag, x.v)
		}
		*x.dst = d
	}
	if c.noWorse && c.baseline == "" {
		return o, usagef("--no-worse needs --baseline FILE (the policy in force)")
	}
	if c.tolerance < 0 {
		return o, usagef("--tolerance %g: want a fraction ≥ 0", c.tolerance)
	}
	o.Gates = g
	if c.maxFalse != "" {
		v, err := parseRate("max-false-timeouts", c.maxFalse)
		if err != nil {
			return o, err
		}
		o.MaxFalseTimeouts = rateOption(v)
	}
	if c.maxPredicted != "" {
		v, err := parseRate("max-predicted-false-timeouts", c.maxPredicted)
		if err != nil {
			return o, err
		}
		if v <= 0 {
			return o, usagef("--max-predicted-false-timeouts %s: want a share above 0 (omit the flag for no gate)", c.maxPredicted)
		}
		o.MaxPredicted = v
	}
	if c.baseline != "" {
		p, err := policy.Load(c.baseline)
		if err != nil {
			return o, err
		}
		o.Baseline = p
	}
	return o, nil
}

// distinctNames gives policies that share a name (the file's base name,
// or its name: key) their paths as names, and numbers what is still the
// same (one file given twice), so that every CONFIG label and verdict
// line names one policy. nil entries are skipped.
func distinctNames(pols []*policy.Policy) {
	count := func() map[string]int {
		n := map[string]int{}
		for _, p := range pols {
			if p != nil {
				n[p.Name]++
			}
		}
		return n
	}
	n := count()
	for _, p := range pols {
		if p != nil && n[p.Name] > 1 && p.Path != "" {
			p.Name = p.Path
		}
	}
	n = count()
	seen := map[string]int{}
	for _, p := range pols {
		if p != nil && n[p.Name] > 1 {
			seen[p.Name]++
			if k := seen[p.Name]; k > 1 {
				p.Name = fmt.Sprintf("%s (%d)", p.Name, k)
			}
		}
	}
}

func runCheck(e *env, args []string) error {
	fs := newFlags(e, "check", checkUsage)
	var in inputFlags
	var out outputFlags
	var an analysisFlags
	var c checkFlags
	fs.StringArrayVar(&c.policies, "policy", nil, "a proposed policy file (YAML or JSON), or an Envoy, gRPC, Istio or Linkerd config (sniffed); repeat to compare several")
	fs.StringVar(&c.baseline, "baseline", "", "the policy in force, replayed beside the others and used by --no-worse")
	fs.Float64Var(&c.minSuccess, "min-success", 0, "gate: replayed success rate at least this (0.99 or 99)")
	fs.StringVar(&c.maxP95, "max-p95", "", "gate: replayed request p95 at most this (e.g. 5s)")
	fs.StringVar(&c.maxP99, "max-p99", "", "gate: replayed request p99 at most this")
	fs.StringVar(&c.maxFailureTime, "max-failure-time", "", "gate: no request may take longer than this to fail")
	fs.BoolVar(&c.noWorse, "no-worse", false, "gate: success must not drop and p95/p99 not rise beyond --tolerance versus --baseline")
	fs.Float64Var(&c.tolerance, "tolerance", 0.05, "allowed relative rise of p95/p99 for --no-worse")
	fs.BoolVar(&c.optimistic, "optimistic", false, "count undetermined (censored) requests as successes in gates")
	fs.StringVar(&c.maxFalse, "max-false-timeouts", "", "lint fails-logged-successes is an error when a policy fails more than this share\nof the requests that succeeded as logged (default: --false-timeouts)")
	fs.StringVar(&c.maxPredicted, "max-predicted-false-timeouts", "", "lint false-timeouts-out-of-sample is an error when the predicted share of successful\nrequests a policy fails on new traffic (95% upper bound) is above this (e.g. 1%);\nwithout it the finding is a warning")
	c.registerModel(fs)
	out.register(fs)
	an.register(fs)
	in.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := out.check(); err != nil {
		return err
	}
	if len(c.policies) == 0 {
		return usagef("no --policy given: name at least one policy file to check")
	}
	if err := notAnInput(e, out.output, fs.Args(), c.policies, named(c.baseline, an.policyInForce)); err != nil {
		return err
	}
	copt, err := c.options()
	if err != nil {
		return err
	}
	aopt, err := an.options()
	if err != nil {
		return err
	}
	pols, err := policy.LoadAll(c.policies)
	if err != nil {
		return err
	}
	distinctNames(append(pols, copt.Baseline))
	l, err := load(e, fs.Args(), &in)
	if err != nil {
		return err
	}
	if aopt.PolicyInForce == nil && copt.Baseline != nil && copt.Baseline.Config == nil {
		// A baseline that is a deployed config maps to hops only after
		// the analysis: the timeouts in force are then inferred.
		aopt.PolicyInForce = copt.Baseline
	}
	if copt.MaxFalseTimeouts == 0 {
		copt.MaxFalseTimeouts = aopt.FalseTimeouts
	}
	rep := l.Report(aopt)
	if len(l.Requests) == 0 {
		// Nothing to replay can prove nothing: never a pass.
		return fmt.Errorf("no requests to replay in %s (%d spans used): check needs whole traces", strings.Join(fs.Args(), ", "), l.Stats.Used)
	}
	cr := check.Run(rep, l.Requests, pols, copt)
	if err := out.write(e, func(w io.Writer) error {
		return report.Check(w, out.format, cr, renderOptions(e, out.output))
	}); err != nil {
		return err
	}
	if cr.Verdict == check.Fail {
		return errViolation
	}
	return nil
}
