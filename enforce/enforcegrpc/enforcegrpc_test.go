package enforcegrpc_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/tailscope/tailscope/enforce"
	"github.com/tailscope/tailscope/enforce/enforcegrpc"
	"github.com/tailscope/tailscope/policy"
)

// The tests run a real grpc-go server and client, talking HTTP/2 through
// the interceptors: over bufconn inside a testing/synctest bubble (virtual
// time: the times asserted are exact, whatever the machine's load), and
// once over TCP on 127.0.0.1 in real time, where nothing is timed tighter
// than the ±15% the hop's timeout is held to (a late timer only makes a
// call longer, and the bound above is loose).

const service = "tailscope.test.Shop"

// seen is what the server saw of one call.
type seen struct {
	method   string
	deadline bool
	left     time.Duration // time left before its deadline as it started
	stopped  bool          // its context ended before it was done
	ran      time.Duration
}

// server answers each call as script says for the call's number (from
// 1): after wait (0: until its context ends, for at most 10s), with code
// (OK: the request's value echoed, with the call's number).
type server struct {
	n      atomic.Int32
	script func(n int) (wait time.Duration, code codes.Code)
	seen   chan seen
}

func (s *server) handle(ctx context.Context, method string) (string, error) {
	n := int(s.n.Add(1))
	wait, code := s.script(n)
	dl, ok := ctx.Deadline()
	v := seen{method: method, deadline: ok, left: time.Until(dl)}
	start := time.Now()
	grpc.SetHeader(ctx, metadata.Pairs("attempt", fmt.Sprint(n)))
	if wait == 0 {
		wait = 10 * time.Second
	}
	select {
	case <-time.After(wait):
	case <-ctx.Done():
		v.stopped = true
	}
	v.ran = time.Since(start)
	select {
	case s.seen <- v:
	default:
	}
	if v.stopped {
		return "", ctx.Err()
	}
	if code != codes.OK {
		return "", status.Errorf(code, "server says %s on call %d", code, n)
	}
	return fmt.Sprintf("answer %d", n), nil
}

func (s *server) desc() *grpc.ServiceDesc {
	unary := func(name string) grpc.MethodDesc {
		return grpc.MethodDesc{MethodName: name, Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			in := new(wrapperspb.StringValue)
			if err := dec(in); err != nil {
				return nil, err
			}
			out, err := s.handle(ctx, name)
			if err != nil {
				return nil, err
			}
			return wrapperspb.String(in.Value + ": " + out), nil
		}}
	}
	return &grpc.ServiceDesc{
		ServiceName: service,
		HandlerType: (*any)(nil),
		Methods:     []grpc.MethodDesc{unary("GetCart"), unary("PlaceOrder"), unary("Other")},
		Streams: []grpc.StreamDesc{{StreamName: "Watch", ServerStreams: true, Handler: func(_ any, st grpc.ServerStream) error {
			in := new(wrapperspb.StringValue)
			if err := st.RecvMsg(in); err != nil {
				return err
			}
			_, err := s.handle(st.Context(), "Watch")
			return err
		}}},
	}
}

// start serves s over bufconn (inside or outside a synctest bubble) and
// returns a client connection through the interceptors of pol (none when
// pol is nil), with opts.
func start(t *testing.T, s *server, pol *enforce.Policy, opts ...enforcegrpc.Option) *grpc.ClientConn {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	return serve(t, s, lis, "passthrough:///bufconn", pol, append(clientOptions(pol, opts),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }))...)
}

// startTCP serves s on 127.0.0.1.
func startTCP(t *testing.T, s *server, pol *enforce.Policy, opts ...enforcegrpc.Option) *grpc.ClientConn {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serve(t, s, lis, lis.Addr().String(), pol, clientOptions(pol, opts)...)
}

func clientOptions(pol *enforce.Policy, opts []enforcegrpc.Option) []grpc.DialOption {
	dial := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if pol != nil {
		dial = append(dial, grpc.WithUnaryInterceptor(enforcegrpc.UnaryClientInterceptor(pol, opts...)),
			grpc.WithStreamInterceptor(enforcegrpc.StreamClientInterceptor(pol, opts...)))
	}
	return dial
}

func serve(t *testing.T, s *server, lis net.Listener, target string, pol *enforce.Policy, dial ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	if s.seen == nil {
		s.seen = make(chan seen, 16)
	}
	srv := grpc.NewServer()
	srv.RegisterService(s.desc(), s)
	go srv.Serve(lis)
	cc, err := grpc.NewClient(target, dial...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cc.Close()
		srv.Stop()
	})
	return cc
}

