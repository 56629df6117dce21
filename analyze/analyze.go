// Package analyze turns spans into the statistics of the tailscope report
// (docs/DESIGN.md §4, §8): per-hop attempts, calls, failures and latency
// percentiles; the failure-time histogram and failure class; retry yield;
// the timeout in force; request outcomes; where the tail comes from; the
// tail model and the out-of-sample bound; warnings; and the streaming state
// (Accum) that keeps them over logs too large to hold.
//
// It sees spans and the trees package span rebuilt from them, never a file
// format, and it never renders: the Report it returns carries every number
// a renderer shows, with JSON tags that are the tailscope.report/v1 contract.
// Package recommend, above it, fills the report's recommendation; the
// report's types for it (PolicyDoc, RecommendationCheck, Effect) are data
// here, so that renderers and check read one model.
package analyze

import (
	"fmt"
	"github.com/tailscope/tailscope/internal/fastlog"
	"github.com/tailscope/tailscope/route"
	"iter"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/tailscope/tailscope/internal/par"
	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/option"
	"github.com/tailscope/tailscope/quantile"
	"github.com/tailscope/tailscope/span"
	"github.com/tailscope/tailscope/tail"
)

// Schema is the value of the report's "schema" key.
const Schema = "tailscope.report/v1"

// MinSamplesP99 is the number of attempts below which a p99 is flagged as
// resting on too few samples (with fewer than 100, p99 is an interpolation
// between the two largest values).
const MinSamplesP99 = 100

// InForce is what the analysis reads of a policy (a *policy.Policy is
// one, by its CallTimeouts): the timeout a hop's calls get on the
// caller's side or the callee's (policy.Policy.ForCall's rule), the
// retries after it, and the longest backoff before each retry. An
// interface, so that the statistics need not import the policy file's
// package (and its YAML).
type InForce interface {
	CallTimeouts(hop string, callerSide bool) (timeout time.Duration, retries int, backoff []time.Duration)
}

// Options tune an analysis.
type Options struct {
	// PolicyInForce is the policy the logs were recorded under, if known
	// (a *policy.Policy; see InForce for what the analysis reads of it).
	PolicyInForce InForce
	// Percentile is the target percentile of the recommendation (99).
	Percentile float64
	// Margin is added on top of the target percentile (0.10).
	Margin float64
	// MaxBudget caps the recommended budget (0: no cap).
	MaxBudget time.Duration
	// FalseTimeouts is the share of the requests that succeeded as logged
	// which the recommended policy may turn into failures when replayed on
	// the same logs (0: DefaultFalseTimeouts; negative: none at all).
	FalseTimeouts float64
	// HedgeLoad is the share of extra attempts the recommendation may
	// spend on hedges (0.02: about p98 of time to success); 0: no hedges.
	HedgeLoad float64
	// HeldOut turns the held-out validation on or off (recommend/heldout.go):
	// HeldOutAuto (the zero value) runs it when the logs have enough
	// requests.
	HeldOut HeldOutMode
	// Block is the length of the time blocks drift and incidents are
	// measured over (timeline.go); 0 picks one from the logs' span.
	Block time.Duration
	// Names names the settings the report's warnings and notes tell the
	// reader to change (MaxBudget, HedgeLoad, SampleSpans, HopBy,
	// MinSuccess, Optimistic: option.MaxBudget, …) as the caller's user
	// knows them; nil: by option's own names.
	Names option.Names
}

// WithDefaults is opt with the zero values that have a default set to it:
// the p99 target and a 10% margin. The analysis and the recommendation
// both read the options this way.
func (opt Options) WithDefaults() Options {
	if opt.Percentile == 0 {
		opt.Percentile = 99
	}
	if opt.Margin == 0 {
		opt.Margin = 0.10
	}
	return opt
}

// Input describes one file read, or one found under a directory and
// passed over (SkippedReason says why; Format is then empty).
type Input struct {
	File          string `json:"file"`
	Format        string `json:"format"`
	SkippedReason string `json:"skipped_reason,omitempty"`
}

// ReadStats is what reading the logs gave: the inputs, and the spans read,
// used, skipped, filtered and kept with an ignored value (read = spans +
// skipped + filtered). The analysis and the check report both open with it.
type ReadStats struct {
	Inputs          []Input          `json:"inputs"`
	Read            int64            `json:"read"`
	Spans           int64            `json:"spans"`
	Skipped         int64            `json:"skipped"`
	SkippedByReason map[string]int64 `json:"skipped_by_reason"`
	// Filtered counts the spans --since, --until, --hops and
	// --exclude-hops left out: read = spans + skipped + filtered.
	Filtered         int64            `json:"filtered"`
	FilteredByReason map[string]int64 `json:"filtered_by_reason,omitempty"`
	// Ignored counts the spans kept although a value of an optional field
	// could not be read (an attempt "two", a weight of -1), by field in
	// IgnoredByField: the span went on without that value.
	Ignored        int64            `json:"ignored,omitempty"`
	IgnoredByField map[string]int64 `json:"ignored_by_field,omitempty"`
	// Notes are the reader's remarks on the input: files passed over,
	// units that look wrong, values ignored.
	Notes []string `json:"notes,omitempty"`
	// DuplicateSpans counts the spans that repeat a span id already seen
	// in their trace: the call trees keep the first copy only, so the
	// reports' headers say so beside the span count.
	DuplicateSpans int64 `json:"duplicate_spans,omitempty"`
}

