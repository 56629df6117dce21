package enforce

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/tailscope/tailscope/policy"
)

// TimeoutHeader is the header in which Transport tells the server how long
// the caller will wait for this attempt: the time left before the
// attempt's deadline (the sooner of the hop's timeout and what is left of
// the request's budget) in whole milliseconds, rounded down, as a decimal
// integer ("742"). HonorTimeout reads it on the server's side.
//
// Why this header: a bare integer of milliseconds is read in any language
// without a duration parser, like Envoy's x-envoy-*-timeout-ms; its own
// name passes every proxy untouched, where Envoy's would be read (and, at
// an edge, stripped) by Envoy and set its route timeout rather than tell
// the server; and grpc-timeout is gRPC's own (units, and a meaning for
// gRPC proxies), not for plain HTTP. Transport.Header sends it under
// another name.
const TimeoutHeader = "X-Request-Timeout-Ms"

// Transport is an http.RoundTripper that applies the policy to every
// request sent through it: each request is one call to its hop (see Do),
// each attempt a round trip of Base under the attempt's deadline, with
// that deadline sent in TimeoutHeader.
//
// A response whose status the retry predicate calls retryable (HTTPError;
// by default 429, 502, 503, 504) fails its attempt: its body is read (a
// little) and closed, and the call retries, or gives up and RoundTrip
// returns the *Degraded (http.Client wraps it in a *url.Error; errors.As
// finds it). Any other response is the hop's answer, returned as it is,
// 400s and 500s included. A connection error is retried too.
//
// The body of the response returned is still bounded by the attempt's
// deadline and the request's context, but not cut when the call returns;
// close it, as always. A retry or a hedge resends the request's body
// through Request.GetBody (http.NewRequest sets it for in-memory bodies);
// a request whose body cannot be sent again (no GetBody) gets one attempt,
// without retry or hedge.
//
// A request that is not idempotent — by the hop's idempotent key, else by
// its method (POST, PATCH), unless it carries an Idempotency-Key header —
// is never hedged, and retried only when its connection could not be made
// (it cannot have reached the server), as the configs `tailscope
// recommend --emit envoy` writes retry it.
type Transport struct {
	// Policy is the policy applied; it must not be nil.
	Policy *Policy
	// Base sends each attempt; nil is http.DefaultTransport.
	Base http.RoundTripper
	// Hop names the hop of a request. Nil: the name WithHop put in the
	// request's context, else the URL's host name (without the port).
	Hop func(*http.Request) string
	// Header is the name of the header that carries the attempt's time
	// left; "" is TimeoutHeader, "-" sends none.
	Header string
}

