package policy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// grpcjsDir holds the pinned grpc-js client (package.json,
// package-lock.json, client.js); .ci/run installs it with npm ci.
const grpcjsDir = "testdata/grpcjs"

// grpcjsHold is how long the test server holds a call that no deadline
// cuts: longer than any timeout of the policy, so that every call ends at
// the client's deadline or not at all.
const grpcjsHold = 15 * time.Second

// grpcjsNode returns the node binary, or skips the test (fails it with
// TAILSCOPE_REQUIRE_GRPCJS=1) when node or the installed grpc-js is
// missing. It returns the installed grpc-js version, which must be the
// one package.json pins.
func grpcjsNode(t *testing.T) (node, version string) {
	t.Helper()
	missing := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if os.Getenv("TAILSCOPE_REQUIRE_GRPCJS") == "1" {
			t.Fatalf("grpc-js consumer test cannot run (TAILSCOPE_REQUIRE_GRPCJS=1): %s", msg)
		}
		t.Skip("grpc-js consumer test skipped: " + msg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not on PATH")
	}
	installed, err := os.ReadFile(filepath.Join(grpcjsDir, "node_modules", "@grpc", "grpc-js", "package.json"))
	if err != nil {
		missing("policy/%s/node_modules has no @grpc/grpc-js (run: cd policy/%s && npm ci)", grpcjsDir, grpcjsDir)
	}
	var pkg struct {
		Version      string            `json:"version"`
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(installed, &pkg); err != nil {
		t.Fatalf("installed @grpc/grpc-js package.json: %v", err)
	}
	version = pkg.Version
	pinned, err := os.ReadFile(filepath.Join(grpcjsDir, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	pkg.Dependencies = nil
	if err := json.Unmarshal(pinned, &pkg); err != nil {
		t.Fatalf("%s/package.json: %v", grpcjsDir, err)
	}
	if want := pkg.Dependencies["@grpc/grpc-js"]; want != version {
		t.Fatalf("%s/node_modules has @grpc/grpc-js %s, package.json pins %q: run npm ci there", grpcjsDir, version, want)
	}
	return node, version
}

// grpcjsServer is a loopback gRPC server that answers every method of
// every service (grpc.UnknownServiceHandler) by holding the call until
// the client gives up, and counts the attempts that reach it per method.
type grpcjsServer struct {
	addr     string
	mu       sync.Mutex
	attempts map[string][]*grpcjsAttempt // by method path, in the order they arrived
	active   sync.WaitGroup
}

// grpcjsAttempt is one attempt as the server saw it: when it arrived, the
// deadline the client sent with it (grpc-timeout; 0 without one), and how
// its context ended (canceled whether the client reset the stream or
// grpc-go's own deadline timer did, which cancels the context as it
// resets the stream; the error does not tell them apart).
type grpcjsAttempt struct {
	at       time.Time
	deadline time.Duration
	ended    error
}

func startGRPCJSServer(t *testing.T) *grpcjsServer {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &grpcjsServer{addr: lis.Addr().String(), attempts: map[string][]*grpcjsAttempt{}}
	srv := grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
		s.active.Add(1)
		defer s.active.Done()
		method, _ := grpc.MethodFromServerStream(stream)
		ctx := stream.Context()
		a := &grpcjsAttempt{at: time.Now()}
		if d, ok := ctx.Deadline(); ok {
			a.deadline = d.Sub(a.at)
		}
		s.mu.Lock()
		s.attempts[method] = append(s.attempts[method], a)
		s.mu.Unlock()
		var err error
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-time.After(grpcjsHold):
			err = fmt.Errorf("held the call %s and no deadline came", grpcjsHold)
		}
		s.mu.Lock()
		a.ended = err
		s.mu.Unlock()
		if ctx.Err() != nil {
			return status.FromContextError(err).Err()
		}
		return status.Errorf(codes.Internal, "tailscope test server: %v", err)
	}))
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return s
}

// settled waits until no call is held (the client's cancellations have
// reached every attempt), so that the counts are final.
func (s *grpcjsServer) settled(t *testing.T) {
	t.Helper()
	done := make(chan struct{})
	go func() { s.active.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Errorf("the server still holds calls 5s after the client exited")
	}
}

func (s *grpcjsServer) arrivals(method string) []grpcjsAttempt {
	s.mu.Lock()
	defer s.mu.Unlock()
	var as []grpcjsAttempt
	for _, a := range s.attempts[method] {
		as = append(as, *a)
	}
	return as
}

