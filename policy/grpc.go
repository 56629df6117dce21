package policy

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/option"
)

// GRPCMaxAttempts is gRPC's cap on retryPolicy.maxAttempts and
// hedgingPolicy.maxAttempts.
const GRPCMaxAttempts = 5

// The gRPC libraries a service config is written for (GRPCOptions.Client):
// they read the same service config, but only some implement hedging.
const (
	GRPCClientGo     = "go"     // grpc-go: no hedging
	GRPCClientJava   = "java"   // grpc-java: hedging
	GRPCClientJS     = "js"     // @grpc/grpc-js (Node): hedging
	GRPCClientDotnet = "dotnet" // grpc-dotnet: hedging
	GRPCClientCore   = "core"   // C-core (C++, Python, Ruby, PHP, Objective-C): no hedging
)

// GRPCClients lists the clients GRPCOptions.Client takes, the default
// first.
var GRPCClients = []string{GRPCClientGo, GRPCClientJava, GRPCClientJS, GRPCClientDotnet, GRPCClientCore}

// GRPCHedges reports whether the client implements hedgingPolicy (gRFC
// A6): grpc-java, grpc-js and grpc-dotnet do; grpc-go and C-core accept
// the field and ignore it, so that a method with a hedgingPolicy is sent
// once and never retried.
func GRPCHedges(client string) bool {
	return client == GRPCClientJava || client == GRPCClientJS || client == GRPCClientDotnet
}

// GRPCOptions say which gRPC library reads the emitted service configs.
type GRPCOptions struct {
	// Client is one of GRPCClients; "" is grpc-go.
	Client string
	// Names names the settings the notes point to (option.Emit,
	// option.GRPCClient) as the caller's user knows them; nil: by
	// option's own names.
	Names option.Names
}

func (o GRPCOptions) client() string {
	if o.Client == "" {
		return GRPCClientGo
	}
	return o.Client
}

// GRPCChannel is the service config of one client channel: the calls of
// Caller to Service. Config is the JSON a client loads as it is (grpc-go:
// grpc.WithDefaultServiceConfig(Config); grpc-java:
// defaultServiceConfig of the parsed map; grpc-js: the
// "grpc.service_config" channel option).
type GRPCChannel struct {
	Caller, Service string
	Config          string
}

// Name is "caller → service", the channel's key in the index GRPC writes
// and what --channel selects (an ASCII "->" or "→" without spaces
// selects it too, see SameChannel).
func (c GRPCChannel) Name() string { return c.Caller + " → " + c.Service }

// File is where the channel's config goes under a directory: the
// caller's directory, the service's file, CALLER/SERVICE.json, each name
// kept as the logs spell it where a file name can hold it (letters,
// digits, '.', '-', '_'), else with the rest replaced and a short hash of
// the name, so that two channels never share a file; any caller is
// "_any".
func (c GRPCChannel) File() string {
	caller := "_any"
	if c.Caller != AnyCaller {
		caller = fileName(c.Caller)
	}
	return caller + "/" + fileName(c.Service) + ".json"
}

// fileName makes a file name of s (see GRPCChannel.File).
func fileName(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.' && i > 0:
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	n := b.String()
	if n == s && n != "" && len(n) <= 100 {
		return n
	}
	h := fnv.New32a()
	h.Write([]byte(s))
	if len(n) > 90 {
		n = n[:90]
	}
	return n + "-" + strconv.FormatUint(uint64(h.Sum32()), 36)
}

// SameChannel reports whether sel, as a user writes it on the command
// line ("frontend→cartservice", "frontend -> cartservice", "frontend →
// cartservice"), names the channel.
func SameChannel(sel string, c GRPCChannel) bool {
	for _, sep := range []string{"→", "->"} {
		if a, b, ok := strings.Cut(sel, sep); ok {
			return strings.TrimSpace(a) == c.Caller && strings.TrimSpace(b) == c.Service
		}
	}
	return false
}

// GRPC renders the policy as gRPC service configs, one per channel, in
// one JSON object keyed by "caller → service": an index of the channels
// that check --policy reads whole and a person reviews. A client does not
// load the index (grpc-go ignores its unknown keys without an error): it
// loads its channel's object, which GRPCChannels gives on its own. See
// GRPCChannels for what each holds.
func GRPC(p *Policy, eps []Endpoint, opt GRPCOptions) (string, []string) {
	chans, notes := GRPCChannels(p, eps, opt)
	idx := make(map[string]json.RawMessage, len(chans))
	for _, c := range chans {
		idx[c.Name()] = json.RawMessage(c.Config)
	}
	out, _ := json.MarshalIndent(idx, "", "  ")
	return JSONVisible(string(out)) + "\n", notes
}

