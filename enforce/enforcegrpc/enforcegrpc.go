// Package enforcegrpc applies an enforce.Policy to gRPC client calls: a
// grpc.UnaryClientInterceptor that makes every unary call one enforce call
// (timeouts, retries, hedges, budget, throttling as the policy says), and a
// grpc.StreamClientInterceptor that gives every stream its hop's timeout
// as a deadline.
//
//	pol, err := enforce.Load("policy.yaml")
//	conn, err := grpc.NewClient(target,
//		grpc.WithUnaryInterceptor(enforcegrpc.UnaryClientInterceptor(pol)),
//		grpc.WithStreamInterceptor(enforcegrpc.StreamClientInterceptor(pol)))
//
// Each attempt is invoked with its own context, whose deadline is the
// attempt's (the sooner of the hop's timeout and what is left of the
// request's budget): grpc-go sends it as grpc-timeout, and the server's
// context ends when the client stops waiting. A failed attempt is retried
// when its code is UNAVAILABLE or DEADLINE_EXCEEDED (see RetryableCode),
// unless the policy's Options.Retryable says otherwise. A method that is
// not idempotent (the hop's idempotent key, else its verb: GetCart reads,
// PlaceOrder does not) is neither retried nor hedged, as the service
// configs `tailscope recommend --emit grpc` writes have it: a resend could
// act twice (grpc-go's transparent retry still resends an attempt that
// never left the client). On give-up the call returns an error that is
// both a status (status.Code gives the code, status.Convert a message in
// plain words, the last status's details kept) and the *enforce.Degraded
// (errors.As).
//
// It lives apart from package enforce so that a service without gRPC does
// not link grpc-go. Do not also turn on grpc-go's own retries or hedging
// (a service config's retryPolicy) for the same methods: each of the
// policy's attempts would be retried again.
package enforcegrpc

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/tailscope/tailscope/enforce"
	"github.com/tailscope/tailscope/policy"
)

// Option configures an interceptor.
type Option func(*config)

type config struct {
	hop  func(method string) string
	verb sync.Map // method → whether IdempotentRule calls it idempotent
}

// WithHop names the hop of each method (its full name,
// "/pkg.Service/Method"). The default is MethodHop's.
func WithHop(f func(method string) string) Option {
	return func(c *config) { c.hop = f }
}

func build(p *enforce.Policy, opts []Option) *config {
	c := &config{}
	for _, o := range opts {
		o(c)
	}
	if c.hop == nil {
		c.hop = MethodHop(p)
	}
	return c
}

// MethodHop returns the default naming of a method's hop in p: the
// policy's entry named "pkg.Service/Method" or "/pkg.Service/Method";
// else the one entry named "<caller> pkg.Service/Method (client)", else
// the one named "<service> pkg.Service/Method" (the names a trace's spans
// give hops: `tailscope recommend` writes them); else "pkg.Service/Method",
// which the policy does not list, so that the call runs under the default
// (and the policy warns of it once). When several entries match, name the
// hops with WithHop.
func MethodHop(p *enforce.Policy) func(method string) string {
	var cache sync.Map // method → hop
	return func(method string) string {
		if h, ok := cache.Load(method); ok {
			return h.(string)
		}
		h := methodHop(p, method)
		cache.Store(method, h)
		return h
	}
}

func methodHop(p *enforce.Policy, method string) string {
	name := strings.TrimPrefix(method, "/")
	hops := p.Policy().Hops
	for _, h := range []string{name, method} {
		if _, ok := hops[h]; ok {
			return h
		}
	}
	for _, suffix := range []string{" " + name + " (client)", " " + name} {
		found, n := "", 0
		for h := range hops {
			if strings.HasSuffix(h, suffix) {
				found, n = h, n+1
			}
		}
		if n == 1 {
			return found
		}
	}
	return name
}

// RetryableCode says whether a retry can fix an attempt that ended with c:
// UNAVAILABLE (the server, or the connection to it, is down or shedding
// load; proxies map HTTP 429, 502, 503 and 504 to it) and DEADLINE_EXCEEDED
// (a deadline below the server ran out, while the request still has time:
// an attempt cut by the hop's own timeout is retried whatever its code).
// Not retried: RESOURCE_EXHAUSTED (an application's quota, or a message
// over the size limit: the same on a retry within the backoff), ABORTED
// (the codes' own advice is to retry at a higher level, the whole
// read-modify-write), CANCELLED, and the codes of a request that is wrong
// (INVALID_ARGUMENT, NOT_FOUND, ALREADY_EXISTS, PERMISSION_DENIED,
// UNAUTHENTICATED, FAILED_PRECONDITION, OUT_OF_RANGE, UNIMPLEMENTED) or of
// a server that failed on it (UNKNOWN, INTERNAL, DATA_LOSS).
func RetryableCode(c codes.Code) bool {
	return c == codes.Unavailable || c == codes.DeadlineExceeded
}

