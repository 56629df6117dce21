// The recommend command: its flags and usage; writes the recommended policy (or the config a proxy or RPC library reads).

package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/report"
)

const recommendUsage = `Usage: tailscope recommend [flags] PATH... [-o policy.yaml]

Writes the policy tailscope recommends for the logs, as a policy file
that 'tailscope check --policy' reads back and passes:

  - only remote calls get a timeout (client/producer spans, or by the
    trace's shape when spans carry no kind); callee-side, in-process and
    root spans are bounded by the calls above them and the budget;
  - set: per call hop, timeout = round_up_nice(p × (1 + margin)) of its
    time to success, where p is --percentile or higher: requests make K
    calls, so each call may cut only --false-timeouts / K of its successes;
    a hop with too few successes to certify p gets a fitted tail's
    quantile, at least its slowest success × (1 + margin) and at most
    4 × its slowest success; then × its drift headroom beyond the margin,
    and such a fitted timeout × the factor that holding out each time
    block against the others calls for (records), within 4 × the slowest
    success; never below 50ms;
  - observe-first when the tail is censored (attempts were cut by the
    timeout in force): a canary at 4 × the cut (or the slowest success ×
    (1 + margin) if higher) to learn the tail, never a guess;
  - keep with fewer than 20 successful attempts: the timeout in force,
    raised to 4 × the slowest success if that is higher;
  - the policy is then replayed on the same logs, and the timeouts that
    cut requests which succeeded as logged are raised until at most
    --false-timeouts of them fail (the basis says which and why);
  - retries 0 for ran-to-timeout hops; 1–2 with full-jitter exponential
    backoff for transient hops whose retry yield shows they help;
    budget-aware retries on;
  - a budget from the requests' own time to success, not from the sum of
    the timeouts: the successful request that certifies --false-timeouts
    (an order statistic), else their fitted tail, × the requests' drift
    headroom × (1 + margin); at least the slowest successful request ×
    (1 + margin), at most 3 × it; never below every hop timeout ×
    (1 + margin), nor, on paths through a hop that retries, below every
    configured attempt at its timeout; --max-budget caps it.

Each hop carries a comment with its basis. Without -o the policy goes to
stdout. --emit prints the same policy as the config a proxy or RPC
library reads, routed by endpoint (calling service, called service, gRPC
method or HTTP route, as the spans show them), with the differences in
semantics stated; calls that cannot be mapped are listed, never routed.
Every config also routes what the logs did not show (another method,
path or caller) with the policy's default. A call is resent after it
reached the called service (a retry on a server error, a reset or a
timeout; a hedge) only when it is idempotent: the policy's idempotent
key (a hop of --policy-in-force that sets it keeps it), else HTTP GET,
HEAD, OPTIONS, TRACE, PUT, DELETE and gRPC methods named Get…, List…,
Read…, Query…, Check…, Watch… (and Search, Find, Lookup, Fetch,
Describe, Count, Exists, Stat); any other call is retried only when it
cannot have reached the service and never hedged.
  envoy  an envoy.config.route.v3.RouteConfiguration per calling service
         (a virtual host per called service ending with a route named
         default, cluster --cluster-name), and the clusters' retry budgets
         and outlier detection
  grpc   gRPC service configs, one per channel (caller → called service),
         each ending with a [{}] method config carrying the default. A
         client loads one channel's config, never the whole output:
           -o DIR              writes DIR/CALLER/SERVICE.json per channel
           --channel 'A→B'     prints the config of channel A → B alone
         and grpc-go takes it as grpc.WithDefaultServiceConfig(string(file)).
         Without either, stdout is an index of every channel keyed by
         "caller → service", for review and for check --policy: a client
         given the index ignores it without an error. --grpc-client
         names the library: go (default) and core (C++, Python, Ruby,
         PHP) ignore hedgingPolicy, so a hedged hop keeps its retries and
         loses the hedge; java, js and dotnet get a hedgingPolicy of at
         most the policy's hedges
  istio  a networking.istio.io/v1 VirtualService per called service, its
         routes matching the caller's sourceLabels (app) and the URI, then
         a route named default for every other caller and path
  linkerd  a linkerd.io/v1alpha2 ServiceProfile per called service
         (SERVICE.NAMESPACE.svc.cluster.local, --namespace), for Linkerd
         before 2.16
  linkerd-route  Gateway API GRPCRoutes and HTTPRoutes for Linkerd 2.16
         and later, one per gRPC method or HTTP route of a called service
         and one with the default, with Linkerd's timeout.linkerd.io and
         retry.linkerd.io annotations (delete the Service's ServiceProfile:
         with one, Linkerd ignores them)

Examples:
  tailscope recommend logs/ -o policy.yaml
  tailscope recommend --percentile 99.9 --max-budget 20s spans.jsonl
  tailscope recommend --emit grpc -o grpc-configs/ spans.jsonl
  tailscope recommend --emit grpc --channel 'checkoutservice→cartservice' spans.jsonl > cart.json
  tailscope recommend --emit linkerd-route --namespace shop spans.jsonl > routes.yaml
`