// FilesRead counts the inputs that were read: a Tempo block's meta.json,
// bloom filters and index are listed in Inputs with the reason they were
// passed over, and are not files the spans came from.
func (r ReadStats) FilesRead() int {
	n := 0
	for _, in := range r.Inputs {
		if in.SkippedReason == "" {
			n++
		}
	}
	return n
}

// Report is the result of an analysis: the tailscope.report/v1 document.
type Report struct {
	Schema string `json:"schema"`
	ReadStats
	Hops              []Hop      `json:"hops"`
	Requests          Requests   `json:"requests"`
	RecommendedPolicy *PolicyDoc `json:"recommended_policy"`
	// RecommendationCheck is the recommended policy replayed on the logs
	// it came from, against the request-level false-timeout target.
	RecommendationCheck *RecommendationCheck `json:"recommendation_check"`
	// PredictedEffect replays the logs under the policy in force (or takes
	// them as logged) and under the recommendation, side by side.
	PredictedEffect []Effect  `json:"predicted_effect"`
	Warnings        []Warning `json:"warnings"`
	// Timeline is the logs cut into time blocks, and Incidents the blocks
	// in which a hop's latency departed from the rest (timeline.go).
	Timeline  *Timeline  `json:"timeline,omitempty"`
	Incidents []Incident `json:"incidents"`

	// SkipExamples are the first positioned errors, for the text report.
	SkipExamples []string `json:"skip_examples,omitempty"`
	// Sample is set when the logs were too large to keep whole: it says
	// which parts rest on a trace sample, and its size (see Accum).
	Sample *Sample `json:"sample,omitempty"`
	opt    Options

	// TailRanking is the worst-first ranking of the hops that explain the
	// slow and the failed requests, highest first; TailRequests says which
	// requests those are (see ranking.go).
	TailRanking  []TailEntry   `json:"tail_ranking"`
	TailRequests *TailRequests `json:"tail_requests"`
	// HopOrder is the order of Hops: "rank" (the ranking's hops first)
	// or "name".
	HopOrder string `json:"hop_order"`
	// Compare is set by --compare and --compare-window: what changed
	// against another window of logs (see compare.go).
	Compare *Comparison `json:"compare,omitempty"`
	paths   *paths
	// fit is set on a held-out fit's report (MeasureFit): it is
	// recommended on and replayed, never shown (see PredictFalseTimeouts).
	fit bool
	// unbounded is set when the hop names look unbounded (cardinality.go).
	// The analysis finds it, package recommend counts the hops it leaves to
	// the policy's default, and the renderers bound their tables by it; it
	// is not part of the JSON contract, so it travels here, read through
	// UnboundedHops.
	unbounded *Unbounded
	// times are the per-hop attempt times the timeline was cut from
	// (hoptimes.go), kept for the held-out fit (TimesBefore).
	times timesSource
}

// Latency holds percentiles in ms. A nil value is unknown: censored, or no
// samples.
type Latency struct {
	P50  *float64 `json:"p50"`
	P90  *float64 `json:"p90"`
	P95  *float64 `json:"p95"`
	P99  *float64 `json:"p99"`
	P999 *float64 `json:"p999"`
	Max  *float64 `json:"max"`
}

// Censored describes a hop whose attempts were cut by a timeout: their true
// latency is only known to be ≥ the cut.
type Censored struct {
	TimeoutMs float64 `json:"timeout_ms"`
	Attempts  int     `json:"attempts"`
	Fraction  float64 `json:"fraction"`
	// AtLeastMs is the lower bound of every unknown percentile.
	AtLeastMs float64 `json:"at_least_ms"`
	// Unknown lists the percentiles that are unknown ("p99", "max", …).
	Unknown []string `json:"unknown"`
}

// Yield is the direct evidence for or against retries on a hop.
type Yield struct {
	// RetriedCalls is the number of calls that made a second attempt.
	RetriedCalls int `json:"retried_calls"`
	// Recovered is how many of them ended in success.
	Recovered int     `json:"recovered"`
	Rate      float64 `json:"rate"`
	// Transitions count attempt n failed → attempt n+1, by failure kind.
	AfterTimeout     Transition `json:"after_timeout"`
	AfterFastFailure Transition `json:"after_fast_failure"`
}

// Transition counts retries after one kind of failure.
type Transition struct {
	Retried   int `json:"retried"`
	Succeeded int `json:"succeeded"`
}

