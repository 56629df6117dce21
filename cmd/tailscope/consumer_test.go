// Tests of recommend --emit against the consumers themselves: grpc-go
// loads each emitted service config as the README and --help say and is
// timed against a loopback server; check --policy passes every emitted
// file on the synthetic retry trace and on the Online Boutique minute.

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tailscope/tailscope/policy"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
)

// retryTrace writes the synthetic retry trace: 3000 requests of front,
// each calling quotes' shop.Quotes/GetQuote over gRPC, whose attempts are
// independent draws (1.5% slow, 300–900 ms; 1% fast UNAVAILABLE, retried
// once as logged): what --hedge-load hedges and retries recover.
func retryTrace(t *testing.T) string {
	t.Helper()
	r := rand.New(rand.NewPCG(5, 6))
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC).UnixNano()
	draw := func() (int64, bool) {
		switch x := r.Float64(); {
		case x < 0.01:
			return int64(2+r.IntN(6)) * 1e6, false
		case x < 0.025:
			return int64(300+r.IntN(600)) * 1e6, true
		}
		return int64(20+r.IntN(20)) * 1e6, true
	}
	for i := range 3000 {
		tr := fmt.Sprintf("t%05d", i)
		start := t0 + int64(i)*int64(time.Second)
		at := start + 1e6
		for k := 1; ; k++ {
			d, ok := draw()
			st, code := "ok", "OK"
			if !ok {
				st, code = "error", "UNAVAILABLE"
			}
			id := fmt.Sprintf("%s-c%d", tr, k)
			_ = enc.Encode(map[string]any{"trace_id": tr, "span_id": id, "parent_id": tr + "-root", "service": "front", "name": "shop.Quotes/GetQuote", "kind": "client",
				"start": at, "duration_ns": d, "status": st, "code": code, "attempt": k, "rpc.system": "grpc", "rpc.service": "shop.Quotes", "rpc.method": "GetQuote"})
			_ = enc.Encode(map[string]any{"trace_id": tr, "span_id": id + "s", "parent_id": id, "service": "quotes", "name": "shop.Quotes/GetQuote", "kind": "server",
				"start": at + 5e5, "duration_ns": d - 1e6, "status": st, "code": code})
			at += d
			if ok || k == 2 {
				break
			}
			at += 1e6
		}
		_ = enc.Encode(map[string]any{"trace_id": tr, "span_id": tr + "-root", "service": "front", "name": "GET /quote", "kind": "server",
			"start": start, "duration_ns": at - start + 1e6, "status": "ok"})
	}
	p := filepath.Join(t.TempDir(), "retry.jsonl")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// traces are the logs the emitted configs are tested on, with the flags
// that read them.
func traces(t *testing.T) map[string][]string {
	return map[string][]string{
		"retry":           {"--hedge-load", "2%", retryTrace(t)},
		"online-boutique": {"--map", nezhaColumns, realExports["online-boutique"]},
	}
}

// recommendTo runs recommend with args and fails on a non-zero exit.
func recommendTo(t *testing.T, args ...string) string {
	t.Helper()
	var o, e bytes.Buffer
	if code := run(append([]string{"recommend"}, args...), strings.NewReader(""), &o, &e); code != 0 {
		t.Fatalf("recommend %v: exit %d: %s", args, code, e.String())
	}
	return o.String()
}

// loopback is a gRPC server on a loopback port that answers every method
// of every service (no proto needed: emptypb messages): a method in hang
// never answers (the client's deadline ends the call); fail[method]
// attempts of a method fail with UNAVAILABLE before one succeeds; every
// attempt is counted.
type loopback struct {
	addr     string
	hang     map[string]bool
	mu       sync.Mutex
	fail     map[string]int
	attempts map[string]int
}

func newLoopback(t *testing.T, hang map[string]bool, fail map[string]int) *loopback {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &loopback{addr: lis.Addr().String(), hang: hang, fail: fail, attempts: map[string]int{}}
	s := grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
		m, _ := grpc.MethodFromServerStream(stream)
		if err := stream.RecvMsg(&emptypb.Empty{}); err != nil {
			return err
		}
		l.mu.Lock()
		l.attempts[m]++
		failing := l.fail[m] > 0
		if failing {
			l.fail[m]--
		}
		l.mu.Unlock()
		switch {
		case failing:
			return status.Error(codes.Unavailable, "failing on purpose")
		case m == warmUp:
		case l.hang[m] || l.hang["*"]:
			<-stream.Context().Done()
			return stream.Context().Err()
		}
		return stream.SendMsg(&emptypb.Empty{})
	}))
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	return l
}