func call(ctx context.Context, cc *grpc.ClientConn, method string, opts ...grpc.CallOption) (string, error) {
	out := new(wrapperspb.StringValue)
	err := cc.Invoke(ctx, "/"+service+"/"+method, wrapperspb.String("q"), out, opts...)
	return out.Value, err
}

var quick = policy.Backoff{Base: time.Millisecond, Max: time.Millisecond}

// shop is a policy with its own entry for GetCart, as a trace names the
// hop ("checkoutservice <method> (client)"), and a default.
func shop(getCart, def policy.Hop) *policy.Policy {
	return &policy.Policy{Name: "shop", Default: def,
		Hops: map[string]policy.Hop{"checkoutservice " + service + "/GetCart (client)": getCart, "payments": {}}}
}

// TestTimeoutReachesServer: the hop's timeout fires on time and the call
// gives up with DEADLINE_EXCEEDED and a *Degraded; the server's context
// carries the attempt's deadline (grpc-timeout), and the server, which
// honours it, stops then instead of running its full 10 s. An unlisted
// method runs under the default's timeout, and is warned of once. Under
// virtual time, so the times are exact.
func TestTimeoutReachesServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &server{script: func(int) (time.Duration, codes.Code) { return 0, codes.OK }}
		var warned []string
		var mu sync.Mutex
		pol := enforce.New(shop(policy.Hop{Timeout: 600 * time.Millisecond}, policy.Hop{Timeout: 900 * time.Millisecond}),
			enforce.Options{Warn: func(msg string) { mu.Lock(); warned = append(warned, msg); mu.Unlock() }})
		cc := start(t, s, pol)
		for _, tc := range []struct {
			method  string
			timeout time.Duration
		}{{"GetCart", 600 * time.Millisecond}, {"Other", 900 * time.Millisecond}, {"Other", 900 * time.Millisecond}} {
			begin := time.Now()
			_, err := call(context.Background(), cc, tc.method)
			elapsed := time.Since(begin)
			var d *enforce.Degraded
			if status.Code(err) != codes.DeadlineExceeded || !errors.As(err, &d) || d.Reason != enforce.ReasonTimeout || d.Attempts != 1 {
				t.Fatalf("%s: %v (code %s), want a timeout", tc.method, err, status.Code(err))
			}
			if msg := status.Convert(err).Message(); msg != d.Error() || strings.Contains(msg, "server says") {
				t.Errorf("%s: the status's message is %q, want the Degraded's", tc.method, msg)
			}
			if elapsed != tc.timeout {
				t.Errorf("%s: the client gave up after %v, want %v", tc.method, elapsed, tc.timeout)
			}
			v := <-s.seen
			if !v.deadline || v.left != tc.timeout || !v.stopped || v.ran != tc.timeout {
				t.Errorf("%s: the server: deadline %v with %v left, stopped %v after %v; want it to stop at the %v timeout",
					tc.method, v.deadline, v.left, v.stopped, v.ran, tc.timeout)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if len(warned) != 1 || !strings.Contains(warned[0], `hop "`+service+`/Other" is not in policy "shop"`) {
			t.Errorf("warnings %q, want one for Other", warned)
		}
	})
}

// TestTimeoutOverTCP: the same over a real connection on 127.0.0.1, in
// real time: the client gives up at the hop's timeout (never before it;
// the bound after it is loose, for a loaded machine's late timers); the
// server is told a deadline no later than the client's, and stops long
// before its 10 s.
func TestTimeoutOverTCP(t *testing.T) {
	s := &server{script: func(int) (time.Duration, codes.Code) { return 0, codes.OK }}
	timeout := 800 * time.Millisecond
	cc := startTCP(t, s, enforce.New(shop(policy.Hop{Timeout: timeout}, policy.Hop{}), enforce.Options{}))
	begin := time.Now()
	_, err := call(context.Background(), cc, "GetCart")
	elapsed := time.Since(begin)
	var d *enforce.Degraded
	if status.Code(err) != codes.DeadlineExceeded || !errors.As(err, &d) || d.Reason != enforce.ReasonTimeout {
		t.Fatalf("%v, want a timeout", err)
	}
	if elapsed < timeout || elapsed > 3*timeout {
		t.Errorf("the client gave up after %v, want %v", elapsed, timeout)
	}
	v := <-s.seen
	if !v.deadline || v.left > timeout || v.left <= 0 {
		t.Errorf("the server's deadline: set %v, %v left; want at most the %v timeout", v.deadline, v.left, timeout)
	}
	if !v.stopped || v.ran > 3*timeout {
		t.Errorf("the server stopped early: %v, after %v", v.stopped, v.ran)
	}
}