// Recommendation is what tailscope suggests for a hop.
type Recommendation struct {
	// Action is one of the Action* constants (recommendation.go).
	Action    string  `json:"action"`
	TimeoutMs float64 `json:"timeout_ms"`
	Retries   int     `json:"retries"`
	BackoffMs float64 `json:"backoff_ms"`
	Basis     string  `json:"basis"`
	// Percentile is the time-to-success percentile the timeout was taken
	// at: the requested one, or higher so that the calls a request makes
	// together meet the request-level false-timeout target (0 when the
	// timeout is not a percentile).
	Percentile float64 `json:"percentile,omitempty"`
	// RaisedFromMs is set when replaying the logs raised the timeout: the
	// value before, which cut requests that succeeded as logged.
	RaisedFromMs *float64 `json:"raised_from_ms,omitempty"`
	// Extrapolated is set when the timeout comes from the hop's fitted tail
	// (package tail): it had too few successes for an order statistic to
	// certify its share of the request target.
	Extrapolated bool `json:"extrapolated,omitempty"`
	// Headroom is the drift headroom the timeout carries (timeline.go):
	// the factor it was multiplied by, before any cap; 0 when none.
	Headroom float64 `json:"headroom,omitempty"`
	// Records is the factor the block-by-block check of the extrapolated
	// timeouts added (records.go), when it added one.
	Records float64 `json:"records,omitempty"`
	// Eject is set when the hop's tail or failures concentrate on one
	// instance (see attribution.go): outlier detection, not retries or a
	// longer timeout, is the fix.
	Eject *Eject `json:"eject,omitempty"`

	// Tail is the fitted tail when the timeout was extrapolated from one
	// (package tail), nil otherwise: the out-of-sample bound reports the
	// model's own risk (risk.go), check's rule on timeouts far above the
	// tail measures against it. Not part of the JSON contract.
	Tail *tail.Model `json:"-"`
	// TailNeed is what the recommendation took the hop's tail to need on
	// new traffic before rounding, where it went past the slowest success
	// (an extrapolation, or recommend.MaxExtrapolation × the slowest success where
	// the successes are too few to fit one); 0 otherwise. Check's rule on
	// timeouts far above the tail measures against it, so that it never
	// calls the tool's own extrapolation waste.
	TailNeed time.Duration `json:"-"`
}

// Hop is the analysis of one hop.
type Hop struct {
	Hop             string  `json:"hop"`
	Attempts        int     `json:"attempts"`
	Calls           int     `json:"calls"`
	FailedAttempts  int     `json:"failed_attempts"`
	TimeoutAttempts int     `json:"timeout_attempts"`
	LatencyMs       Latency `json:"latency_ms"`
	// Weighted is set when LatencyMs is weighted by the spans' sampling
	// weights (see weight.go).
	Weighted         bool              `json:"weighted,omitempty"`
	SuccessLatencyMs Latency           `json:"success_latency_ms"`
	Censored         *Censored         `json:"censored"`
	FailureClass     string            `json:"failure_class"`
	Evidence         string            `json:"evidence"`
	FailureHistogram []quantile.Bucket `json:"failure_histogram"`
	// CallFailureHistogram buckets the failed calls by call end − call
	// start (retries and backoff included): with retries on, persistent
	// slowness piles at k×timeout + backoffs.
	CallFailureHistogram []quantile.Bucket `json:"call_failure_histogram"`
	// KMLatencyMs is the Kaplan–Meier time to success (see kmLatency).
	KMLatencyMs Latency `json:"km_latency_ms"`
	// LatencyHistogram is on a log time axis, for charts.
	LatencyHistogram []quantile.Bucket `json:"latency_histogram"`
	TimeoutMs        *float64          `json:"timeout_ms"`
	TimeoutSource    string            `json:"timeout_source"`
	RetryYield       *Yield            `json:"retry_yield"`
	Recommendation   Recommendation    `json:"recommendation"`
	// Kind is the span kind shared by all the hop's spans, "" when they
	// differ or do not say. Callee-side hops (server, consumer, internal)
	// are bounded by their caller's timeout, not by their own.
	Kind string `json:"kind"`
	// Role is what the hop's spans record, from their kind or the shape
	// of the traces: "call" (the caller's record of a remote call: the
	// policy sets its timeout), "callee" (the callee's own record), "in-process"
	// (work inside one service) or "root" (the trace root: the request).
	Role string `json:"role"`
	// Attribution lists the attribute values over-represented in the
	// hop's tail or failures (see attribution.go); Examples are trace ids
	// behind its figures.
	Attribution []Attribution `json:"attribution,omitempty"`
	Examples    *HopExamples  `json:"examples,omitempty"`
	// Gap is the time between this caller-side hop's spans and its
	// callee's server spans (see gap.go); nil when no call pairs up.
	Gap *Gap `json:"gap,omitempty"`
	// Endpoints say where a caller-side hop's calls go: caller, called
	// service, gRPC method or HTTP route, or why they cannot be mapped
	// (see endpoint.go). Emitted configs route by them.
	Endpoints []route.Endpoint `json:"endpoints,omitempty"`
	// Blocks are the hop's calls per time block, aligned with the
	// report's timeline.blocks (hops with at least 10 attempts, over
	// every span read); Drift how far its tail moved between quiet blocks
	// (timeline.go). BlockSample is set when a hop had more attempts than
	// it keeps with their times (hoptimes.go): the share of them the
	// blocks' statistics read, their counts being estimates from it.
	Blocks      []HopBlock `json:"blocks,omitempty"`
	Drift       *Drift     `json:"drift,omitempty"`
	BlockSample float64    `json:"block_sample,omitempty"`

	// target is the time-to-success at the recommendation's percentile,
	// ns; targetKnown is false when it is censored or there are no samples.
	target      float64
	targetKnown bool
	ttsCount    int
	p50TTS      float64
	maxTTS      int64
	// ttsAt is the time-to-success q-quantile, ns; ttsKnown the number of
	// its smallest samples that are certain (below any cut).
	ttsAt    func(q float64) float64
	ttsKnown int
	// ttsAbove counts the time-to-success samples longer than t ns.
	ttsAbove func(t int64) int
	// instances counts the values of each attribute key compared on
	// the hop (for Eject.Instances).
	instances map[string]int
}