// Retryable is a retry predicate for enforce.Options.Retryable that knows
// gRPC status errors (by RetryableCode) and falls back on
// enforce.DefaultRetryable for other errors: for gRPC calls wrapped by
// hand in enforce.Call, which the interceptor does not see.
func Retryable(err error) bool {
	if enforce.IsPermanent(err) {
		return false
	}
	var ae *attemptError
	if errors.As(err, &ae) {
		return ae.retry
	}
	var gs interface{ GRPCStatus() *status.Status }
	if errors.As(err, &gs) && gs.GRPCStatus() != nil {
		var d *enforce.Degraded
		if !errors.As(err, &d) {
			return RetryableCode(gs.GRPCStatus().Code())
		}
	}
	return enforce.DefaultRetryable(err)
}

// attemptError is a failed attempt's error, with its status and whether
// its code may be retried (for enforce.DefaultRetryable).
type attemptError struct {
	err   error
	st    *status.Status
	retry bool
}

func (e *attemptError) Error() string              { return e.err.Error() }
func (e *attemptError) Unwrap() error              { return e.err }
func (e *attemptError) GRPCStatus() *status.Status { return e.st }
func (e *attemptError) Retryable() bool            { return e.retry }

func failed(err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return err // not a status: enforce.DefaultRetryable judges it
	}
	return &attemptError{err: err, st: st, retry: RetryableCode(st.Code())}
}

// giveUp is the error a call that gave up returns: the *enforce.Degraded,
// as a status.
type giveUp struct {
	d  *enforce.Degraded
	st *status.Status
}

func (e *giveUp) Error() string              { return e.d.Error() }
func (e *giveUp) Unwrap() error              { return e.d }
func (e *giveUp) GRPCStatus() *status.Status { return e.st }

// gaveUp turns a Degraded into a status: DEADLINE_EXCEEDED when time ran
// out, CANCELLED when the caller cancelled, else the last attempt's code
// (the refusal's own, for not retryable) or UNAVAILABLE; the message is
// the Degraded's, in plain words; the details are the last status's when
// its code is kept.
func gaveUp(err error) error {
	var d *enforce.Degraded
	if !errors.As(err, &d) {
		return err
	}
	var last *status.Status
	if gs := (interface{ GRPCStatus() *status.Status })(nil); errors.As(d.Unwrap(), &gs) {
		last = gs.GRPCStatus()
	}
	code := codes.Unavailable
	switch {
	case d.Reason == enforce.ReasonTimeout || d.Reason == enforce.ReasonBudget:
		code = codes.DeadlineExceeded
	case d.Reason == enforce.ReasonCanceled:
		code = codes.Canceled
	case last != nil && last.Code() != codes.OK:
		code = last.Code()
	}
	st := status.New(code, d.Error())
	if last != nil && last.Code() == code {
		p := last.Proto()
		p.Message = d.Error()
		st = status.FromProto(p)
	}
	return &giveUp{d: d, st: st}
}

// UnaryClientInterceptor makes every unary call through it one call of p
// to the method's hop (see the package's doc and WithHop).
//
// Each attempt decodes into a reply of its own (hedges run side by side,
// and an attempt cut at its deadline may still be writing), copied into
// the caller's reply when it wins (proto.Merge, or a plain copy for a
// reply that is not a proto message); so are the header, trailer and peer
// of grpc.Header, grpc.Trailer and grpc.Peer.
func UnaryClientInterceptor(p *enforce.Policy, opts ...Option) grpc.UnaryClientInterceptor {
	c := build(p, opts)
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, callOpts ...grpc.CallOption) error {
		hop := c.hop(method)
		opt := enforce.CallOptions{Idempotent: c.idempotent(p.For(hop), method)}
		a, err := enforce.DoWith(ctx, p, hop, opt, func(actx context.Context) (*answer, error) {
			a := &answer{reply: fresh(reply)}
			if err := invoker(actx, method, req, a.reply, cc, a.options(callOpts)...); err != nil {
				return nil, failed(err)
			}
			return a, nil
		})
		if err != nil {
			return gaveUp(err)
		}
		a.deliver(reply, callOpts)
		return nil
	}
}

