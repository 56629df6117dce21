package enforce_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tailscope/tailscope/enforce"
	"github.com/tailscope/tailscope/policy"
)

// histogram is the one method the hook needs of a histogram. Prometheus'
// prometheus.Observer (what HistogramVec.WithLabelValues returns) has it
// as it is; an OpenTelemetry metric.Float64Histogram is one small type
// away:
//
//	type otelHistogram struct {
//		h     metric.Float64Histogram
//		attrs metric.MeasurementOption // metric.WithAttributes(attribute.String("hop", hop), …)
//	}
//
//	func (o otelHistogram) Observe(v float64) { o.h.Record(context.Background(), v, o.attrs) }
type histogram interface{ Observe(seconds float64) }

// metricsHook feeds two histograms from Options.Observe: every attempt's
// latency by hop and outcome, and every call's time by hop and result
// ("ok", or the give-up's reason). Each argument returns the histogram of
// a set of label values; with Prometheus:
//
//	attempts := prometheus.NewHistogramVec(prometheus.HistogramOpts{
//		Name: "enforce_attempt_seconds", Buckets: prometheus.DefBuckets}, []string{"hop", "outcome"})
//	calls := prometheus.NewHistogramVec(prometheus.HistogramOpts{
//		Name: "enforce_call_seconds", Buckets: prometheus.DefBuckets}, []string{"hop", "result"})
//	hook := metricsHook(
//		func(l ...string) histogram { return attempts.WithLabelValues(l...) },
//		func(l ...string) histogram { return calls.WithLabelValues(l...) })
func metricsHook(attempts, calls func(labels ...string) histogram) func(enforce.Event) {
	return func(e enforce.Event) {
		switch e.Kind {
		case enforce.KindAttemptEnd:
			attempts(e.Hop, string(e.Outcome)).Observe(e.Latency.Seconds())
		case enforce.KindSuccess:
			calls(e.Hop, "ok").Observe(e.Elapsed.Seconds())
		case enforce.KindGiveUp:
			calls(e.Hop, string(e.Reason)).Observe(e.Elapsed.Seconds())
		}
	}
}

// vec is a stand-in for a histogram vector: observations by label values.
type vec struct {
	name string
	mu   sync.Mutex
	obs  map[string][]float64
}

type bound struct {
	v      *vec
	labels string
}

func (b bound) Observe(s float64) {
	b.v.mu.Lock()
	defer b.v.mu.Unlock()
	b.v.obs[b.labels] = append(b.v.obs[b.labels], s)
}

func (v *vec) with(labels ...string) histogram { return bound{v, strings.Join(labels, ",")} }

func (v *vec) print() {
	v.mu.Lock()
	defer v.mu.Unlock()
	var keys []string
	for k := range v.obs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Printf("%s{%s} count %d\n", v.name, k, len(v.obs[k]))
	}
}

// Observe tells every attempt's end with its outcome and latency, and
// every call's end: enough to feed Prometheus or OpenTelemetry histograms
// of attempt latency by outcome and of call time by result.
func Example_histograms() {
	p := &policy.Policy{Name: "shop", Default: policy.Hop{Timeout: time.Second},
		Hops: map[string]policy.Hop{
			"cart":   {Timeout: time.Second, Retries: 1},
			"search": {Timeout: 50 * time.Millisecond, Retries: 1},
		}}
	attempts := &vec{name: "enforce_attempt_seconds", obs: map[string][]float64{}}
	calls := &vec{name: "enforce_call_seconds", obs: map[string][]float64{}}
	pol := enforce.New(p, enforce.Options{Observe: metricsHook(attempts.with, calls.with)})

	// cart: a 503, then an answer; search: two attempts cut by its 50ms timeout.
	pol.Call(context.Background(), "cart", func(ctx context.Context) error {
		if a, _ := enforce.AttemptOf(ctx); a.N == 1 {
			return enforce.HTTPStatus(503)
		}
		return nil
	})
	pol.Call(context.Background(), "search", func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	})
	attempts.print()
	calls.print()
	// Output:
	// enforce_attempt_seconds{cart,error} count 1
	// enforce_attempt_seconds{cart,ok} count 1
	// enforce_attempt_seconds{search,timeout} count 2
	// enforce_call_seconds{cart,ok} count 1
	// enforce_call_seconds{search,timeout} count 1
}