// Requests summarises whole requests (traces).
type Requests struct {
	Count     int `json:"count"`
	Succeeded int `json:"succeeded"`
	// SucceededInferred is set when no span of the logs says how it ended
	// (no status, code, error or timeout field: a Nezha CSV export):
	// Succeeded then counts every request that did not fail by a rule of
	// tailscope's, and is an upper bound, not a logged outcome (see
	// WarnUnknownOutcomes).
	SucceededInferred bool `json:"succeeded_inferred,omitempty"`
	// Weighted is set when the latency percentiles and the success rate
	// are weighted by the requests' sampling weights (see weight.go).
	Weighted       bool              `json:"weighted,omitempty"`
	SuccessRate    float64           `json:"success_rate"`
	LatencyMs      Latency           `json:"latency_ms"`
	FailureLanding []quantile.Bucket `json:"failure_landing"`
	// MeanTimeToFailureMs is null when nothing failed.
	MeanTimeToFailureMs *float64 `json:"mean_time_to_failure_ms"`
}

// PolicyDoc is a policy in JSON form (durations in ms).
type PolicyDoc struct {
	BudgetMs float64              `json:"budget_ms"`
	Default  HopPolicy            `json:"default"`
	Hops     map[string]HopPolicy `json:"hops"`
	// Safety is set on the recommended policy only (risk.go): what it
	// loses on the logs it was fitted to, on logs held out of the fit, and
	// what it may lose on new traffic.
	Safety *Safety `json:"safety,omitempty"`
}

// HopPolicy is one hop of a PolicyDoc.
type HopPolicy struct {
	TimeoutMs    float64 `json:"timeout_ms"`
	Retries      int     `json:"retries"`
	BackoffMs    float64 `json:"backoff_ms"`
	BackoffMaxMs float64 `json:"backoff_max_ms,omitempty"`
	Jitter       string  `json:"jitter,omitempty"`
	BudgetAware  bool    `json:"budget_aware"`
	// Hedge is the hop's hedging, nil when none.
	Hedge *HedgeDoc `json:"hedge,omitempty"`
	// RetryBudget is the recommended retry budget of a hop that retries
	// or hedges (see recommend/budget.go); nil otherwise.
	RetryBudget *RetryBudgetDoc `json:"retry_budget,omitempty"`
}

// RetryBudgetDoc is a retry budget in its Envoy (retry_budget), gRPC
// (retryThrottling) and Linkerd (retryBudget) forms, and the logged figures
// it comes from.
type RetryBudgetDoc struct {
	Envoy struct {
		BudgetPercent       float64 `json:"budget_percent"`
		MinRetryConcurrency int     `json:"min_retry_concurrency"`
	} `json:"envoy"`
	GRPC struct {
		MaxTokens  int     `json:"max_tokens"`
		TokenRatio float64 `json:"token_ratio"`
	} `json:"grpc"`
	// Linkerd is a ServiceProfile retryBudget.
	Linkerd struct {
		RetryRatio          float64 `json:"retry_ratio"`
		MinRetriesPerSecond int     `json:"min_retries_per_second"`
		TTL                 string  `json:"ttl"`
	} `json:"linkerd"`
	Observed struct {
		RetriesPerSecond float64 `json:"retries_per_second"`
		RetriesPerCall   float64 `json:"retries_per_call"`
		FailureRate      float64 `json:"failure_rate"`
		InFlightMean     float64 `json:"in_flight_mean"`
		InFlightPeak     int     `json:"in_flight_peak"`
	} `json:"observed"`
}

// HedgeDoc is a hedge in JSON form: the delay after which another
// attempt is sent, and how many at most beyond the first.
type HedgeDoc struct {
	DelayMs float64 `json:"delay_ms"`
	Max     int     `json:"max"`
}

