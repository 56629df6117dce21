package enforce_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tailscope/tailscope/enforce"
	"github.com/tailscope/tailscope/policy"
)

// These tests run against a real net/http server: an httptest server on
// loopback in real time, where nothing is timed (but loosely), and, for
// the times, an http.Server and an http.Transport talking over net.Pipe
// inside a testing/synctest bubble, where the times asserted are exact
// whatever the machine's load.

// pipeListener is a net.Listener whose connections are net.Pipe pairs, so
// that an HTTP server and client run inside a synctest bubble.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error   { l.once.Do(func() { close(l.done) }); return nil }
func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80} }

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	c, s := net.Pipe()
	select {
	case l.conns <- s:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// pipeServer serves h over pipes until the test ends, and returns the
// transport that reaches it (any URL).
func pipeServer(t *testing.T, h http.Handler) http.RoundTripper {
	l := newPipeListener()
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	tr := &http.Transport{DialContext: l.dial}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		srv.Close()
	})
	return tr
}

// client is an http.Client whose requests are calls to hop "api" of a
// policy with hop h, each attempt sent by base (nil: the default).
func client(budget time.Duration, h policy.Hop, opt enforce.Options, base ...http.RoundTripper) (*http.Client, *enforce.Policy) {
	pol := enforce.New(&policy.Policy{Name: "test", Budget: budget, Default: h, Hops: map[string]policy.Hop{"api": h}}, opt)
	tr := &enforce.Transport{Policy: pol, Hop: func(*http.Request) string { return "api" }}
	if len(base) > 0 {
		tr.Base = base[0]
	}
	return &http.Client{Transport: tr}, pol
}

var quick = policy.Backoff{Base: time.Millisecond, Max: time.Millisecond}

// TestTransportStatuses: a 400 is the hop's answer, returned at once and
// not retried; a 503 is retried as often as the policy allows and then
// gives up with a *Degraded; a 503 then a 200 returns the 200; Observe
// hears every attempt with its outcome.
func TestTransportStatuses(t *testing.T) {
	var n atomic.Int32
	var script []int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		code := script[min(i, len(script)-1)]
		w.WriteHeader(code)
		io.WriteString(w, "answer "+strconv.Itoa(code))
	}))
	defer srv.Close()
	for _, tc := range []struct {
		script   []int
		calls    int
		status   int // 0: gave up
		reason   enforce.Reason
		outcomes map[enforce.Outcome]int
	}{
		{[]int{400}, 1, 400, "", map[enforce.Outcome]int{enforce.OutcomeOK: 1}},
		{[]int{404}, 1, 404, "", map[enforce.Outcome]int{enforce.OutcomeOK: 1}},
		{[]int{500}, 1, 500, "", map[enforce.Outcome]int{enforce.OutcomeOK: 1}},
		{[]int{503}, 3, 0, enforce.ReasonRetriesExhausted, map[enforce.Outcome]int{enforce.OutcomeError: 3}},
		{[]int{429, 502, 504}, 3, 0, enforce.ReasonRetriesExhausted, map[enforce.Outcome]int{enforce.OutcomeError: 3}},
		{[]int{503, 200}, 2, 200, "", map[enforce.Outcome]int{enforce.OutcomeError: 1, enforce.OutcomeOK: 1}},
	} {
		n.Store(0)
		script = tc.script
		var counts enforce.Counts
		c, _ := client(0, policy.Hop{Timeout: 5 * time.Second, Retries: 2, Backoff: quick}, enforce.Options{Observe: counts.Observe})
		resp, err := c.Get(srv.URL)
		got := int(n.Load())
		if tc.status != 0 {
			if err != nil {
				t.Errorf("%v: %v", tc.script, err)
				continue
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || string(body) != "answer "+strconv.Itoa(tc.status) || got != tc.calls {
				t.Errorf("%v: %d %q after %d requests, want %d after %d", tc.script, resp.StatusCode, body, got, tc.status, tc.calls)
			}
		} else {
			var d *enforce.Degraded
			if !errors.As(err, &d) || d.Reason != tc.reason || d.Attempts != tc.calls || got != tc.calls {
				t.Errorf("%v: %v after %d requests, want %s after %d", tc.script, err, got, tc.reason, tc.calls)
			} else if strings.Contains(err.Error(), "Service Unavailable") {
				t.Errorf("the status's text reached the error: %v", err)
			}
		}
		if s := counts.Snapshot(); s.Attempts != tc.calls || len(s.Outcomes) != len(tc.outcomes) {
			t.Errorf("%v: counted %+v", tc.script, s)
		} else {
			for o, k := range tc.outcomes {
				if s.Outcomes[o] != k {
					t.Errorf("%v: %d %s, want %d", tc.script, s.Outcomes[o], o, k)
				}
			}
		}
	}
}