// emitFormats are what --emit takes.
var emitFormats = []string{"policy", "envoy", "grpc", "istio", "linkerd", "linkerd-route"}

func runRecommend(e *env, args []string) error {
	fs := newFlags(e, "recommend", recommendUsage)
	var in inputFlags
	var an analysisFlags
	var output, emit, channel string
	var eopt policy.EnvoyOptions
	gopt := policy.GRPCOptions{Names: flagNames}
	fs.StringVarP(&output, "output", "o", "", "write the policy file here (atomically) instead of stdout; with --emit grpc, a directory (an existing one, or a path ending in /) gets a file per channel, CALLER/SERVICE.json")
	fs.StringVar(&emit, "emit", "policy", "what to write: policy (tailscope's YAML), envoy (a RouteConfiguration per caller), grpc (a service config per channel), istio (a VirtualService per called service), linkerd (a ServiceProfile per called service), linkerd-route (Gateway API routes for Linkerd 2.16+)")
	fs.StringVar(&eopt.ClusterName, "cluster-name", "{service}", "--emit envoy: the cluster of a called service ({service}, {namespace})")
	fs.StringVar(&eopt.Namespace, "namespace", "default", "the Kubernetes namespace of the services (--cluster-name, the Istio and Linkerd objects)")
	fs.StringVar(&gopt.Client, "grpc-client", policy.GRPCClientGo, "--emit grpc: the gRPC library of the callers: go or core (C++, Python, Ruby, PHP), which ignore hedgingPolicy (a hedged hop keeps its retries, loses the hedge), or java, js, dotnet (hedgingPolicy)")
	fs.StringVar(&channel, "channel", "", "--emit grpc: print the service config of this channel alone, CALLER→SERVICE, as a client loads it")
	an.register(fs)
	in.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if !slices.Contains(emitFormats, emit) {
		return usagef("--emit %q: want %s", emit, strings.Join(emitFormats, ", "))
	}
	if !policy.DNSLabel(eopt.Namespace) {
		return usagef("--namespace %q: want a Kubernetes namespace (a DNS-1123 label: lower case letters, digits and '-', at most 63)", eopt.Namespace)
	}
	if !slices.Contains(policy.GRPCClients, gopt.Client) {
		return usagef("--grpc-client %q: want %s", gopt.Client, strings.Join(policy.GRPCClients, ", "))
	}
	if emit != "grpc" && (channel != "" || fs.Changed("grpc-client")) {
		return usagef("--channel and --grpc-client go with --emit grpc")
	}
	grpcDir := emit == "grpc" && output != "" && output != "-" && (strings.HasSuffix(output, "/") || isDir(output))
	if channel != "" && grpcDir {
		return usagef("--channel prints one channel's config: give -o a file, or leave --channel out to write every channel under %s", output)
	}
	if err := notAnInput(e, output, fs.Args(), named(an.policyInForce)); err != nil {
		return err
	}
	aopt, err := an.options()
	if err != nil {
		return err
	}
	l, err := load(e, fs.Args(), &in)
	if err != nil {
		return err
	}
	rep, p := l.Recommend(aopt)
	keepIdempotent(p, an.policyInForce)
	// The hops whose timeout the policy sets: only remote calls get one
	// (callee-side, in-process and root hops are bounded by the calls
	// above them and the budget).
	hops := p.HopNames()
	var body []byte
	var notes []string
	switch emit {
	case "policy":
		body = append([]byte(report.PolicyHeader(rep)), p.Marshal()...)
	case "envoy":
		var out string
		out, notes = policy.Envoy(p, rep.Endpoints(hops), eopt)
		body = []byte(out)
	case "istio", "linkerd", "linkerd-route":
		f := map[string]func(*policy.Policy, []policy.Endpoint, policy.MeshOptions) (string, []string){
			"istio": policy.Istio, "linkerd": policy.Linkerd, "linkerd-route": policy.LinkerdRoutes}[emit]
		var out string
		out, notes = f(p, rep.Endpoints(hops), policy.MeshOptions{Namespace: eopt.Namespace, Names: flagNames})
		body = []byte(out)
	case "grpc":
		chans, ns := policy.GRPCChannels(p, rep.Endpoints(hops), gopt)
		notes = ns
		if !in.quiet {
			fmt.Fprintln(e.stderr, "tailscope: gRPC's methodConfig timeout covers the whole call with its retries, and maxAttempts counts the first attempt (at most 5).")
		}
		switch {
		case grpcDir:
			printNotes(e, in.quiet, notes)
			if err := writeChannels(e, output, chans, in.quiet); err != nil || in.quiet {
				return err
			}
			return report.PolicyWritten(e.stdout, output, rep, p)
		case channel != "":
			i := slices.IndexFunc(chans, func(c policy.GRPCChannel) bool { return policy.SameChannel(channel, c) })
			if i < 0 {
				names := make([]string, len(chans))
				for j, c := range chans {
					names[j] = c.Name()
				}
				return fmt.Errorf("--channel %q: no such channel in these logs (they have %s)", channel, strings.Join(names, ", "))
			}
			body = []byte(chans[i].Config)
		default:
			var out string
			out, _ = policy.GRPC(p, rep.Endpoints(hops), gopt)
			body = []byte(out)
			if !in.quiet {
				fmt.Fprintln(e.stderr, "tailscope: this is an index of every channel's service config: a client loads one channel's, written by -o DIR or printed by --channel CALLER→SERVICE.")
			}
		}
	}
	printNotes(e, in.quiet, notes)
	if err := writeTo(e, output, func(w io.Writer) error { _, err := w.Write(body); return err }); err != nil {
		return err
	}
	if output != "" && output != "-" && !in.quiet {
		return report.PolicyWritten(e.stdout, output, rep, p)
	}
	return nil
}