// Warning is a caveat on the results.
type Warning struct {
	Code    string `json:"code"`
	Hop     string `json:"hop,omitempty"`
	Message string `json:"message"`
}

// Measure analyses spans: the statistics of the report, without the
// recommendation (package recommend runs after it and fills that in).
// reqs and probs come from span.Assemble(spans).
func Measure(spans []span.Span, reqs []*span.Request, probs span.Problems, opt Options) *Report {
	return measure(spanPointers(spans), reqs, probs, opt, measureSources{})
}

// MeasureFit is Measure for a fit that only recommends (the held-out
// validation's fit on the earlier requests), over the spans of reqs: each
// request's root, then its attempts in call order (EachCall). The hops'
// attribution and examples, which no recommendation reads, are not
// computed. times, when not nil, are where the fit's timeline blocks come
// from (the whole logs' attempt times before the held-out part, see
// Report.TimesBefore); nil takes them from reqs.
func MeasureFit(reqs []*span.Request, opt Options, times *TimesSource) *Report {
	var spans []*span.Span
	for _, r := range reqs {
		if r.Root != nil {
			spans = append(spans, r.Root)
		}
		EachCall(r.Calls, func(c *span.Call) {
			for _, a := range c.Attempts {
				spans = append(spans, a.Span)
			}
		})
	}
	src := measureSources{fitOnly: true}
	if times != nil {
		src.times = times.s
	}
	return measure(spans, reqs, span.Problems{}, opt, src)
}

// spanPointers points at each of spans, in order: measure reads spans
// through pointers, so that a fit over some requests' spans (MeasureFit)
// need not copy them.
func spanPointers(spans []span.Span) []*span.Span {
	out := make([]*span.Span, len(spans))
	for i := range spans {
		out[i] = &spans[i]
	}
	return out
}

// hopState gives a hop's state accumulated over every span (Accum.hopAcc):
// attribution and examples come from it, since the sample's spans carry no
// attributes. When nil, measure accumulates each hop's spans itself.
type hopState func(name string) *hopAcc

// measureSources is where measure takes what the spans alone cannot give.
type measureSources struct {
	// overAll takes each hop's counts, percentiles and histograms from
	// state (over every span) rather than from the spans, a sample of
	// them.
	overAll bool
	// state gives each hop's accumulated state (nil: from the spans).
	state hopState
	// seen lists every hop for the cardinality rule (cardinality.go); nil
	// takes them from spans.
	seen []hopSeen
	// fitOnly leaves out what only the report shows (attribution and
	// examples): a held-out fit recommends and is not reported.
	fitOnly bool
	// times give each hop's attempt times for the timeline (an Accum's,
	// over every span); a hop they do not know (or every hop, when of is
	// nil) takes them from spans.
	times timesSource
}

// hopInputs is what each hop's numbers are computed from: its spans, its
// calls in the trees, and how many trace roots it names.
type hopInputs struct {
	names []string
	byHop map[string][]*span.Span
	calls map[string][]*span.Call
	roots map[string]int
}

// measure is Measure, with what src gives in place of what the spans alone
// would.
func measure(spans []*span.Span, reqs []*span.Request, probs span.Problems, opt Options, src measureSources) *Report {
	opt = opt.WithDefaults()
	rep := &Report{Schema: Schema, ReadStats: ReadStats{SkippedByReason: map[string]int64{}}, Hops: []Hop{}, Warnings: []Warning{}}
	in := groupByHop(spans, reqs)
	seen := src.seen
	if seen == nil {
		seen = make([]hopSeen, len(in.names))
		for i, n := range in.names {
			seen[i] = hopSeen{name: n, attempts: len(in.byHop[n]), first: firstOf(in.byHop[n][0])}
		}
	}
	rep.unbounded = unboundedHops(seen)
	rep.opt = opt
	rep.fit = src.fitOnly
	hopTable(rep, reqs, in, opt, src)
	addProblemWarnings(rep, probs)
	applyWeights(rep, spans, in.byHop, reqs)
	if len(spans) > 0 && !anyOutcome(spans) {
		rep.Requests.SucceededInferred = true
		rep.Warnings = append(rep.Warnings, Warning{Code: WarnUnknownOutcomes, Message: fmt.Sprintf(
			"no span says how it ended (no status, code, error or timeout field): the %s are counted as succeeded, "+
				"which the logs do not say; success rates are upper bounds, failure classes none, and check's %s "+
				"counts no request as a success unless %s", units.Count(rep.Requests.Count, "request", "requests"), opt.Names.Of(option.MinSuccess), opt.Names.Of(option.Optimistic))})
	}
	assignRoles(rep, reqs)
	rep.Incidents = []Incident{}
	rep.times = withSpanTimes(src.times, spans)
	measureTimeline(rep, reqs, opt)
	return rep
}