// warmUp is a method the loopback server always answers at once: a
// channel calls it before it is timed, so that the connection is up.
const warmUp = "/warm.Up/Ping"

// count is how many attempts of method the server has seen.
func (l *loopback) count(method string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.attempts[method]
}

// dial opens a grpc-go channel to the loopback server with a service
// config file, as the README says: grpc.WithDefaultServiceConfig with the
// file's contents; the connection is up when it returns.
func (l *loopback) dial(t *testing.T, file string) *grpc.ClientConn {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient("passthrough:///"+l.addr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithDefaultServiceConfig(string(data)))
	if err != nil {
		t.Fatalf("%s: grpc-go refuses it: %v", file, err)
	}
	t.Cleanup(func() { cc.Close() })
	if _, code := call(cc, warmUp); code != codes.OK {
		t.Fatalf("%s: the warm-up call: %v", file, code)
	}
	return cc
}

// call invokes method with no deadline of its own (the service config's
// is the only one; the test's 30s is a backstop) and returns how long it
// took and its status.
func call(cc *grpc.ClientConn, method string) (time.Duration, codes.Code) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	err := cc.Invoke(ctx, method, &emptypb.Empty{}, &emptypb.Empty{})
	return time.Since(start), status.Code(err)
}

// within reports whether got is want ± 15% (and never tighter than
// ±25ms: a loaded machine schedules late).
func within(got, want time.Duration) bool {
	tol := max(want*15/100, 25*time.Millisecond)
	return got >= want-tol && got <= want+tol
}

// channelFile is an emitted channel's config as a test reads it.
type channelFile struct {
	Tailscope struct{ Caller, Service string }
	// MethodConfig names and deadlines.
	MethodConfig []struct {
		Name []struct {
			Service, Method string
		}
		Timeout     string
		RetryPolicy *struct{ MaxAttempts int }
	}
}

