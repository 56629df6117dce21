// Package check validates proposed policies before rollout: it lints each
// policy against what the logs show, replays the logged requests under it,
// and applies the user's gates. Its Report is the tailscope.check/v1
// contract (docs/DESIGN.md §8).
//
// It uses the analysis (failure classes, percentiles) and the replay; it
// never reads files or renders.
package check

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/option"
	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/recommend"
	"github.com/tailscope/tailscope/replay"
	"github.com/tailscope/tailscope/span"
)

// Schema is the value of the report's "schema" key.
const Schema = "tailscope.check/v1"

// Verdicts.
const (
	Pass = "pass"
	Fail = "fail"
)

// Options tune a check.
type Options struct {
	Replay replay.Options
	Gates  Gates
	// Baseline is the policy in force, compared against with NoWorse.
	Baseline *policy.Policy
	// MaxFalseTimeouts is the share of the requests that succeeded as
	// logged that a policy may fail in replay before the
	// fails-logged-successes finding is an error (0:
	// analyze.DefaultFalseTimeouts; negative: none).
	MaxFalseTimeouts float64
	// MaxPredicted gates the predicted out-of-sample false-timeout share
	// (analyze.PredictFalseTimeouts): above it the
	// false-timeouts-out-of-sample finding is an error. 0: no gate, the
	// finding is a warning (a small sample cannot certify a target, and is
	// told so, without failing a right answer).
	MaxPredicted float64
	// Names names the settings the findings and gates mention (Gates.Optimistic,
	// MaxPredicted) as the caller's user knows them; nil: by option's names.
	Names option.Names
}

// Report is the tailscope.check/v1 document.
type Report struct {
	Schema string `json:"schema"`
	// ReadStats are the analysis report's (see analyze.ReadStats).
	analyze.ReadStats
	Requests int               `json:"requests"`
	Baseline *Result           `json:"baseline,omitempty"`
	Results  []Result          `json:"results"`
	Verdict  string            `json:"verdict"`
	Warnings []analyze.Warning `json:"warnings"`
}

// PolicyRef names a policy and gives its normalised content.
type PolicyRef struct {
	Name    string             `json:"name"`
	Path    string             `json:"path"`
	Content *analyze.PolicyDoc `json:"content"`
}

// Finding is one lint result.
type Finding struct {
	Code     string `json:"code"`
	Severity string `json:"severity"` // error, warning, info
	Hop      string `json:"hop"`      // "" for findings about the whole policy
	Message  string `json:"message"`
}

// The replay section of a result and its parts are the replay package's
// report form.
type (
	Replay        = replay.Summary
	Range         = replay.Range
	ReplayLatency = replay.Latency
	FailureTimes  = replay.FailureTimes
	RetryTime     = replay.RetryTime
)

// Gate is one pass/fail condition.
type Gate struct {
	Name string `json:"name"`
	Want string `json:"want"`
	Got  string `json:"got"`
	Pass bool   `json:"pass"`
}

// Result is one policy's check.
type Result struct {
	Policy  PolicyRef `json:"policy"`
	Lint    []Finding `json:"lint"`
	Replay  Replay    `json:"replay"`
	Gates   []Gate    `json:"gates"`
	Verdict string    `json:"verdict"`
	// Predicted bounds what the policy would fail of the requests that
	// succeed on new traffic (see analyze.Prediction).
	Predicted *analyze.Prediction `json:"predicted_false_timeouts,omitempty"`

	// Summary fields for tables (not part of the contract).
	HopTimeout string `json:"hop_timeout"`
	Retries    string `json:"retries"`
	Budget     string `json:"budget"`
}

// ReplayOf converts a replay result to its report form.
func ReplayOf(r *replay.Result) Replay { return r.Summary() }