// groupByHop gathers each hop's spans and its calls in the trees. The two
// read different inputs: they are built at once.
func groupByHop(spans []*span.Span, reqs []*span.Request) hopInputs {
	in := hopInputs{byHop: map[string][]*span.Span{}, calls: map[string][]*span.Call{}, roots: map[string]int{}}
	// Each list is found by one lookup of its hop's index per span or
	// call (a map assign per append hashed the name twice), and the maps
	// filled once per hop at the end.
	par.Do(func() {
		var g byKey[*span.Span]
		for _, s := range spans {
			if !s.Duplicate {
				g.add(s.Hop, s)
			}
		}
		// A span repeating an id counts too, as it does in the per-hop
		// digests over all spans (Accum): one rule whether the logs fit
		// in the sample or not (the duplicate-span-id warning says so).
		// Only on a hop the trees know: a hop that only repeated ids
		// name has no call to place it.
		for _, s := range spans {
			if s.Duplicate {
				g.addKnown(s.Hop, s)
			}
		}
		g.into(in.byHop)
	}, func() {
		var g byKey[*span.Call]
		var walk func(cs []*span.Call)
		walk = func(cs []*span.Call) {
			for _, c := range cs {
				g.add(c.Hop, c)
				for _, a := range c.Attempts {
					walk(a.Calls)
				}
			}
		}
		for _, r := range reqs {
			walk(r.Calls)
			if r.Root != nil {
				in.roots[r.Root.Hop]++
			}
		}
		g.into(in.calls)
	})
	in.names = make([]string, 0, len(in.byHop))
	for n := range in.byHop {
		in.names = append(in.names, n)
	}
	sort.Strings(in.names)
	return in
}

// byKey gathers values into one list per key, finding a key's list by one
// lookup of its index (groupByHop).
type byKey[T any] struct {
	at    map[string]int
	lists [][]T
}

// add appends v to k's list, starting the list when k is new.
func (g *byKey[T]) add(k string, v T) {
	if g.at == nil {
		g.at = map[string]int{}
	}
	i, ok := g.at[k]
	if !ok {
		i = len(g.lists)
		g.at[k] = i
		g.lists = append(g.lists, nil)
	}
	g.lists[i] = append(g.lists[i], v)
}

// addKnown appends v to k's list only when k already has one.
func (g *byKey[T]) addKnown(k string, v T) {
	if i, ok := g.at[k]; ok {
		g.lists[i] = append(g.lists[i], v)
	}
}

// into sets each key's list in m.
func (g *byKey[T]) into(m map[string][]T) {
	for k, i := range g.at {
		m[k] = g.lists[i]
	}
}

// hopTable fills rep's hops, requests and their warnings. Each hop's
// numbers depend on its own spans, calls and state only, so the hops are
// split over the cores (package par), beside the request statistics,
// which read only reqs. Each hop gets a scratch report to collect its
// warnings in (hopStats adds them, fill replaces them: it only reads the
// report's options and edits its warnings from `from` on); they are
// appended in hop-name order afterwards, as the sequential loop added
// them.
func hopTable(rep *Report, reqs []*span.Request, in hopInputs, opt Options, src measureSources) {
	rep.Hops = make([]Hop, len(in.names))
	hopWarnings := make([][]Warning, len(in.names))
	var tail *Warning
	par.Do(func() {
		par.Ranges(len(in.names), 1, func(_, lo, hi int) {
			for i := lo; i < hi; i++ {
				n := in.names[i]
				scratch := &Report{opt: opt}
				// What no one reads is not computed: in a fit, the
				// report's own figures.
				need := hopNeeds{histograms: !src.fitOnly, report: !src.fitOnly}
				var all *hopAcc
				if src.overAll && src.state != nil {
					all = src.state(n)
				}
				h := hopStats(n, in.byHop[n], in.calls[n], in.roots[n], all, opt, scratch, need)
				switch {
				case src.fitOnly:
				case src.state != nil:
					attribute(&h, src.state(n))
				default:
					attribute(&h, hopAccOf(n, in.byHop[n]))
				}
				rep.Hops[i], hopWarnings[i] = h, scratch.Warnings
			}
		})
	}, func() {
		rep.Requests = requestStats(reqs)
		tail = hiddenTail(reqs)
	})
	for _, ws := range hopWarnings {
		rep.Warnings = append(rep.Warnings, ws...)
	}
	if tail != nil {
		rep.Warnings = append(rep.Warnings, *tail)
	}
}

// assignRoles sets each hop's role from the call trees (hopRoles), or from
// its span kind when no tree shows its place.
func assignRoles(rep *Report, reqs []*span.Request) {
	roles := hopRoles(reqs)
	for i := range rep.Hops {
		h := &rep.Hops[i]
		h.Role = roles[h.Hop]
		if h.Role == "" {
			h.Role = roleOfKind(h.Kind)
		}
	}
}

// TimeToSuccess is a hop's time to success as a recommendation reads it:
// its successes, with the attempts a timeout cut counted as at least their
// cut.
type TimeToSuccess struct {
	// N is the number of samples; Known how many of the smallest are
	// certain (below any cut).
	N, Known int
	// P50 is the median of the certain samples, ns; Max the slowest of
	// them.
	P50 float64
	Max int64
	// At is the q-quantile, ns (nil when the hop has no samples at all).
	At func(q float64) float64
}