// TestEmittedGRPCConfigsInGRPCGo: every channel's file that recommend
// --emit grpc -o DIR writes, loaded by grpc-go as the README says and
// called against a loopback server that never answers, makes grpc-go give
// up at each listed method's deadline (± 15%), which is the policy's
// timeout of its hop where the hop does not retry, and at the policy's
// default for a method the logs did not show (of the same proto service
// and of another); --channel prints the same file. On the synthetic
// retry trace with --hedge-load 2%, the hedged hop keeps its retries in
// grpc-go: a call whose first two attempts fail UNAVAILABLE succeeds on
// the third.
func TestEmittedGRPCConfigsInGRPCGo(t *testing.T) {
	for name, args := range traces(t) {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "grpc") + "/"
			recommendTo(t, append([]string{"-q", "--emit", "grpc", "-o", dir}, args...)...)
			pol, err := policy.Parse("p.yaml", []byte(recommendTo(t, append([]string{"-q"}, args...)...)))
			if err != nil {
				t.Fatal(err)
			}
			files, _ := filepath.Glob(filepath.Join(dir, "*", "*.json"))
			if len(files) == 0 {
				t.Fatalf("no channel file under %s", dir)
			}
			srv := newLoopback(t, map[string]bool{"*": true}, nil)
			type probe struct {
				file, method string
				want         time.Duration
			}
			var probes []probe
			for _, f := range files {
				data, _ := os.ReadFile(f)
				var cf channelFile
				if err := json.Unmarshal(data, &cf); err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				rel, _ := filepath.Rel(dir, f)
				if want := (policy.GRPCChannel{Caller: cf.Tailscope.Caller, Service: cf.Tailscope.Service}).File(); filepath.ToSlash(rel) != want {
					t.Errorf("%s holds the channel %s → %s (its file is %s)", rel, cf.Tailscope.Caller, cf.Tailscope.Service, want)
				}
				var def time.Duration
				for _, mc := range cf.MethodConfig {
					d := configDur(t, mc.Timeout)
					if !strings.HasSuffix(mc.Timeout, "s") || len(mc.Timeout) < len("0.000000000s") {
						t.Errorf("%s: timeout %q is not written with nine fraction digits", rel, mc.Timeout)
					}
					n := mc.Name[0]
					if n.Service == "" {
						def = d
						continue
					}
					probes = append(probes, probe{f, "/" + n.Service + "/" + n.Method, d})
					if mc.RetryPolicy == nil {
						// No retries: the deadline is the hop's timeout.
						hop := cf.Tailscope.Caller + " " + n.Service + "/" + n.Method
						for h, hp := range pol.Hops {
							if (h == hop || strings.HasPrefix(h, hop+" ")) && hp.Timeout != d {
								t.Errorf("%s %s: deadline %v, the policy's timeout %v", rel, n.Method, d, hp.Timeout)
							}
						}
					}
					probes = append(probes, probe{f, "/" + n.Service + "/NotInTheLogs", -1})
				}
				if def != pol.Default.Timeout {
					t.Errorf("%s: default %v, the policy's %v", rel, def, pol.Default.Timeout)
				}
				for i := range probes {
					if probes[i].file == f && probes[i].want < 0 {
						probes[i].want = def
					}
				}
				probes = append(probes, probe{f, "/other.Unlisted/Call", def})
			}
			// Every channel up first, then every call at once; a call that
			// misses its deadline's window (a loaded machine schedules
			// late) is tried again alone (below), and fails the test if it
			// still misses.
			conns := make([]*grpc.ClientConn, len(probes))
			for i, pr := range probes {
				conns[i] = srv.dial(t, pr.file)
			}
			var wg sync.WaitGroup
			var missed sync.Map
			for i, pr := range probes {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if got, code := call(conns[i], pr.method); code != codes.DeadlineExceeded || !within(got, pr.want) {
						missed.Store(i, fmt.Sprintf("%v after %v", code, got))
					}
				}()
			}
			wg.Wait()
			again := 0
			for i, pr := range probes {
				first, ok := missed.Load(i)
				if !ok {
					continue
				}
				again++
				// Lateness is what a loaded machine adds (the deadline
				// fired, the scheduler ran the caller late: 327 ms for
				// 190 ms at load 14); a deadline that fires early, or an
				// answer other than DeadlineExceeded, never is. So a late
				// call is tried up to five times alone, anything else once.
				got, code := call(conns[i], pr.method)
				for try := 1; try < 5 && code == codes.DeadlineExceeded && got > pr.want && !within(got, pr.want); try++ {
					got, code = call(conns[i], pr.method)
				}
				if code != codes.DeadlineExceeded || !within(got, pr.want) {
					rel, _ := filepath.Rel(dir, pr.file)
					t.Errorf("%s %s: %v after %v (first %s), want DeadlineExceeded at %v ± 15%%", rel, pr.method, code, got, first, pr.want)
				}
			}
			t.Logf("%d calls on %d channel files gave up at their deadlines (%d tried again alone)", len(probes), len(files), again)

			// --channel prints a channel's file as -o DIR wrote it.
			var cf channelFile
			data, _ := os.ReadFile(files[0])
			_ = json.Unmarshal(data, &cf)
			sel := cf.Tailscope.Caller + "→" + cf.Tailscope.Service
			if got := recommendTo(t, append([]string{"-q", "--emit", "grpc", "--channel", sel}, args...)...); got != string(data) {
				t.Errorf("--channel %s prints\n%s\nnot %s:\n%s", sel, got, files[0], data)
			}
			if name != "retry" {
				return
			}
			// The hedged hop's retries survive --hedge-load in grpc-go.
			quotes := filepath.Join(dir, "front", "quotes.json")
			flaky := newLoopback(t, nil, map[string]int{"/shop.Quotes/GetQuote": 2})
			if got, code := call(flaky.dial(t, quotes), "/shop.Quotes/GetQuote"); code != codes.OK || flaky.count("/shop.Quotes/GetQuote") != 3 {
				t.Errorf("GetQuote failing twice: %v after %v and %d attempts, want OK on the third", code, got, flaky.count("/shop.Quotes/GetQuote"))
			}
			if h := pol.Hops["front shop.Quotes/GetQuote (client)"]; h.Hedge.Delay == 0 || h.Retries != 2 {
				t.Errorf("the fixture's hop: %+v, want a hedge and 2 retries", h)
			}
		})
	}
}