// GRPCChannels renders the policy as one gRPC service config (gRFC A2,
// A6) per channel, in the order of their names: a methodConfig per gRPC
// endpoint, named by its proto service and method, which is what gRPC
// matches a call by, and a last one named [{}] with the policy's default,
// which gRPC applies to every method the others do not name (a method the
// logs did not show); an endpoint of a whole service (a flat log's hop)
// is that [{}] itself. HTTP and unmapped endpoints are left out, and the
// notes say so and why. Each config carries a "tailscope" object naming
// its caller, service and client, which gRPC libraries ignore (they read
// only the fields they know) and check --policy reads to apply the config
// to that channel only. Durations are written with nine fraction digits
// ("0.960000000s"): grpc-js reads a shorter fraction as nanoseconds
// ("0.96s" as 96 ns).
//
// Semantics differ: gRPC's methodConfig `timeout` is the deadline of the
// whole RPC including retries (there is no per-attempt timeout), and
// retryPolicy.maxAttempts counts the first attempt and is capped at 5. A
// method has a retryPolicy or a hedgingPolicy, not both. For a client
// that does not implement hedging (opt.Client go or core) a hedged hop
// keeps its retryPolicy and loses the hedge, with a note: its
// hedgingPolicy would be ignored, and the retries with it. For java, js
// and dotnet a hedged hop gets a hedgingPolicy of at most 1 + the hedge's
// max attempts, one every hedge delay (nonFatalStatusCodes, on which the
// next attempt is sent at once, when the hop retries). A call that is not
// idempotent (see idempotentFor) gets neither retries nor hedges: both
// resend calls the server may have acted on; gRPC's transparent retries
// still resend what never reached it. Without retries the deadline is the
// hop's timeout. The budget is the caller's deadline on the request, not
// a channel's: it is not in the output.
func GRPCChannels(p *Policy, eps []Endpoint, opt GRPCOptions) ([]GRPCChannel, []string) {
	client := opt.client()
	var notes []string
	noted := map[string]bool{}
	note := func(s string) {
		if !noted[s] {
			noted[s] = true
			notes = append(notes, s)
		}
	}
	httpN, httpHops := 0, map[string]bool{}
	type channel struct {
		caller, service string
		cfg             grpcConfig
		whole           bool
	}
	channels := map[string]*channel{}
	budgets := map[string][]string{} // channel → each hop's own retryThrottling
	for _, e := range eps {
		n := e.Hop
		switch {
		case e.Unmapped != "":
			note(fmt.Sprintf("%s: not emitted: %s", n, e.Unmapped))
			continue
		case !e.IsGRPC() && !e.Whole():
			httpN++
			httpHops[n] = true
			continue
		}
		h := p.For(n)
		ch := e.Channel()
		c := channels[ch]
		if c == nil {
			c = &channel{caller: e.CallerName(), service: e.Service}
			c.cfg.Tailscope = &grpcScope{Caller: e.CallerName(), Service: e.Service, Client: client}
			channels[ch] = c
		}
		names := []grpcName{{Service: e.GRPCService, Method: e.GRPCMethod}}
		if e.Whole() {
			names = []grpcName{{}} // the channel's default
			c.whole = true
		}
		idem, why := idempotentFor(h, e)
		c.cfg.MethodConfig = append(c.cfg.MethodConfig, grpcMethodFor(p, n, names, h, idem, why, client, opt.Names, note))
		if rb, ok := p.RetryBudgets[n]; ok && rb.MaxTokens > 0 {
			own := c.cfg.throttle(n, rb)
			if !slices.Contains(budgets[ch], own) {
				budgets[ch] = append(budgets[ch], own)
			}
		}
	}
	if httpN > 0 {
		note(fmt.Sprintf("%d HTTP %s of %d %s left out: a gRPC service config matches gRPC methods only (see %s envoy, istio or linkerd)",
			httpN, units.Plural(httpN, "endpoint", "endpoints"), len(httpHops), units.Plural(len(httpHops), "hop", "hops"), opt.Names.Of(option.Emit)))
	}
	def := p.Default
	if def.Timeout > 0 || def.Retries > 0 || def.Hedge.Delay > 0 {
		idem, why := idempotentDefault(def)
		for _, ch := range slices.Sorted(maps.Keys(channels)) {
			if c := channels[ch]; !c.whole {
				c.cfg.MethodConfig = append(c.cfg.MethodConfig, grpcMethodFor(p, "the default", []grpcName{{}}, def, idem, why, client, opt.Names, note))
			}
		}
	}
	for _, ch := range slices.Sorted(maps.Keys(budgets)) {
		if each := budgets[ch]; len(each) > 1 {
			note(ch + ": retryThrottling applies to a whole channel: this config has the most conservative of its hops' budgets: " + strings.Join(each, ", "))
		}
	}
	if GRPCHedges(client) && noted[grpcHedgedNote] {
		note(fmt.Sprintf("these configs are for %s %s: a grpc-go or C-core client ignores hedgingPolicy and would send those methods once, without retries", opt.Names.Of(option.GRPCClient), client))
	}
	var out []GRPCChannel
	for _, ch := range slices.Sorted(maps.Keys(channels)) {
		c := channels[ch]
		js, _ := json.MarshalIndent(c.cfg, "", "  ")
		out = append(out, GRPCChannel{Caller: c.caller, Service: c.service, Config: JSONVisible(string(js)) + "\n"})
	}
	return out, notes
}