// TestRetryCodes: a retryable code (UNAVAILABLE) is retried and the retry
// answers; a code a retry cannot fix (INVALID_ARGUMENT, NOT_FOUND,
// RESOURCE_EXHAUSTED) is not retried and comes back with its own code.
// Observe hears every attempt with its outcome and latency (exact, in
// virtual time), and the header is the answering attempt's.
func TestRetryCodes(t *testing.T) {
	for _, tc := range []struct {
		codes    []codes.Code
		code     codes.Code
		outcomes string
	}{
		{[]codes.Code{codes.Unavailable, codes.Unavailable, codes.OK}, codes.OK, "error,error,ok"},
		{[]codes.Code{codes.Unavailable}, codes.Unavailable, "error,error,error"},
		{[]codes.Code{codes.InvalidArgument}, codes.InvalidArgument, "not retryable"},
		{[]codes.Code{codes.NotFound}, codes.NotFound, "not retryable"},
		{[]codes.Code{codes.ResourceExhausted}, codes.ResourceExhausted, "not retryable"},
	} {
		t.Run(fmt.Sprint(tc.codes), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				calls := strings.Count(tc.outcomes, ",") + 1
				s := &server{script: func(n int) (time.Duration, codes.Code) {
					return 20 * time.Millisecond, tc.codes[min(n, len(tc.codes))-1]
				}}
				var mu sync.Mutex
				var ends []enforce.Event
				pol := enforce.New(shop(policy.Hop{Timeout: 5 * time.Second, Retries: 2, Backoff: quick}, policy.Hop{}),
					enforce.Options{Observe: func(e enforce.Event) {
						if e.Kind == enforce.KindAttemptEnd {
							mu.Lock()
							ends = append(ends, e)
							mu.Unlock()
						}
					}})
				cc := start(t, s, pol)
				var md metadata.MD
				v, err := call(context.Background(), cc, "GetCart", grpc.Header(&md))
				if got := int(s.n.Load()); got != calls || status.Code(err) != tc.code {
					t.Fatalf("%d calls, %v; want %d calls, %s", got, err, calls, tc.code)
				}
				if tc.code == codes.OK && (v != "q: answer 3" || strings.Join(md.Get("attempt"), ",") != "3") {
					t.Errorf("reply %q, header %v: want the third attempt's", v, md)
				}
				var d *enforce.Degraded
				if tc.code != codes.OK && (!errors.As(err, &d) || d.Attempts != calls) {
					t.Errorf("%v: not the Degraded", err)
				}
				if msg := status.Convert(err).Message(); calls == 1 && msg != "enforce: gave up on the answer from checkoutservice "+service+
					"/GetCart (client): it refused the request with an error that a retry cannot fix" {
					t.Errorf("message %q", msg)
				}
				mu.Lock()
				defer mu.Unlock()
				var outcomes []string
				for i, e := range ends {
					outcomes = append(outcomes, string(e.Outcome))
					if e.Attempt != i+1 || e.Latency != 20*time.Millisecond || e.Hop != "checkoutservice "+service+"/GetCart (client)" {
						t.Errorf("attempt end %+v, want attempt %d after 20ms", e, i+1)
					}
				}
				if strings.Join(outcomes, ",") != tc.outcomes {
					t.Errorf("outcomes %v, want %s", outcomes, tc.outcomes)
				}
			})
		})
	}
}