// TimeToSuccess returns the hop's time to success.
func (h *Hop) TimeToSuccess() TimeToSuccess {
	return TimeToSuccess{N: h.ttsCount, Known: h.ttsKnown, P50: h.p50TTS, Max: h.maxTTS, At: h.ttsAt}
}

// percentiles fills a Latency from sorted ns values. Ranks at or above
// known (the count of values that are certainly the smallest) are unknown.
func percentiles(sorted []int64, known int) (Latency, []string) {
	return latencyOf(len(sorted), known, func(q float64) float64 { return quantile.Int64(sorted, q) })
}

// latencyOf fills a Latency from n samples, of which the smallest known
// are certain, with at(q) giving the q-quantile in ns. A percentile whose
// ranks reach past known is unknown (censored) and listed by name.
func latencyOf(n, known int, at func(q float64) float64) (Latency, []string) {
	var l Latency
	var unknown []string
	set := func(dst **float64, name string, q float64) {
		if n == 0 {
			return
		}
		if !PercentileKnown(n, known, q) {
			unknown = append(unknown, name)
			return
		}
		*dst = units.RoundPtr(units.MsOf(at(q)), 3)
	}
	set(&l.P50, "p50", 0.50)
	set(&l.P90, "p90", 0.90)
	set(&l.P95, "p95", 0.95)
	set(&l.P99, "p99", 0.99)
	set(&l.P999, "p999", 0.999)
	set(&l.Max, "max", 1)
	return l, unknown
}

// PercentileKnown reports whether the q-quantile (q in [0,1]) of n samples
// only needs the smallest `known` of them.
func PercentileKnown(n, known int, q float64) bool {
	return n > 0 && int(math.Ceil(float64(n-1)*q)) < known
}

// hopNeeds says which of hopStats' figures its caller reads: the latency
// and failure histograms, and the figures only the report shows (a
// held-out fit is not reported: the Kaplan–Meier latency and the calls'
// failure histogram).
type hopNeeds struct {
	histograms, report bool
}

// hopStats is a hop's row. Its counts, percentiles, cut attempts and
// histograms are those of all, the hop's state over every span when the
// spans are a sample of them (an Accum's), else nil and taken from ss
// (hopAcc.stats: one implementation either way); what needs the call
// trees (retry yield, class, the calls' failures, Kaplan–Meier) is from
// ss and cs.
func hopStats(name string, ss []*span.Span, cs []*span.Call, rootCalls int, all *hopAcc, opt Options, rep *Report, need hopNeeds) Hop {
	h := Hop{Hop: name, Calls: len(cs) + rootCalls}
	// The timeout comes first: an error span that ended at it was cut by
	// it (censored) even when it lacks a timeout mark (see cutBy).
	h.Kind = commonKind(ss)
	h.TimeoutMs, h.TimeoutSource = timeoutOf(name, ss, opt)
	T := nsOf(h.TimeoutMs)
	sample := &hopAcc{name: name}
	for _, s := range ss {
		sample.addDurations(s, false)
	}
	if need.report {
		succ, cut := sample.cutValues(T)
		h.KMLatencyMs = kmLatency(succ, cut)
		h.CallFailureHistogram = callFailureHistogram(cs)
	}
	h.RetryYield = retryYield(cs, func(s *span.Span) bool { return cutBy(s, T) })
	// The class reads the sample's failures, as its evidence counts them.
	h.FailedAttempts = sample.failed
	h.FailureClass, h.Evidence = Classify(&h, ss, cs, opt)
	if all == nil {
		all = sample
	}
	all.stats(&h, T, opt, rep, need.histograms)
	return h
}

// mergeAscending returns the ascending union of two ascending slices, in
// a new slice.
func mergeAscending(a, b []int64) []int64 {
	out := make([]int64, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if b[0] < a[0] {
			out, b = append(out, b[0]), b[1:]
		} else {
			out, a = append(out, a[0]), a[1:]
		}
	}
	return append(append(out, a...), b...)
}

func roundMs(ns int64) int64 { return (ns + 500_000) / 1_000_000 * 1_000_000 }