// grpcHedgedNote is noted when a hedgingPolicy is written.
const grpcHedgedNote = "hedgingPolicy: the first attempt, then one more every hedgingDelay while none has answered, up to maxAttempts; the first answer wins"

// grpcConfig is a gRPC service config (gRFC A2) as GRPC writes it: the
// method configs of one channel, and its retry throttling, after the
// channel it is for.
type grpcConfig struct {
	Tailscope       *grpcScope      `json:"tailscope,omitempty"`
	MethodConfig    []grpcMethod    `json:"methodConfig"`
	RetryThrottling *grpcThrottling `json:"retryThrottling,omitempty"`
}

// grpcScope names the channel a config is for (and the client it was
// written for): gRPC libraries ignore it; reading the config back, check
// applies it to that channel.
type grpcScope struct {
	Caller  string `json:"caller"`
	Service string `json:"service"`
	Client  string `json:"client,omitempty"`
}

type grpcMethod struct {
	Name          []grpcName   `json:"name"`
	Timeout       string       `json:"timeout,omitempty"`
	RetryPolicy   *grpcRetry   `json:"retryPolicy,omitempty"`
	HedgingPolicy *grpcHedging `json:"hedgingPolicy,omitempty"`
}

type grpcName struct {
	Service string `json:"service,omitempty"`
	Method  string `json:"method,omitempty"`
}

type grpcRetry struct {
	MaxAttempts          int      `json:"maxAttempts"`
	InitialBackoff       string   `json:"initialBackoff"`
	MaxBackoff           string   `json:"maxBackoff"`
	BackoffMultiplier    float64  `json:"backoffMultiplier"`
	RetryableStatusCodes []string `json:"retryableStatusCodes"`
}

type grpcHedging struct {
	MaxAttempts         int      `json:"maxAttempts"`
	HedgingDelay        string   `json:"hedgingDelay"`
	NonFatalStatusCodes []string `json:"nonFatalStatusCodes,omitempty"`
}

type grpcThrottling struct {
	MaxTokens  int     `json:"maxTokens"`
	TokenRatio float64 `json:"tokenRatio"`
}

// grpcRetryable are the status codes a gRPC retry or hedge goes on after:
// the server is unavailable or shedding load, so another attempt may land.
var grpcRetryable = []string{"UNAVAILABLE", "RESOURCE_EXHAUSTED"}

// GRPCDuration writes d as a gRPC service config duration: whole seconds
// and nine fraction digits ("0.960000000s", "2.000000000s"), which every
// gRPC library reads as written (grpc-js reads a shorter fraction as
// nanoseconds).
func GRPCDuration(d time.Duration) string {
	return fmt.Sprintf("%d.%09ds", d/time.Second, d%time.Second)
}