// idempotent is whether a call of method may be sent again after it
// reached the server: the hop's idempotent key, else by the verb the
// method's name starts with (Get, List, Read, Query, Check, Watch, Search,
// Find, Lookup, Fetch, Describe, Count, Exists and Stat read; any other
// verb is taken to change state), as policy.IdempotentRule decides for
// the service configs `tailscope recommend --emit grpc` writes.
func (c *config) idempotent(h policy.Hop, method string) policy.Idempotence {
	if h.Idempotent.Set() {
		return h.Idempotent
	}
	idem, ok := c.verb.Load(method)
	if !ok {
		svc, m, _ := strings.Cut(strings.TrimPrefix(method, "/"), "/")
		idem, _ = policy.IdempotentRule(policy.Endpoint{GRPCService: svc, GRPCMethod: m})
		c.verb.Store(method, idem)
	}
	if idem.(bool) {
		return policy.Idempotent
	}
	return policy.NotIdempotent
}

// answer is what one attempt received.
type answer struct {
	reply           any
	header, trailer metadata.MD
	peer            peer.Peer
}

// options are the attempt's call options: those that write what the call
// received point into a instead.
func (a *answer) options(opts []grpc.CallOption) []grpc.CallOption {
	out := make([]grpc.CallOption, len(opts))
	for i, o := range opts {
		switch o.(type) {
		case grpc.HeaderCallOption:
			o = grpc.Header(&a.header)
		case grpc.TrailerCallOption:
			o = grpc.Trailer(&a.trailer)
		case grpc.PeerCallOption:
			o = grpc.Peer(&a.peer)
		}
		out[i] = o
	}
	return out
}

// deliver copies the winning attempt's reply, header, trailer and peer to
// the caller's.
func (a *answer) deliver(reply any, opts []grpc.CallOption) {
	if a.reply != reply {
		if dst, ok := reply.(proto.Message); ok {
			proto.Reset(dst)
			proto.Merge(dst, a.reply.(proto.Message))
		} else {
			reflect.ValueOf(reply).Elem().Set(reflect.ValueOf(a.reply).Elem())
		}
	}
	for _, o := range opts {
		switch o := o.(type) {
		case grpc.HeaderCallOption:
			*o.HeaderAddr = a.header
		case grpc.TrailerCallOption:
			*o.TrailerAddr = a.trailer
		case grpc.PeerCallOption:
			*o.PeerAddr = a.peer
		}
	}
}

// fresh is a new, empty reply of reply's type; reply itself when it is
// neither a proto message nor a non-nil pointer.
func fresh(reply any) any {
	if m, ok := reply.(proto.Message); ok {
		return m.ProtoReflect().New().Interface()
	}
	v := reflect.ValueOf(reply)
	if v.Kind() == reflect.Pointer && !v.IsNil() {
		return reflect.New(v.Type().Elem()).Interface()
	}
	return reply
}

// StreamClientInterceptor gives every stream through it its hop's timeout
// as a deadline (the sooner of it and ctx's: what is left of the
// request's budget), so that grpc-go sends grpc-timeout and the server
// stops when the client does. It does not retry or hedge a stream: a
// stream's messages cannot be resent by a policy that knows nothing of
// them.
func StreamClientInterceptor(p *enforce.Policy, opts ...Option) grpc.StreamClientInterceptor {
	c := build(p, opts)
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, callOpts ...grpc.CallOption) (grpc.ClientStream, error) {
		h := p.For(c.hop(method))
		if h.Timeout <= 0 {
			return streamer(ctx, desc, cc, method, callOpts...)
		}
		ctx, cancel := context.WithTimeout(ctx, h.Timeout)
		s, err := streamer(ctx, desc, cc, method, callOpts...)
		if err != nil {
			cancel()
			return nil, err
		}
		return &stream{ClientStream: s, cancel: cancel, one: !desc.ServerStreams}, nil
	}
}

// stream releases its deadline's timer when it ends: when RecvMsg fails
// (io.EOF included), or has received the one answer of a stream that the
// server does not stream.
type stream struct {
	grpc.ClientStream
	cancel context.CancelFunc
	one    bool
}

func (s *stream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err != nil || s.one {
		s.cancel()
	}
	return err
}