func printNotes(e *env, quiet bool, notes []string) {
	if quiet {
		return
	}
	for _, n := range notes {
		fmt.Fprintln(e.stderr, "tailscope:", visible(n))
	}
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// writeChannels writes each gRPC channel's service config under dir, at
// CALLER/SERVICE.json (atomically, each), and says what it wrote.
func writeChannels(e *env, dir string, chans []policy.GRPCChannel, quiet bool) error {
	for _, c := range chans {
		path := filepath.Join(dir, filepath.FromSlash(c.File()))
		if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
			return fmt.Errorf("cannot write %s: %v", path, reason(err))
		}
		if err := writeFile(path, func(w io.Writer) error { _, err := io.WriteString(w, c.Config); return err }); err != nil {
			return err
		}
		if !quiet {
			fmt.Fprintf(e.stdout, "wrote %s: the service config of %s\n", path, visible(c.Name()))
		}
	}
	if !quiet {
		fmt.Fprintf(e.stdout, "%d gRPC %s under %s: a client of CALLER loads CALLER/SERVICE.json as its channel to SERVICE (grpc-go: grpc.WithDefaultServiceConfig)\n",
			len(chans), map[bool]string{true: "channel", false: "channels"}[len(chans) == 1], dir)
	}
	return nil
}

// keepIdempotent gives the recommended policy the idempotent key of the
// policy in force where it says it (its default's too): which calls are
// safe to resend is the operator's to say, and the logs cannot tell it.
func keepIdempotent(p *policy.Policy, inForce string) {
	if inForce == "" {
		return
	}
	q, err := policy.Load(inForce)
	if err != nil || q.Config != nil {
		return // the analysis has already read it and said what is wrong
	}
	if q.Default.Idempotent.Set() && !p.Default.Idempotent.Set() {
		p.Default.Idempotent = q.Default.Idempotent
	}
	for name, h := range p.Hops {
		switch {
		case q.Listed(name) && q.Hops[name].Idempotent.Set():
			h.Idempotent = q.Hops[name].Idempotent
		case !h.Idempotent.Set():
			h.Idempotent = p.Default.Idempotent
		}
		p.Hops[name] = h
	}
}