// seen is what the server saw of a request.
type seenHTTP struct {
	header   string
	deadline bool
	ran      time.Duration
	stopped  bool
}

type goneKey struct{}

// slowServer is a handler, served through HonorTimeout, that works 10 s
// unless its context ends first, and reports what it saw on got. Having
// stopped, it answers nothing before the client has hung up (a server
// that stops at its deadline answers an error; here the client's own
// clock must end the attempt).
func slowServer(got chan<- seenHTTP) http.Handler {
	honoring := enforce.HonorTimeout(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		_, dl := r.Context().Deadline()
		s := seenHTTP{header: r.Header.Get(enforce.TimeoutHeader), deadline: dl}
		select {
		case <-r.Context().Done():
			s.stopped = true
		case <-time.After(10 * time.Second):
		}
		s.ran = time.Since(start)
		got <- s
		select {
		case <-r.Context().Value(goneKey{}).(context.Context).Done():
		case <-time.After(10 * time.Second):
		}
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The request's context before HonorTimeout ends when the client
		// hangs up.
		honoring.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), goneKey{}, r.Context())))
	})
}

var timeoutCases = []struct {
	budget, timeout time.Duration
	reason          enforce.Reason
	want            time.Duration
}{
	{0, time.Second, enforce.ReasonTimeout, time.Second},
	{time.Second, 3 * time.Second, enforce.ReasonBudget, time.Second},
}

// TestTransportTimeout: the per-attempt timeout fires on time; the server
// is told the attempt's deadline in X-Request-Timeout-Ms (the hop's
// timeout, or what is left of the budget when sooner) and, serving through
// HonorTimeout, its context ends then, so it stops at the client's
// deadline instead of running its full 10 s. Under virtual time: exact.
func TestTransportTimeout(t *testing.T) {
	for _, tc := range timeoutCases {
		synctest.Test(t, func(t *testing.T) {
			got := make(chan seenHTTP, 1)
			c, pol := client(tc.budget, policy.Hop{Timeout: tc.timeout}, enforce.Options{}, pipeServer(t, slowServer(got)))
			ctx, done := pol.Request(context.Background())
			defer done()
			req, _ := http.NewRequestWithContext(ctx, "GET", "http://api/", nil)
			start := time.Now()
			_, err := c.Do(req)
			var d *enforce.Degraded
			if !errors.As(err, &d) || d.Reason != tc.reason || time.Since(start) != tc.want {
				t.Fatalf("budget %v, timeout %v: %v after %v, want a give-up (%s) after %v", tc.budget, tc.timeout, err, time.Since(start), tc.reason, tc.want)
			}
			s := <-got
			if want := strconv.Itoa(int(tc.want / time.Millisecond)); s.header != want || !s.deadline || !s.stopped || s.ran != tc.want {
				t.Errorf("the server: told %q ms (want %s), deadline %v, stopped %v after %v; want it to stop after %v",
					s.header, want, s.deadline, s.stopped, s.ran, tc.want)
			}
		})
	}
}

