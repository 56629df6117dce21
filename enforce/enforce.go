// Package enforce applies a tailscope policy file at run time, in the
// process that makes the calls: the same file that `tailscope recommend`
// writes and `tailscope check` replays, with the replay's semantics
// (docs/DESIGN.md §13), so that what check predicted is what runs.
//
// Two rules set it apart from retry libraries. A retry is started only when
// the time left for the request covers the backoff and one whole attempt
// (with budget_aware): a retry that cannot finish is not sent. And giving
// up returns a *Degraded that says which part is missing in plain words and
// whether trying again could help, never the raw error text, so that a
// downstream reader (a person, a template, a language model) does not carry
// on with an error message as if it were content.
//
//	pol, err := enforce.Load("policy.yaml")
//	ctx, done := pol.Request(ctx) // the end-to-end budget starts here
//	defer done()
//	err = pol.Call(ctx, "retrieve", func(ctx context.Context) error { … })
//	var d *enforce.Degraded // on give-up: errors.As(err, &d)
//
// A call goes through Call or Do, through Transport (an http.RoundTripper),
// or through package enforcegrpc's interceptors; each attempt's context
// carries the attempt's deadline, which Transport sends in the
// X-Request-Timeout-Ms header and grpc-go as grpc-timeout. Options.Observe
// is told of every attempt's start and end (outcome and latency): the hook
// for metrics and traces. A hop name the policy does not list runs under
// the default and is reported once (Options.Warn, KindUnknownHop); Check
// refuses such names up front.
//
// The package imports only the standard library and package policy (the
// parser check uses); gRPC lives in enforce/enforcegrpc, so that a service
// without gRPC does not link it. It must not read logs, print (but for the
// once-per-name warning of Options.Warn), or keep state beyond the retry
// throttling that a process shares by design.
package enforce

import (
	"context"
	"log"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/tailscope/tailscope/policy"
)

// Policy is a policy file ready to apply. It is safe for concurrent use;
// one Policy per process (or per downstream) shares its retry throttling
// among all the requests that use it, as gRPC's retryThrottling does per
// channel.
type Policy struct {
	pol      *policy.Policy
	opt      Options
	bucket   *bucket
	observe  func(Event)
	warn     func(string)
	defaults map[string]bool // Options.DefaultHops
	unknown  unknownHops
}

// Options tune how a policy is applied. The zero Options are the defaults.
type Options struct {
	// Throttle holds retry budgets by hop, applied as gRPC's
	// retryThrottling: a bucket per hop starting full at MaxTokens; each
	// failed attempt takes one token, each success adds TokenRatio; retries
	// and hedges are sent only while more than half is left. A hop not
	// listed is not throttled. The policy file does not hold retry budgets
	// (`tailscope recommend --emit` prints them for proxies), so they are
	// given here.
	Throttle map[string]policy.RetryBudget
	// Jitter returns the uniform draw in [0,1) that jitters the backoff
	// before retry k (1, 2, …) of a call to hop. Nil draws at random;
	// a test can pass the replay's own draws (replay.Jitter) to compare a
	// run with the replay exactly.
	Jitter func(ctx context.Context, hop string, k int) float64
	// Retryable says whether a failed attempt's error may be retried. Nil
	// is DefaultRetryable: what a retry can fix is retried (HTTP 429, 502,
	// 503, 504, connection errors, errors it does not know), what it cannot
	// is not (other HTTP statuses, Permanent, a cancellation); a Retryable
	// of one's own can fall back on it. An error wrapped by Permanent is
	// never retried, and an attempt cut by the hop's timeout always may be.
	Retryable func(error) bool
	// Parts name, by hop, what a hop's answer is to the request in plain
	// words ("the retrieved passages"), for Degraded.Missing; a hop not
	// listed is "the answer from <hop>".
	Parts map[string]string
	// Observe, when not nil, is told of every attempt's start and end
	// (with its outcome and latency), every success, every hedge that won,
	// every give-up and every hop name the policy does not list (see Event
	// and Kind): the hook for metrics. It is called from several
	// goroutines at once and must not block.
	Observe func(Event)
	// Warn is given, once per name, a warning for a call to a hop that the
	// policy does not list (a mistyped "Cart" for "cart" runs under the
	// default): the hop, the policy and the closest listed name. Nil
	// writes it with log.Print; func(string) {} silences it. A policy that
	// lists no hop at all runs every hop under its default by design, and
	// warns of none.
	Warn func(msg string)
	// DefaultHops are hop names that the policy does not list on purpose:
	// they run under the default without a warning, and Check accepts
	// them.
	DefaultHops []string
}