// grpcjsCall is one line of client.js's output.
type grpcjsCall struct {
	Method  string  `json:"method"`
	MS      float64 `json:"ms"`
	Code    string  `json:"code"`
	Details string  `json:"details"`
	Error   string  `json:"error"`
	// Start is when the call began (ms since the epoch), Lag the most
	// node's event loop ran late while the calls were out (ms).
	Start float64 `json:"start"`
	Lag   float64 `json:"lag"`
}

// runGRPCJS runs client.js against addr with the service config file cfg,
// calling each method once (all at once), and returns its results by
// method.
func runGRPCJS(t *testing.T, node, addr, cfg string, methods []string) map[string]grpcjsCall {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{"client.js", addr, cfg}, methods...)...)
	cmd.Dir = grpcjsDir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	calls := map[string]grpcjsCall{}
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		var c grpcjsCall
		if jerr := json.Unmarshal(sc.Bytes(), &c); jerr != nil {
			t.Fatalf("client.js wrote %q: %v\nstderr: %s", sc.Text(), jerr, stderr.String())
		}
		if c.Error != "" {
			t.Fatalf("grpc-js: %s\nconfig %s", c.Error, cfg)
		}
		calls[c.Method] = c
	}
	if err != nil {
		t.Fatalf("node client.js: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	return calls
}

// TestGRPCJSConsumer: each channel's service config, as --emit grpc
// --channel prints it for --grpc-client go and for --grpc-client js, given
// to a real grpc-js client as its "grpc.service_config" channel option
// (what GRPCChannel says grpc-js loads), makes every call to a server that
// never answers give up at the deadline the policy means (README: the
// timeout, or with retries the whole call with its retries and backoffs)
// within ±15% (never tighter than ±25 ms), with DEADLINE_EXCEEDED (or
// CANCELLED when grpc-go's reset of the stream at that same deadline
// reaches grpc-js first, see below), and sends that deadline to the
// server as its grpc-timeout; a method the logs did not show, of the same
// service or of another, gets the policy's default; and the server never
// sees more attempts of a call
// than the policy sends (1 + the hedges for js, where grpc-js hedges; 1
// for the go config, which has no hedging and retries only on codes this
// server never answers). The time is measured inside node around each
// call, so node's startup does not count.
func TestGRPCJSConsumer(t *testing.T) {
	node, version := grpcjsNode(t)
	t.Logf("node %s, @grpc/grpc-js %s", nodeVersion(node), version)
	p := emitPolicy()
	eps := emitEndpoints(p)
	const channel = "web→backend"
	for _, client := range []string{GRPCClientGo, GRPCClientJS} {
		t.Run(client, func(t *testing.T) {
			chans, _ := GRPCChannels(p, eps, GRPCOptions{Client: client})
			var cfg *GRPCChannel
			for i := range chans {
				if SameChannel(channel, chans[i]) {
					cfg = &chans[i]
				}
			}
			if cfg == nil {
				t.Fatalf("no channel %s in %v", channel, chans)
			}
			file := filepath.Join(t.TempDir(), filepath.FromSlash(cfg.File()))
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, []byte(cfg.Config), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("--grpc-client %s --channel '%s':\n%s", client, channel, cfg.Config)

			type want struct {
				label    string
				deadline time.Duration
				attempts int // at most
				hedges   bool
			}
			wants := map[string]want{}
			for _, e := range eps {
				h := p.For(e.Hop)
				w := want{label: "hop " + e.Hop, attempts: 1}
				if idem, _ := idempotentFor(h, e); !idem {
					h.Retries, h.Hedge = 0, Hedge{} // neither is emitted
				}
				if h.Hedge.Delay > 0 && GRPCHedges(client) {
					w.attempts, w.hedges = min(1+h.Hedge.Max, GRPCMaxAttempts), true
				}
				w.deadline = callBound(p, h)
				wants[e.Path()] = w
			}
			def := want{deadline: callBound(p, p.Default), attempts: 1}
			def.label = "unlisted method (the default)"
			wants["/pkg.Backend/Unlisted"] = def
			def.label = "unlisted service (the default)"
			wants["/pkg.Other/Call"] = def
			methods := make([]string, 0, len(wants))
			for m := range wants {
				methods = append(methods, m)
			}
			sort.Strings(methods)

			srv := startGRPCJSServer(t)
			calls := runGRPCJS(t, node, srv.addr, file, methods)
			srv.settled(t)
			for _, m := range methods {
				w := wants[m]
				c, ok := calls[m]
				if !ok {
					t.Errorf("%s (%s): client.js did not report the call", m, w.label)
					continue
				}
				got := time.Duration(c.MS * float64(time.Millisecond))
				tol := max(w.deadline*15/100, 25*time.Millisecond)
				arr := srv.arrivals(m)
				t.Logf("%-24s %-30s want %-7s got %8.1fms %s, %d attempt(s): %s",
					m, w.label, w.deadline, c.MS, c.Code, len(arr), describeAttempts(arr))
				switch {
				case c.Code == "DEADLINE_EXCEEDED":
				case c.Code == "CANCELLED" && c.Details == "Call cancelled" && len(arr) > 0 && got >= arr[0].deadline-time.Millisecond:
					// grpc-go's server enforces the deadline grpc-js sent
					// (grpc-timeout, checked below) by resetting the
					// stream with RST_STREAM CANCEL when it passes;
					// when that reset reaches grpc-js before its own
					// deadline timer fires (they are a fraction of a
					// millisecond apart on loopback), grpc-js 1.14
					// reports CANCELLED "Call cancelled" without
					// checking whether the deadline has passed (grpc-go's
					// client does, grpc/grpc-go#2211). The call was cut
					// at the config's deadline, no earlier than the
					// server's copy of it: a race of the two libraries,
					// which a grpc-js caller of a grpc-go server sees
					// too, not a misread config.
					t.Logf("%s: grpc-js reported CANCELLED %q at %.1fms: grpc-go's reset at the deadline (%s) reached it before its own deadline timer fired", m, c.Details, c.MS, arr[0].deadline.Round(time.Millisecond))
				default:
					t.Errorf("%s (%s): %s %q after %.1fms, want DEADLINE_EXCEEDED at %s", m, w.label, c.Code, c.Details, c.MS, w.deadline)
				}
				// The grpc-timeout grpc-js sends is what is left of the
				// deadline when the attempt goes out: on a loaded machine
				// node may send it late, so it may fall short of the
				// deadline by as much as the time from the call's start to
				// the server's receipt (the two read the same wall clock),
				// and never exceed it. A late event loop delays the
				// callback that measures the give-up, never hastens it.
				if len(arr) > 0 {
					sent := time.Duration(0)
					if c.Start > 0 {
						sent = max(0, arr[0].at.Sub(time.UnixMicro(int64(c.Start*1000))))
					}
					if d := arr[0].deadline; d < w.deadline-tol-sent || d > w.deadline+tol {
						t.Errorf("%s (%s): grpc-js sent its first attempt with a deadline of %s (grpc-timeout), %s after the call began; want %s (−%s) ±%s", m, w.label, arr[0].deadline, sent, w.deadline, sent, tol)
					}
				}
				late := time.Duration(c.Lag * float64(time.Millisecond))
				if got < w.deadline-tol || got > w.deadline+tol+late {
					t.Errorf("%s (%s): gave up after %.1fms, want %s ±%s (the event loop ran up to %s late)", m, w.label, c.MS, w.deadline, tol, late)
				}
				switch {
				case len(arr) > w.attempts:
					t.Errorf("%s (%s): the server saw %d attempts of one call, the policy sends at most %d", m, w.label, len(arr), w.attempts)
				case w.hedges && len(arr) < w.attempts:
					t.Errorf("%s (%s): the server saw %d attempts of one call that never answered: grpc-js did not send the %d the hedgingPolicy says", m, w.label, len(arr), w.attempts)
				case len(arr) == 0:
					t.Errorf("%s (%s): no attempt reached the server", m, w.label)
				}
			}
		})
	}
}

// describeAttempts writes, for each attempt, when it arrived after the
// first, the deadline it carried and how it ended at the server
// ("+0ms (deadline 300ms, context canceled) +50ms ...").
func describeAttempts(as []grpcjsAttempt) string {
	var b strings.Builder
	for i, a := range as {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "+%dms (deadline %s, %v)", a.at.Sub(as[0].at).Milliseconds(), a.deadline.Round(time.Millisecond), a.ended)
	}
	return b.String()
}

func nodeVersion(node string) string {
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		return "(unknown version)"
	}
	return strings.TrimSpace(string(out))
}