// modeKey returns the most frequent key (the smallest on ties).
func modeKey(m map[int64]int) int64 {
	var best int64
	bc := -1
	for k, c := range m {
		if c > bc || (c == bc && k < best) {
			best, bc = k, c
		}
	}
	return best
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func joinNames(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}

// failureWidth picks a bucket width fine enough to show a pile-up at a
// timeout: about 1% of the largest failure time, on a 1-2-5 ladder. Power
// of two buckets would hide it.
func failureWidth(failed []int64) int64 {
	if len(failed) == 0 {
		return 1
	}
	w := quantile.NiceWidth(failed[len(failed)-1], 100)
	return w
}

// LogHistogram buckets durations on a log axis, 10 buckets per decade, from
// 1 ms: the shape of a latency distribution at any scale.
func LogHistogram(sorted []int64) []quantile.Bucket { return logHistogram(slices.Values(sorted)) }

// logHistogram is LogHistogram over values given in ascending order.
func logHistogram(values iter.Seq[int64]) []quantile.Bucket {
	idx := func(ns int64) int {
		msv := units.Ms(ns)
		if msv < 1 {
			return -1
		}
		return int(math.Floor(10 * fastlog.Log10(msv)))
	}
	edge := func(i int) float64 {
		if i < 0 {
			return 0
		}
		return math.Round(math.Pow(10, float64(i)/10)*1000) / 1000
	}
	var out []quantile.Bucket
	started, cur, count := false, 0, 0
	for x := range values {
		i := idx(x)
		if !started {
			started, cur = true, i
		} else if i != cur {
			out = append(out, quantile.Bucket{FromMs: edge(cur), ToMs: edge(cur + 1), Count: count})
			cur, count = i, 0
		}
		count++
	}
	if !started {
		return []quantile.Bucket{}
	}
	out = append(out, quantile.Bucket{FromMs: edge(cur), ToMs: edge(cur + 1), Count: count})
	return out
}

func requestStats(reqs []*span.Request) Requests {
	rs := Requests{Count: len(reqs), FailureLanding: []quantile.Bucket{}}
	lat := make([]int64, 0, len(reqs))
	var fails []int64
	for _, r := range reqs {
		lat = append(lat, r.Latency())
		if r.Failed {
			fails = append(fails, r.Latency())
		} else {
			rs.Succeeded++
		}
	}
	if rs.Count > 0 {
		rs.SuccessRate = units.Round(float64(rs.Succeeded)/float64(rs.Count), 4)
	}
	quantile.SortInt64(lat)
	rs.LatencyMs, _ = percentiles(lat, len(lat))
	if len(fails) > 0 {
		quantile.SortInt64(fails)
		rs.FailureLanding = quantile.Histogram(fails, quantile.NiceWidth(fails[len(fails)-1], 20))
		var sum float64
		for _, f := range fails {
			sum += float64(f)
		}
		rs.MeanTimeToFailureMs = units.RoundPtr(units.MsOf(sum/float64(len(fails))), 3)
	}
	return rs
}

// WarnUnknownOutcomes is the warning of logs that carry no outcome.
const WarnUnknownOutcomes = "unknown-outcomes"

// anyOutcome reports whether some span says how it ended: a status (ok or
// error), a code, an error kind or a timeout. Trace formats that leave a
// span's status unset still give an HTTP or gRPC code, an error tag or an
// exception when something failed, and flat logs with a status column
// give it on every line; a file with none of them (the Nezha CSVs:
// trace and span ids, pod, operation and times) cannot tell a failure
// from a success, and 300 of 538 requests answered in 0.4 ms by an
// injected "return" fault read as succeeded. It looks at the spans kept
// whole (every span, or the trace sample of large logs).
func anyOutcome(spans []*span.Span) bool {
	for _, s := range spans {
		if s.Status != span.Unset || s.Timeout || s.Code != 0 || s.CodeText != "" {
			return true
		}
	}
	return false
}

func addProblemWarnings(rep *Report, p span.Problems) {
	rep.DuplicateSpans = int64(p.DuplicateSpanIDs)
	add := func(n int, code, msg string) {
		if n > 0 {
			// The singular messages spell the count out ("1 span"): only
			// the plural ones have a verb for it.
			if s, ok := singularProblem[code]; ok && n == 1 {
				msg = s
			} else {
				msg = fmt.Sprintf(msg, n)
			}
			rep.Warnings = append(rep.Warnings, Warning{Code: code, Message: msg})
		}
	}
	add(p.DuplicateSpanIDs, "duplicate-span-id", "%d spans repeat a span id already seen in their trace (a log read twice, or spans delivered twice?): call trees, requests and replay keep the first copy; per-hop attempts and percentiles count every copy")
	add(p.ClockSkew, "clock-skew", "%d child spans in another service than their parent start before it or end after it: the two hosts' clocks disagree")
	add(p.AsyncChildren, "async-children", "%d child spans outlive their parent (in the same service, consumers of a message, or started after the parent ended): work the parent did not wait for; replay does not let it stretch or fail the parent")
	add(p.TooDeep, "trace-too-deep", fmt.Sprintf("%%d spans lie more than %d levels below their trace's top and were left out of the call trees (their per-hop numbers still count)", span.MaxDepth))
	add(p.Orphans, "orphan-span", "%d spans name a parent that is not in the logs; they were treated as top-level calls")
	add(p.Cycles, "parent-cycle", "%d spans sit in a loop of parent links; the loop was broken and they were treated as top-level calls")
}

// commonKind is the kind all spans share, or "".
func commonKind(ss []*span.Span) string {
	if len(ss) == 0 {
		return ""
	}
	k := ss[0].Kind
	for _, s := range ss[1:] {
		if s.Kind != k {
			return ""
		}
	}
	return k
}