// TestNotIdempotent: a method whose verb changes state (PlaceOrder) is
// neither retried nor hedged, as the emitted service configs have it,
// unless the policy says idempotent: true; a method that reads (GetCart)
// is both.
func TestNotIdempotent(t *testing.T) {
	for _, tc := range []struct {
		method string
		key    policy.Idempotence
		hedge  bool
		calls  int
	}{
		{"PlaceOrder", policy.IdempotenceUnset, false, 1},
		{"PlaceOrder", policy.IdempotenceUnset, true, 1},
		{"PlaceOrder", policy.Idempotent, false, 3},
		{"PlaceOrder", policy.Idempotent, true, 2},
		{"GetCart", policy.IdempotenceUnset, false, 3},
		{"GetCart", policy.IdempotenceUnset, true, 2},
		{"GetCart", policy.NotIdempotent, false, 1},
	} {
		synctest.Test(t, func(t *testing.T) {
			s := &server{script: func(int) (time.Duration, codes.Code) { return 200 * time.Millisecond, codes.Unavailable }}
			h := policy.Hop{Timeout: 5 * time.Second, Retries: 2, Backoff: quick, Idempotent: tc.key}
			if tc.hedge {
				h = policy.Hop{Timeout: 5 * time.Second, Hedge: policy.Hedge{Delay: 100 * time.Millisecond, Max: 1}, Idempotent: tc.key}
			}
			p := &policy.Policy{Name: "shop", Default: h}
			cc := start(t, s, enforce.New(p, enforce.Options{}))
			_, err := call(context.Background(), cc, tc.method)
			if n := int(s.n.Load()); n != tc.calls || status.Code(err) != codes.Unavailable {
				t.Errorf("%s (idempotent key %d, hedge %v): %d calls, %v; want %d", tc.method, tc.key, tc.hedge, n, err, tc.calls)
			}
		})
	}
}

// TestHedgeThroughInterceptor: a hedge that answers first is the reply
// (copied into the caller's message, its header too), and the slow
// attempt is cancelled at the server.
func TestHedgeThroughInterceptor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &server{script: func(n int) (time.Duration, codes.Code) {
			if n == 1 {
				return 0, codes.OK // until cancelled
			}
			return 5 * time.Millisecond, codes.OK
		}}
		pol := enforce.New(shop(policy.Hop{Timeout: 5 * time.Second, Hedge: policy.Hedge{Delay: 100 * time.Millisecond, Max: 1}}, policy.Hop{}), enforce.Options{})
		cc := start(t, s, pol)
		var md metadata.MD
		begin := time.Now()
		v, err := call(context.Background(), cc, "GetCart", grpc.Header(&md))
		if err != nil || v != "q: answer 2" || strings.Join(md.Get("attempt"), ",") != "2" || time.Since(begin) != 105*time.Millisecond {
			t.Fatalf("reply %q, header %v, %v after %v: want the hedge's after 105ms", v, md, err, time.Since(begin))
		}
		got := map[bool]time.Duration{}
		for range 2 {
			v := <-s.seen
			got[v.stopped] = v.ran
		}
		if got[false] != 5*time.Millisecond || got[true] != 105*time.Millisecond {
			t.Errorf("the server ran the hedge %v and the slow attempt %v (cancelled), want 5ms and 105ms", got[false], got[true])
		}
	})
}

// TestStreamDeadline: a stream gets its hop's timeout as a deadline: the
// server sees it, and the stream ends with DEADLINE_EXCEEDED at it; it is
// not retried.
func TestStreamDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &server{script: func(int) (time.Duration, codes.Code) { return 0, codes.OK }}
		p := &policy.Policy{Name: "shop", Default: policy.Hop{Timeout: 700 * time.Millisecond, Retries: 2}}
		cc := start(t, s, enforce.New(p, enforce.Options{}))
		begin := time.Now()
		st, err := cc.NewStream(context.Background(), &grpc.StreamDesc{StreamName: "Watch", ServerStreams: true}, "/"+service+"/Watch")
		if err != nil {
			t.Fatal(err)
		}
		if err := st.SendMsg(wrapperspb.String("q")); err != nil {
			t.Fatal(err)
		}
		st.CloseSend()
		err = st.RecvMsg(new(wrapperspb.StringValue))
		if status.Code(err) != codes.DeadlineExceeded || time.Since(begin) != 700*time.Millisecond {
			t.Fatalf("stream ended with %v after %v, want DEADLINE_EXCEEDED after 700ms", err, time.Since(begin))
		}
		if v := <-s.seen; !v.deadline || v.left != 700*time.Millisecond || !v.stopped {
			t.Errorf("the server: deadline %v, %v left, stopped %v", v.deadline, v.left, v.stopped)
		}
		if n := s.n.Load(); n != 1 {
			t.Errorf("the stream was sent %d times", n)
		}
	})
}