// RoundTrip makes the request as one call to its hop under the policy.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	hop := ""
	if t.Hop != nil {
		hop = t.Hop(req)
	} else if h, ok := HopOf(req.Context()); ok {
		hop = h
	} else {
		hop = req.URL.Hostname()
	}
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	header := t.Header
	if header == "" {
		header = TimeoutHeader
	}
	body := req.Body != nil && req.Body != http.NoBody
	opt := CallOptions{Idempotent: idempotent(t.Policy.For(hop), req), Unsent: dialFailed}
	var sent atomic.Bool // the request's own Body has been handed to an attempt
	resp, err := do(req.Context(), t.Policy, hop, opt, func(actx context.Context) (*http.Response, error) {
		// The round trip runs under a context of its own that ends with
		// actx until the response is taken, then only with the request's
		// context (or at the attempt's deadline): Do cancels an attempt's
		// context as the call returns, which would cut the body the caller
		// is about to read.
		dl, bounded := actx.Deadline()
		var rctx context.Context
		var rcancel context.CancelFunc
		if bounded {
			rctx, rcancel = context.WithDeadline(context.WithoutCancel(actx), dl)
		} else {
			rctx, rcancel = context.WithCancel(context.WithoutCancel(actx))
		}
		stop := context.AfterFunc(actx, rcancel)
		fail := func(err error) (*http.Response, error) {
			stop()
			rcancel()
			return nil, err
		}
		r := req.Clone(rctx)
		if body && sent.Swap(true) {
			b, err := req.GetBody()
			if err != nil {
				return fail(Permanent(err))
			}
			r.Body = b
		}
		if bounded && header != "-" {
			r.Header.Set(header, strconv.FormatInt(max(0, time.Until(dl).Milliseconds()), 10))
		}
		resp, err := base.RoundTrip(r)
		if err != nil {
			return fail(err)
		}
		if resp.StatusCode >= 400 {
			if herr := (&HTTPError{StatusCode: resp.StatusCode, Status: resp.Status, Header: resp.Header}); t.Policy.retryable(herr) {
				discard(resp)
				return fail(herr)
			}
		}
		stop()
		after := context.AfterFunc(req.Context(), rcancel)
		release := func() { after(); rcancel() }
		if rw, ok := resp.Body.(io.ReadWriteCloser); ok { // a 101 Switching Protocols
			resp.Body = &releaseRW{ReadWriteCloser: rw, release: release}
		} else {
			resp.Body = &releaseBody{ReadCloser: resp.Body, release: release}
		}
		return resp, nil
	}, discard, body && req.GetBody == nil)
	if body && !sent.Load() {
		req.Body.Close() // no attempt ran: RoundTrip must close it all the same
	}
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// idempotent is whether req may be sent again after it reached the
// server: the hop's idempotent key, else (as the Envoy, Istio and Linkerd
// configs `tailscope recommend --emit` writes decide) by its method — GET,
// HEAD, OPTIONS, TRACE, PUT and DELETE are idempotent, POST, PATCH and the
// rest not — unless it carries an Idempotency-Key (or X-Idempotency-Key)
// header, with which net/http too resends it.
func idempotent(h policy.Hop, req *http.Request) policy.Idempotence {
	if h.Idempotent.Set() {
		return h.Idempotent
	}
	m := req.Method
	if m == "" {
		m = http.MethodGet
	}
	if ok, _ := policy.IdempotentRule(policy.Endpoint{Method: m}); ok || req.Header.Get("Idempotency-Key") != "" || req.Header.Get("X-Idempotency-Key") != "" {
		return policy.Idempotent
	}
	return policy.NotIdempotent
}

// dialFailed says whether err shows that the request never reached the
// server: the connection (or the proxy's) could not be made. Envoy's
// connect-failure, what the emitted configs retry a call that is not
// idempotent on.
func dialFailed(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && (op.Op == "dial" || op.Op == "proxyconnect")
}

// discard reads a little of a response's body, so that its connection can
// be reused, and closes it.
func discard(resp *http.Response) {
	if resp == nil || resp.Body == nil {
		return
	}
	io.CopyN(io.Discard, resp.Body, 64<<10)
	resp.Body.Close()
}

// releaseBody is a response body that releases its round trip's context
// when closed.
type releaseBody struct {
	io.ReadCloser
	release func()
}

func (b *releaseBody) Close() error {
	err := b.ReadCloser.Close()
	b.release()
	return err
}

type releaseRW struct {
	io.ReadWriteCloser
	release func()
}

func (b *releaseRW) Close() error {
	err := b.ReadWriteCloser.Close()
	b.release()
	return err
}

type hopKey struct{}

// WithHop returns ctx naming hop as the hop of the requests made with it,
// for Transport.
func WithHop(ctx context.Context, hop string) context.Context {
	return context.WithValue(ctx, hopKey{}, hop)
}

// HopOf returns the hop WithHop put in ctx.
func HopOf(ctx context.Context) (string, bool) {
	h, ok := ctx.Value(hopKey{}).(string)
	return h, ok
}

// HeaderTimeout returns the time the caller will wait as TimeoutHeader
// carries it in h, and false when h does not carry it (or not a
// non-negative integer).
func HeaderTimeout(h http.Header) (time.Duration, bool) {
	v := h.Get(TimeoutHeader)
	if v == "" {
		return 0, false
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms < 0 || ms > int64(time.Duration(1<<63-1)/time.Millisecond) {
		return 0, false
	}
	return time.Duration(ms) * time.Millisecond, true
}

// HonorTimeout is server-side middleware: a request that carries
// TimeoutHeader is served with a context that ends when the caller stops
// waiting (the header's time from its arrival), so that the handler, and
// every call it makes under enforce (Policy.Request takes the sooner
// deadline), stops when its answer would no longer be read.
func HonorTimeout(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d, ok := HeaderTimeout(r.Header); ok {
			ctx, cancel := context.WithTimeout(r.Context(), d)
			defer cancel()
			r = r.WithContext(ctx)
		}
		next.ServeHTTP(w, r)
	})
}