// TestCheckPassesEveryEmittedFile: check --policy passes (exit 0) every
// file recommend --emit writes, on the synthetic retry trace (with
// --hedge-load 2%) and on the Online Boutique minute: the policy, the
// Envoy, Istio, ServiceProfile and Gateway API outputs, the gRPC index and
// every channel's file for grpc-go and for grpc-js; a whole config routes
// every hop (a channel's file routes its channel's hops); the Envoy and
// Istio outputs end every virtual host and VirtualService with a default
// route; the Gateway API routes read back as routes.
func TestCheckPassesEveryEmittedFile(t *testing.T) {
	for name, args := range traces(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tmp := t.TempDir()
			files := map[string]string{}
			for _, emit := range []string{"policy", "envoy", "grpc", "istio", "linkerd", "linkerd-route"} {
				f := filepath.Join(tmp, emit+".out")
				recommendTo(t, append([]string{"-q", "--emit", emit, "-o", f}, args...)...)
				files[emit] = f
			}
			for _, client := range []string{"go", "js"} {
				dir := filepath.Join(tmp, "grpc-"+client) + "/"
				recommendTo(t, append([]string{"-q", "--emit", "grpc", "--grpc-client", client, "-o", dir}, args...)...)
				chans, _ := filepath.Glob(filepath.Join(dir, "*", "*.json"))
				if len(chans) == 0 {
					t.Fatalf("no channel file for %s", client)
				}
				for _, c := range chans {
					rel, _ := filepath.Rel(tmp, c)
					files[rel] = c
				}
			}
			envoy, _ := os.ReadFile(files["envoy"])
			istio, _ := os.ReadFile(files["istio"])
			if vh, def := strings.Count(string(envoy), "\n- name: "), strings.Count(string(envoy), "  - name: default\n"); vh == 0 || def != vh {
				t.Errorf("envoy: %d virtual hosts, %d default routes", vh, def)
			}
			if vs, def := strings.Count(string(istio), "kind: VirtualService"), strings.Count(string(istio), "  - name: default\n"); vs == 0 || def != vs {
				t.Errorf("istio: %d VirtualServices, %d default routes", vs, def)
			}
			for what, f := range files {
				var o, e bytes.Buffer
				code := run(append([]string{"check", "--policy", f, "-f", "json"}, args...), strings.NewReader(""), &o, &e)
				var r struct {
					Verdict string
					Results []struct {
						Lint   []struct{ Code, Severity, Message string }
						Replay struct{ Succeeded int }
					}
				}
				if err := json.Unmarshal(o.Bytes(), &r); code != 0 || err != nil || len(r.Results) != 1 {
					t.Errorf("check --policy %s: exit %d (%v): %s\n%s", what, code, err, e.String(), o.String())
					continue
				}
				notRouted := 0
				for _, l := range r.Results[0].Lint {
					if l.Code == "route-matches-no-hop" || l.Code == "hop-not-routed" {
						notRouted++
					}
				}
				if whole := !strings.HasSuffix(what, ".json"); whole && notRouted > 0 {
					t.Errorf("%s: %d routes or hops unmatched: %+v", what, notRouted, r.Results[0].Lint)
				}
				t.Logf("%s: verdict %s, %d succeeded", what, r.Verdict, r.Results[0].Replay.Succeeded)
			}
		})
	}
}

// TestIdempotentFromPolicyInForce: the idempotent key of --policy-in-force
// travels into the recommended policy and every emitted config: with
// GetQuote declared not idempotent, its retries stay in the policy file
// (the replay's) but no config resends it after it reached the service:
// Envoy and Istio retry it only on connect-failure, refused-stream and
// reset-before-request (never reset), gRPC has no retryPolicy for it,
// Linkerd no retry annotation; and the outputs say why.
func TestIdempotentFromPolicyInForce(t *testing.T) {
	trace := retryTrace(t)
	inForce := filepath.Join(t.TempDir(), "in-force.yaml")
	if err := os.WriteFile(inForce, []byte("budget: 10s\ndefault: {timeout: 5s}\nhops:\n  \"front shop.Quotes/GetQuote (client)\": {timeout: 5s, idempotent: false}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	emit := func(what string) string {
		return recommendTo(t, "-q", "--policy-in-force", inForce, "--emit", what, trace)
	}
	pol, err := policy.Parse("p.yaml", []byte(emit("policy")))
	if err != nil {
		t.Fatal(err)
	}
	if h := pol.Hops["front shop.Quotes/GetQuote (client)"]; h.Idempotent != policy.NotIdempotent || h.Retries == 0 {
		t.Fatalf("the recommended hop %+v, want idempotent: false and its retries", h)
	}
	envoy, istio, grpcOut, routes := emit("envoy"), emit("istio"), emit("grpc"), emit("linkerd-route")
	for what, out := range map[string]string{"envoy": envoy, "istio": istio} {
		if !strings.Contains(out, `"connect-failure,refused-stream,reset-before-request"`) || strings.Contains(out, "reset,") ||
			!strings.Contains(out, "not idempotent: the policy says idempotent: false") {
			t.Errorf("%s:\n%s", what, out)
		}
	}
	if strings.Contains(grpcOut, "retryPolicy") || strings.Contains(routes, "\n    retry.linkerd.io/") {
		t.Errorf("grpc or linkerd-route resend GetQuote:\n%s\n%s", grpcOut, routes)
	}
}