// TestMistypedHop: a WithHop that names a hop the policy does not list
// ("Payments" for "payments") runs under the default, and the warning
// names the listed hop.
func TestMistypedHop(t *testing.T) {
	s := &server{script: func(int) (time.Duration, codes.Code) { return time.Millisecond, codes.OK }}
	var mu sync.Mutex
	var warned []string
	var events []enforce.Event
	pol := enforce.New(shop(policy.Hop{}, policy.Hop{Timeout: time.Second}), enforce.Options{
		Warn: func(msg string) { mu.Lock(); warned = append(warned, msg); mu.Unlock() },
		Observe: func(e enforce.Event) {
			if e.Kind == enforce.KindUnknownHop {
				mu.Lock()
				events = append(events, e)
				mu.Unlock()
			}
		}})
	cc := start(t, s, pol, enforcegrpc.WithHop(func(string) string { return "Payments" }))
	for range 3 {
		if _, err := call(context.Background(), cc, "GetCart"); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(warned) != 1 || !strings.Contains(warned[0], `hop "Payments" is not in policy "shop": its calls run under the default (1s timeout, 0 retries); did you mean "payments"?`) ||
		len(events) != 1 || events[0].Suggest != "payments" {
		t.Errorf("warned %q, events %+v", warned, events)
	}
}

// TestMethodHop: the default names of a method's hop.
func TestMethodHop(t *testing.T) {
	p := &policy.Policy{Hops: map[string]policy.Hop{
		"a.S/Exact": {}, "/a.S/Slash": {},
		"front a.S/Client (client)": {}, "back a.S/Client": {},
		"back a.S/Server":      {},
		"x a.S/Twice (client)": {}, "y a.S/Twice (client)": {},
	}}
	hop := enforcegrpc.MethodHop(enforce.New(p, enforce.Options{}))
	for method, want := range map[string]string{
		"/a.S/Exact": "a.S/Exact", "/a.S/Slash": "/a.S/Slash", "/a.S/Client": "front a.S/Client (client)",
		"/a.S/Server": "back a.S/Server", "/a.S/Twice": "a.S/Twice", "/a.S/None": "a.S/None",
	} {
		if got := hop(method); got != want {
			t.Errorf("%s: %q, want %q", method, got, want)
		}
	}
}

// TestHandWrapped: a gRPC call wrapped by hand in Call, made with the
// attempt's context, sends the attempt's deadline to the server too; with
// Retryable as the policy's predicate, a code a retry cannot fix is tried
// once and UNAVAILABLE is retried.
func TestHandWrapped(t *testing.T) {
	synctest.Test(t, handWrapped)
}

func handWrapped(t *testing.T) {
	var code atomic.Int32
	s := &server{script: func(int) (time.Duration, codes.Code) { return time.Millisecond, codes.Code(code.Load()) }}
	cc := start(t, s, nil)
	pol := enforce.New(shop(policy.Hop{}, policy.Hop{Timeout: 800 * time.Millisecond, Retries: 2, Backoff: quick}),
		enforce.Options{Retryable: enforcegrpc.Retryable, DefaultHops: []string{"cart"}})
	for _, tc := range []struct {
		code  codes.Code
		calls int
	}{{codes.OK, 1}, {codes.InvalidArgument, 1}, {codes.Unavailable, 3}} {
		code.Store(int32(tc.code))
		s.n.Store(0)
		err := pol.Call(context.Background(), "cart", func(ctx context.Context) error {
			_, err := call(ctx, cc, "Other")
			return err
		})
		if n := int(s.n.Load()); n != tc.calls || status.Code(errors.Unwrap(err)) != tc.code {
			t.Errorf("%s: %d calls, %v; want %d", tc.code, n, err, tc.calls)
		}
		v := <-s.seen
		if !v.deadline || v.left != 800*time.Millisecond {
			t.Errorf("%s: the server's deadline: set %v, %v left; want 800ms", tc.code, v.deadline, v.left)
		}
		for len(s.seen) > 0 {
			<-s.seen
		}
	}
}

// TestRetryable: the predicate for calls wrapped by hand.
func TestRetryable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{status.Error(codes.Unavailable, "down"), true},
		{status.Error(codes.DeadlineExceeded, "late"), true},
		{status.Error(codes.InvalidArgument, "bad"), false},
		{status.Error(codes.ResourceExhausted, "quota"), false},
		{status.Error(codes.Aborted, "conflict"), false},
		{fmt.Errorf("cart: %w", status.Error(codes.Unavailable, "down")), true},
		{errors.New("opaque"), true},
		{enforce.Permanent(status.Error(codes.Unavailable, "down")), false},
	} {
		if got := enforcegrpc.Retryable(tc.err); got != tc.want {
			t.Errorf("Retryable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