// TestTransportTimeoutOverTCP: the same against an httptest server on
// loopback, in real time: the client gives up at the deadline (never
// before it; the bound after it is loose, for a loaded machine's late
// timers), the server is told no more than the client will wait, and stops
// long before its 10 s.
func TestTransportTimeoutOverTCP(t *testing.T) {
	got := make(chan seenHTTP, 1)
	srv := httptest.NewServer(slowServer(got))
	defer srv.Close()
	for _, tc := range timeoutCases {
		c, pol := client(tc.budget, policy.Hop{Timeout: tc.timeout}, enforce.Options{})
		start := time.Now() // the budget starts with Request
		ctx, done := pol.Request(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
		_, err := c.Do(req)
		elapsed := time.Since(start)
		done()
		var d *enforce.Degraded
		if !errors.As(err, &d) || d.Reason != tc.reason {
			t.Fatalf("budget %v, timeout %v: %v, want a give-up (%s)", tc.budget, tc.timeout, err, tc.reason)
		}
		if elapsed < tc.want || elapsed > 3*tc.want {
			t.Errorf("the client gave up after %v, want %v", elapsed, tc.want)
		}
		s := <-got
		if ms, err := strconv.Atoi(s.header); err != nil || ms > int(tc.want/time.Millisecond) || ms <= 0 {
			t.Errorf("the server was told %q ms, want at most %v", s.header, tc.want)
		}
		if !s.deadline || !s.stopped || s.ran > 3*tc.want {
			t.Errorf("the server: deadline %v, stopped early %v after %v", s.deadline, s.stopped, s.ran)
		}
	}
}

// TestHonorTimeout: the middleware gives the handler a deadline only when
// the header is there and well formed.
func TestHonorTimeout(t *testing.T) {
	for _, tc := range []struct {
		header string
		want   bool
	}{{"", false}, {"250", true}, {"0", true}, {"-5", false}, {"soon", false}, {"1.5", false}} {
		var has bool
		var left time.Duration
		h := enforce.HonorTimeout(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var dl time.Time
			dl, has = r.Context().Deadline()
			left = time.Until(dl)
		}))
		r := httptest.NewRequest("GET", "/", nil)
		if tc.header != "" {
			r.Header.Set(enforce.TimeoutHeader, tc.header)
		}
		h.ServeHTTP(httptest.NewRecorder(), r)
		if has != tc.want || tc.header == "250" && (left > 250*time.Millisecond || left < 200*time.Millisecond) {
			t.Errorf("header %q: deadline %v (%v left), want %v", tc.header, has, left, tc.want)
		}
	}
}

// TestTransportHedgeBody: a hedge that answers first is returned, and its
// body can be read after RoundTrip returned and the call cancelled what it
// ran; the slow attempt's request is cancelled at the server when the
// hedge wins. Under virtual time.
func TestTransportHedgeBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		big := strings.Repeat("passage ", 1<<17) // 1 MiB
		var n atomic.Int32
		cancelled := make(chan time.Duration, 1)
		start := time.Now()
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1) == 1 {
				select {
				case <-r.Context().Done():
					cancelled <- time.Since(start)
				case <-time.After(10 * time.Second):
					cancelled <- 0
				}
				return
			}
			time.Sleep(20 * time.Millisecond)
			io.WriteString(w, big)
		})
		c, _ := client(0, policy.Hop{Timeout: 5 * time.Second, Hedge: policy.Hedge{Delay: 100 * time.Millisecond, Max: 1}}, enforce.Options{}, pipeServer(t, h))
		resp, err := c.Get("http://api/")
		if err != nil || time.Since(start) != 120*time.Millisecond {
			t.Fatalf("%v after %v, want the hedge's answer after 120ms", err, time.Since(start))
		}
		synctest.Wait() // the call has returned and cancelled what it ran
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(body) != big {
			t.Errorf("the winner's body: %d bytes, %v", len(body), err)
		}
		if at := <-cancelled; at != 120*time.Millisecond {
			t.Errorf("the slow attempt was cancelled at the server after %v, want 120ms", at)
		}
	})
}