// grpcMethodFor is the method config, named names, of calls under the
// policy h (label names them in notes; idem says whether they may be
// resent after reaching the server, why says why): the deadline of the
// hop's call, and a retryPolicy for a hop that retries, or, for a hedged
// hop and a client that implements hedging, a hedgingPolicy. note
// receives what gRPC cannot say as tailscope does, naming settings by
// opts.
func grpcMethodFor(p *Policy, label string, names []grpcName, h Hop, idem bool, why, client string, opts option.Names, note func(string)) grpcMethod {
	eh := h
	if !idem {
		if h.Hedge.Delay > 0 {
			note(fmt.Sprintf("%s: not idempotent (%s): its hedge after %s is left out: a hedge resends a call the server may already act on (set idempotent: true in the policy if it is safe)",
				label, why, units.DecimalSeconds(h.Hedge.Delay)))
		}
		if h.Retries > 0 {
			note(fmt.Sprintf("%s: not idempotent (%s): its %d %s left out: a retryPolicy resends calls that reached the server; gRPC's transparent retries still resend what never left the client (set idempotent: true in the policy if it is safe)",
				label, why, h.Retries, units.Plural(h.Retries, "retry is", "retries are")))
		}
		eh.Retries, eh.Hedge = 0, Hedge{}
	}
	hedge := eh.Hedge.Delay > 0 && GRPCHedges(client)
	if eh.Hedge.Delay > 0 && !hedge {
		note(fmt.Sprintf("%s: its hedge after %s is left out: gRPC-%s does not implement hedgingPolicy (gRFC A6), and a method with one is sent once and never retried; %s (hedge in a proxy, %s envoy, or write for a client that hedges, %s java, js or dotnet)",
			label, units.DecimalSeconds(eh.Hedge.Delay), client, keptRetries(eh.Retries), opts.Of(option.Emit), opts.Of(option.GRPCClient)))
		eh.Hedge = Hedge{}
	}
	m := grpcMethod{Name: names}
	if d := callBound(p, eh); d > 0 {
		m.Timeout = GRPCDuration(d)
	}
	switch {
	case hedge:
		attempts := 1 + eh.Hedge.Max
		if attempts > GRPCMaxAttempts {
			note(fmt.Sprintf("%s: %d attempts (the first and %d hedges) exceed gRPC's cap; hedgingPolicy.maxAttempts set to %d", label, attempts, eh.Hedge.Max, GRPCMaxAttempts))
			attempts = GRPCMaxAttempts
		}
		note(grpcHedgedNote)
		m.HedgingPolicy = &grpcHedging{MaxAttempts: attempts, HedgingDelay: GRPCDuration(eh.Hedge.Delay)}
		if eh.Retries > 0 {
			m.HedgingPolicy.NonFatalStatusCodes = grpcRetryable
			note(fmt.Sprintf("%s: a method has a retryPolicy or a hedgingPolicy, not both: its %d %s share the %d hedged attempts, sent at once on %s, without backoff",
				label, eh.Retries, units.Plural(eh.Retries, "retry", "retries"), attempts-1, strings.Join(grpcRetryable, " or ")))
		}
		if eh.Timeout > 0 {
			note(fmt.Sprintf("%s: gRPC has no per-attempt timeout; no attempt is cut at %s, the %s deadline bounds the call", label, units.DecimalSeconds(eh.Timeout), units.DecimalSeconds(callBound(p, eh))))
		}
	case eh.Retries > 0:
		attempts := eh.Retries + 1
		if attempts > GRPCMaxAttempts {
			note(fmt.Sprintf("%s: %d retries exceed gRPC's cap; maxAttempts set to %d", label, eh.Retries, GRPCMaxAttempts))
			attempts = GRPCMaxAttempts
		}
		base := eh.Backoff.Base
		if base <= 0 {
			base = time.Millisecond // gRPC requires a positive backoff
		}
		m.RetryPolicy = &grpcRetry{MaxAttempts: attempts, InitialBackoff: GRPCDuration(base), MaxBackoff: GRPCDuration(max(eh.Backoff.Max, base)),
			BackoffMultiplier: 2, RetryableStatusCodes: grpcRetryable}
		if eh.Timeout > 0 {
			note(fmt.Sprintf("%s: gRPC has no per-attempt timeout; the %s per attempt becomes a %s deadline for the whole call", label, units.DecimalSeconds(eh.Timeout), units.DecimalSeconds(callBound(p, eh))))
		}
	}
	return m
}

func keptRetries(n int) string {
	if n == 0 {
		return "it has no retries"
	}
	return fmt.Sprintf("its %d %s kept in a retryPolicy", n, units.Plural(n, "retry is", "retries are"))
}

// throttle applies the hop's retry budget to the channel: retryThrottling
// is one per channel, so with several hops on it the most conservative of
// their budgets. It returns the hop's own, as the note on a shared
// channel lists it.
func (c *grpcConfig) throttle(hop string, rb RetryBudget) string {
	t := c.RetryThrottling
	if t == nil {
		t = &grpcThrottling{MaxTokens: rb.MaxTokens, TokenRatio: rb.TokenRatio}
		c.RetryThrottling = t
	}
	t.MaxTokens, t.TokenRatio = min(t.MaxTokens, rb.MaxTokens), min(t.TokenRatio, rb.TokenRatio)
	return fmt.Sprintf("%s {maxTokens: %d, tokenRatio: %s}", hop, rb.MaxTokens, strconv.FormatFloat(rb.TokenRatio, 'f', -1, 64))
}