// Load reads a policy file (the format of docs/DESIGN.md §6; every problem
// of the file is reported with its line, as check reports it) and returns
// it ready to apply with the default Options.
func Load(path string) (*Policy, error) {
	return LoadWith(path, Options{})
}

// LoadWith is Load with opt, and with Check: it fails when one of hops,
// the names the service will call, is not in the file (an
// *UnknownHopError for each, joined), so that a mistyped name stops the
// service at start instead of running under the default.
func LoadWith(path string, opt Options, hops ...string) (*Policy, error) {
	p, err := policy.Load(path)
	if err != nil {
		return nil, err
	}
	e := New(p, opt)
	if err := e.Check(hops...); err != nil {
		return nil, err
	}
	return e, nil
}

// New applies an already parsed policy with opt. p must not be changed
// afterwards.
func New(p *policy.Policy, opt Options) *Policy {
	e := &Policy{pol: p, opt: opt, observe: opt.Observe, warn: opt.Warn}
	if len(opt.Throttle) > 0 {
		e.bucket = &bucket{t: policy.NewThrottle(opt.Throttle)}
	}
	if e.observe == nil {
		e.observe = func(Event) {}
	}
	if e.warn == nil {
		e.warn = func(msg string) { log.Print(msg) }
	}
	if len(opt.DefaultHops) > 0 {
		e.defaults = make(map[string]bool, len(opt.DefaultHops))
		for _, h := range opt.DefaultHops {
			e.defaults[h] = true
		}
	}
	return e
}

// For returns the policy a call to hop runs under: the hop's entry, else
// the default. A name the policy does not list (and Options.DefaultHops
// does not name) is reported the first time: see Options.Warn.
func (p *Policy) For(hop string) policy.Hop {
	if h, ok := p.pol.Hops[hop]; ok {
		return h
	}
	if len(p.pol.Hops) > 0 && !p.defaults[hop] {
		p.unknownHop(hop)
	}
	return p.pol.Default
}

// Policy returns the policy being applied.
func (p *Policy) Policy() *policy.Policy { return p.pol }

// Request starts one request's end-to-end budget: the returned context's
// deadline is the policy's budget from now (or the deadline ctx already
// has, when sooner). Every Call made with it, or with a context derived
// from it (nested calls inside an attempt included), sees what is left:
// retries that would not fit are not sent, and attempts are cut when it
// runs out. done releases the budget's timer; call it when the request
// ends. A policy without a budget bounds nothing here.
func (p *Policy) Request(ctx context.Context) (context.Context, context.CancelFunc) {
	if p.pol.Budget > 0 {
		return context.WithTimeout(ctx, p.pol.Budget)
	}
	return context.WithCancel(ctx)
}

// Left is the time left before ctx's deadline (the request's budget, or
// the deadline of the attempt ctx belongs to, whichever is sooner), and
// false when ctx has no deadline. A handler can use it to pick a cheaper
// path when little is left.
func Left(ctx context.Context) (time.Duration, bool) {
	d, ok := ctx.Deadline()
	if !ok {
		return 0, false
	}
	return time.Until(d), true
}

// jitter is the draw for the backoff before retry k.
func (p *Policy) jitter(ctx context.Context, hop string, k int) float64 {
	if p.opt.Jitter != nil {
		u := p.opt.Jitter(ctx, hop, k)
		if u >= 0 && u < 1 {
			return u
		}
		return 0 // a draw outside [0,1) would stretch the backoff past its max
	}
	return rand.Float64()
}

// retryable says whether err, a failed attempt's error, may be retried.
func (p *Policy) retryable(err error) bool {
	if IsPermanent(err) {
		return false
	}
	if p.opt.Retryable != nil {
		return p.opt.Retryable(err)
	}
	return DefaultRetryable(err)
}

// bucket is the retry throttling shared by a Policy (policy.Throttle,
// the rule the replay runs too) under its lock, as gRPC's retryThrottling
// keeps it per channel. A nil bucket allows everything.
type bucket struct {
	mu sync.Mutex
	t  *policy.Throttle
}

// allows reports whether hop may send a retry or a hedge now.
func (b *bucket) allows(hop string) bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.t.Allows(hop)
}

// count adds an attempt's outcome to hop's tokens.
func (b *bucket) count(hop string, ok bool) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.t.Count(hop, ok)
}