// TestTransportNotIdempotent: a POST, which may act twice, is not resent
// after it may have reached the server (a 503, a timeout) and not hedged,
// but is retried when its connection could not be made; the hop's
// idempotent key, or an Idempotency-Key header, lets it be resent.
func TestTransportNotIdempotent(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if r.URL.Path == "/slow" {
			time.Sleep(300 * time.Millisecond)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	refused := httptest.NewServer(http.NotFoundHandler())
	refusedURL := refused.URL
	refused.Close() // nothing listens there now
	for _, tc := range []struct {
		name      string
		method    string
		url       string
		key       policy.Idempotence
		header    bool
		attempts  int
		atServer  int
		hedgeOnly bool
	}{
		{"POST 503", "POST", srv.URL, policy.IdempotenceUnset, false, 1, 1, false},
		{"PATCH 503", "PATCH", srv.URL, policy.IdempotenceUnset, false, 1, 1, false},
		{"GET 503", "GET", srv.URL, policy.IdempotenceUnset, false, 3, 3, false},
		{"POST 503, idempotent: true", "POST", srv.URL, policy.Idempotent, false, 3, 3, false},
		{"GET 503, idempotent: false", "GET", srv.URL, policy.NotIdempotent, false, 1, 1, false},
		{"POST 503, Idempotency-Key", "POST", srv.URL, policy.IdempotenceUnset, true, 3, 3, false},
		{"POST refused", "POST", refusedURL, policy.IdempotenceUnset, false, 3, 0, false},
		{"POST slow, not hedged", "POST", srv.URL + "/slow", policy.IdempotenceUnset, false, 1, 1, true},
		{"GET slow, hedged", "GET", srv.URL + "/slow", policy.IdempotenceUnset, false, 2, 2, true},
	} {
		n.Store(0)
		var counts enforce.Counts
		h := policy.Hop{Timeout: 5 * time.Second, Retries: 2, Backoff: quick, Idempotent: tc.key}
		if tc.hedgeOnly {
			h = policy.Hop{Timeout: 5 * time.Second, Hedge: policy.Hedge{Delay: 50 * time.Millisecond, Max: 1}, Idempotent: tc.key}
		}
		c, _ := client(0, h, enforce.Options{Observe: counts.Observe})
		req, _ := http.NewRequest(tc.method, tc.url, strings.NewReader("order 1"))
		if tc.header {
			req.Header.Set("Idempotency-Key", "order-1")
		}
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		if s := counts.Snapshot(); s.Attempts != tc.attempts || int(n.Load()) != tc.atServer {
			t.Errorf("%s: %d attempts, %d at the server (%v); want %d, %d", tc.name, s.Attempts, n.Load(), err, tc.attempts, tc.atServer)
		}
	}
}

// TestTransportResendsBody: a retry sends the request's body again
// (through GetBody); a request whose body cannot be sent again gets one
// attempt.
func TestTransportResendsBody(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		first := len(bodies) == 1
		mu.Unlock()
		if first {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	c, _ := client(0, policy.Hop{Timeout: 5 * time.Second, Retries: 2, Backoff: quick}, enforce.Options{})
	req, _ := http.NewRequest("PUT", srv.URL, strings.NewReader("payload"))
	resp, err := c.Do(req)
	if err != nil || resp.StatusCode != 200 || strings.Join(bodies, ",") != "payload,payload" {
		t.Errorf("replayable body: %v, bodies %q", err, bodies)
	}
	if resp != nil {
		resp.Body.Close()
	}

	bodies = nil
	req, _ = http.NewRequest("PUT", srv.URL, io.NopCloser(bytes.NewReader([]byte("once"))))
	req.GetBody = nil
	_, err = c.Do(req)
	var d *enforce.Degraded
	if !errors.As(err, &d) || d.Attempts != 1 || strings.Join(bodies, ",") != "once" {
		t.Errorf("body sent once: %v, bodies %q", err, bodies)
	}
}

// TestTransportHopNames: without Transport.Hop, a request's hop is the
// one WithHop names, else the URL's host; a name the policy does not list
// is warned of once.
func TestTransportHopNames(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	var hops []string
	var warned []string
	pol := enforce.New(&policy.Policy{Name: "test", Hops: map[string]policy.Hop{"cart": {Timeout: time.Second}}},
		enforce.Options{Observe: func(e enforce.Event) {
			if e.Kind == enforce.KindAttempt {
				hops = append(hops, e.Hop)
			}
		}, Warn: func(msg string) { warned = append(warned, msg) }})
	c := &http.Client{Transport: &enforce.Transport{Policy: pol}}
	for _, ctx := range []context.Context{enforce.WithHop(context.Background(), "cart"), enforce.WithHop(context.Background(), "Cart"), context.Background()} {
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
		if resp, err := c.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	if strings.Join(hops, ",") != "cart,Cart,127.0.0.1" || len(warned) != 2 || !strings.Contains(warned[0], `did you mean "cart"?`) {
		t.Errorf("hops %v, warned %q", hops, warned)
	}
}