// Run checks each policy against the requests. rep is the analysis of the
// same logs (for lint rules that need classes and percentiles).
func Run(rep *analyze.Report, reqs []*span.Request, pols []*policy.Policy, opt Options) *Report {
	out := &Report{
		Schema: Schema, ReadStats: rep.ReadStats, Requests: len(reqs), Results: []Result{}, Verdict: Pass,
		Warnings: rep.Warnings,
	}
	var base *replay.Result
	if opt.Baseline != nil {
		bp := opt.Baseline
		var readback []Finding
		if bp.Config != nil {
			bp, readback = readBack(rep, bp)
		}
		base = replay.Run(reqs, bp, opt.Replay)
		b := resultOf(rep, bp, base)
		b.Lint = append(Lint(rep, reqs, bp), readback...)
		b.Verdict = ""
		out.Baseline = &b
	}
	for _, p := range pols {
		// A deployed config is the per-hop policy its routes give the
		// logged calls, with findings on what it does not cover.
		var readback []Finding
		if p.Config != nil {
			p, readback = readBack(rep, p)
		}
		rr := replay.Run(reqs, p, opt.Replay)
		res := resultOf(rep, p, rr)
		res.Lint = append(Lint(rep, reqs, p), readback...)
		if f := LoggedSuccesses(rr, opt.MaxFalseTimeouts); f != nil {
			res.Lint = append([]Finding{*f}, res.Lint...)
		}
		res.Predicted = analyze.PredictFalseTimeouts(rep, reqs, p, analyze.FalseTimeoutTarget(analyze.Options{FalseTimeouts: opt.MaxFalseTimeouts}))
		if f := OutOfSample(res.Predicted, opt.MaxPredicted, opt.Names); f != nil {
			res.Lint = append(res.Lint, *f)
		}
		gates := opt.Gates
		gates.unknownOutcomes = rep.Requests.SucceededInferred
		gates.names = opt.Names
		res.Gates = gates.Apply(rr, base)
		res.Verdict = Pass
		for _, f := range res.Lint {
			if f.Severity == SevError {
				res.Verdict = Fail
			}
		}
		for _, g := range res.Gates {
			if !g.Pass {
				res.Verdict = Fail
			}
		}
		if res.Verdict == Fail {
			out.Verdict = Fail
		}
		out.Results = append(out.Results, res)
	}
	return out
}

func resultOf(rep *analyze.Report, p *policy.Policy, rr *replay.Result) Result {
	res := Result{
		Policy: PolicyRef{Name: p.Name, Path: p.Path, Content: recommend.DocOf(p)},
		Lint:   []Finding{}, Gates: []Gate{}, Replay: ReplayOf(rr),
	}
	res.HopTimeout, res.Retries = summarise(rep, p)
	if p.Budget > 0 {
		res.Budget = units.Duration(p.Budget)
	} else {
		res.Budget = "none"
	}
	return res
}

// policyFor is the policy a hop's calls get (policy.Policy.ForCall): by
// the hop's role in the trees, else by its span kind.
func policyFor(p *policy.Policy, h *analyze.Hop) policy.Hop {
	if h.Role == "" {
		return p.ForCall(h.Hop, span.CallerSide(h.Kind))
	}
	return p.ForCall(h.Hop, h.Role == analyze.RoleCall)
}

// summarise gives the hop timeout and retries of a policy for a table:
// one value when every hop in the logs gets the same, else a range.
func summarise(rep *analyze.Report, p *policy.Policy) (string, string) {
	var tMin, tMax time.Duration = -1, -1
	rMin, rMax := -1, -1
	for _, h := range rep.Hops {
		if h.Role != "" && h.Role != analyze.RoleCall && !p.Listed(h.Hop) {
			continue // no call of its own: no timeout of its own to show
		}
		hp := policyFor(p, &h)
		if tMin < 0 || hp.Timeout < tMin {
			tMin = hp.Timeout
		}
		if hp.Timeout > tMax {
			tMax = hp.Timeout
		}
		if rMin < 0 || hp.Retries < rMin {
			rMin = hp.Retries
		}
		if hp.Retries > rMax {
			rMax = hp.Retries
		}
	}
	if tMin < 0 {
		tMin, tMax, rMin, rMax = p.Default.Timeout, p.Default.Timeout, p.Default.Retries, p.Default.Retries
	}
	ts := fdNone(tMin)
	if tMax != tMin {
		ts = fdNone(tMin) + "–" + fdNone(tMax)
	}
	rs := itoa(rMin)
	if rMax != rMin {
		rs = itoa(rMin) + "–" + itoa(rMax)
	}
	return ts, rs
}

func itoa(i int) string {
	if i < 0 {
		return "?"
	}
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

// LoggedSuccesses is the fails-logged-successes finding: the requests that
// succeeded as logged but fail when the policy is replayed on the same
// logs. Above max (a share of the logged successes; see
// Options.MaxFalseTimeouts) it is an error, because a policy that breaks
// requests the current setup serves is not safe to roll out, whatever the
// gates say; below it, a warning when any fail. It returns nil when none
// do. Undetermined outcomes (censored attempts) are not counted as
// failures, only mentioned.
// OutOfSample is the false-timeouts-out-of-sample finding: the predicted
// share of successful requests on new traffic that the policy fails is
// above the target. A warning unless gate > 0, then an error above gate
// (named by names: option.MaxPredictedFalseTimeouts).
func OutOfSample(pr *analyze.Prediction, gate float64, names option.Names) *Finding {
	if pr == nil || len(pr.Hops) == 0 {
		return nil
	}
	limit, what := pr.Target, "target"
	if gate > 0 {
		limit, what = gate, names.Of(option.MaxPredictedFalseTimeouts)
	}
	if pr.Upper <= limit+1e-12 {
		return nil
	}
	sev := SevWarning
	if gate > 0 {
		sev = SevError
	}
	msg := fmt.Sprintf("on new traffic this policy may fail up to %s of requests that succeed (%s confidence, distribution-free; expected %s), above the %s %s",
		units.Percent(pr.Upper, 3), units.Percent(pr.Level, 3), units.Percent(pr.Expected, 3), units.Percent(limit, 3), what)
	if ir := pr.Incidents; ir != nil {
		msg = fmt.Sprintf("on new traffic this policy may fail up to %s of requests that succeed (%s confidence), above the %s %s: traffic like the logs' up to %s (distribution-free; expected %s); incidents like the logs' (%s on %s, %d of %d blocks, %s× slower at the median) on hops it was not fitted for, up to %s more",
			units.Percent(pr.Upper, 3), units.Percent(pr.Level, 3), units.Percent(limit, 3), what, units.Percent(pr.ExchangeableUpper, 3), units.Percent(pr.Expected, 3),
			units.Count(ir.Incidents, "incident", "incidents"), units.Count(ir.Hops, "hop", "hops"), ir.Blocks, ir.OfBlocks, units.Decimal(ir.Slowdown, 1), units.Percent(ir.Upper, 3))
	}
	if pr.Advice != "" {
		msg += ": " + pr.Advice
	}
	return &Finding{Code: CodeOutOfSample, Severity: sev, Message: msg}
}

func LoggedSuccesses(rr *replay.Result, max float64) *Finding {
	target := analyze.FalseTimeoutTarget(analyze.Options{FalseTimeouts: max})
	var ok, failed, undetermined int
	byHop := map[string]int{}
	var examples []string
	for _, o := range rr.Outcomes {
		if !o.LoggedOK {
			continue
		}
		ok++
		switch {
		case o.Undetermined:
			undetermined++
		case !o.OK:
			failed++
			byHop[o.FailedHop]++
			if len(examples) < 3 && o.TraceID != "" {
				examples = append(examples, o.TraceID)
			}
		}
	}
	if failed == 0 {
		return nil
	}
	share := float64(failed) / float64(ok)
	sev := SevWarning
	verdict := "within"
	if share > target+1e-12 {
		sev, verdict = SevError, "above"
	}
	hops := make([]string, 0, len(byHop))
	for h := range byHop {
		hops = append(hops, h)
	}
	sort.Slice(hops, func(i, j int) bool {
		if byHop[hops[i]] != byHop[hops[j]] {
			return byHop[hops[i]] > byHop[hops[j]]
		}
		return hops[i] < hops[j]
	})
	var cut []string
	for i, h := range hops {
		if i == 5 {
			cut = append(cut, fmt.Sprintf("%d more", len(hops)-5))
			break
		}
		cut = append(cut, fmt.Sprintf("%s %d", h, byHop[h]))
	}
	msg := fmt.Sprintf("%d of %d requests that succeeded as logged fail under this policy (%s, %s the %s target); cut by %s",
		failed, ok, units.Percent(share, 2), verdict, units.Percent(target, 2), strings.Join(cut, ", "))
	if len(examples) > 0 {
		msg += "; e.g. trace " + strings.Join(examples, ", ")
	}
	if undetermined > 0 {
		msg += fmt.Sprintf("; %d more undetermined (censored attempts)", undetermined)
	}
	return &Finding{Code: "fails-logged-successes", Severity: sev, Message: msg}
}
