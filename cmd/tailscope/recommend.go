// The recommend command: its flags and usage; writes the recommended policy (or its Envoy or gRPC form).

package main

import (
	"fmt"
	"io"

	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/report"
)

const recommendUsage = `Usage: tailscope recommend [flags] PATH... [-o policy.yaml]

Writes the policy tailscope recommends for the logs, as a policy file
that 'tailscope check --policy' reads back and passes:

  - only remote calls get a timeout (client/producer spans, or by the
    trace's shape when spans carry no kind); callee-side, in-process and
    root spans are bounded by the calls above them and the budget;
  - per call hop, timeout = round_up_nice(p × (1 + margin)) of its time to
    success, where p is --percentile or higher: requests make K calls, so
    each call may cut only --false-timeouts / K of its successes; a hop with
    too few successes for p gets its slowest success × (1 + margin), never
    a value below an observed success; never below 50ms;
  - the policy is then replayed on the same logs, and the timeouts that
    cut requests which succeeded as logged are raised until at most
    --false-timeouts of them fail (the basis says which and why);
  - observe-first when the tail is censored (too many attempts were cut by
    the timeout in force): a canary timeout to learn the tail, never a guess;
  - retries 0 for ran-to-timeout hops; 1–2 with full-jitter exponential
    backoff for transient hops whose retry yield shows they help;
    budget-aware retries on;
  - a budget covering every logged request (root span included) and the
    critical path with every configured retry, × (1 + margin), or
    --max-budget.

Each hop carries a comment with its basis. Without -o the policy goes to
stdout. --emit prints the same policy as the config a proxy or RPC
library reads, routed by endpoint (calling service, called service, gRPC
method or HTTP route, as the spans show them), with the differences in
semantics stated; calls that cannot be mapped are listed, never routed:
  envoy  an envoy.config.route.v3.RouteConfiguration per calling service
         (a virtual host per called service, cluster --cluster-name), and
         the clusters' retry budgets and outlier detection
  grpc   a JSON object of gRPC service configs keyed by "caller → service"
  istio  a networking.istio.io/v1 VirtualService per called service, its
         routes matching the caller's sourceLabels (app) and the URI
  linkerd  a linkerd.io/v1alpha2 ServiceProfile per called service
         (SERVICE.NAMESPACE.svc.cluster.local, --namespace)

Examples:
  tailscope recommend logs/ -o policy.yaml
  tailscope recommend --percentile 99.9 --max-budget 20s spans.jsonl
  tailscope recommend --emit grpc spans.jsonl > service-config.json
`

func runRecommend(e *env, args []string) error {
	fs := newFlags(e, "recommend", recommendUsage)
	var in inputFlags
	var an analysisFlags
	var output, emit string
	var eopt policy.EnvoyOptions
	fs.StringVarP(&output, "output", "o", "", "write the policy file here (atomically) instead of stdout")
	fs.StringVar(&emit, "emit", "policy", "what to write: policy (tailscope's YAML), envoy (a RouteConfiguration per caller), grpc (a service config per channel), istio (a VirtualService per called service), linkerd (a ServiceProfile per called service)")
	fs.StringVar(&eopt.ClusterName, "cluster-name", "{service}", "--emit envoy: the cluster of a called service ({service}, {namespace})")
	fs.StringVar(&eopt.Namespace, "namespace", "default", "the Kubernetes namespace of the services (--cluster-name, the Istio and Linkerd objects)")
	an.register(fs)
	in.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	switch emit {
	case "policy", "envoy", "grpc", "istio", "linkerd":
	default:
		return usagef("--emit %q: want policy, envoy, grpc, istio or linkerd", emit)
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
	// The hops whose timeout the policy sets: only remote calls get one
	// (callee-side, in-process and root hops are bounded by the calls
	// above them and the budget).
	hops := p.HopNames()
	var body []byte
	switch emit {
	case "policy":
		body = append([]byte(report.PolicyHeader(rep)), p.Marshal()...)
	case "envoy":
		out, notes := policy.Envoy(p, rep.Endpoints(hops), eopt)
		body = []byte(out)
		if !in.quiet {
			for _, n := range notes {
				fmt.Fprintln(e.stderr, "tailscope:", visible(n))
			}
		}
	case "istio", "linkerd":
		f := policy.Istio
		if emit == "linkerd" {
			f = policy.Linkerd
		}
		out, notes := f(p, rep.Endpoints(hops), eopt.Namespace)
		body = []byte(out)
		if !in.quiet {
			for _, n := range notes {
				fmt.Fprintln(e.stderr, "tailscope:", visible(n))
			}
		}
	case "grpc":
		out, notes := policy.GRPC(p, rep.Endpoints(hops), policy.GRPCOptions{})
		body = []byte(out)
		if !in.quiet {
			fmt.Fprintln(e.stderr, "tailscope: gRPC's methodConfig timeout covers the whole call with its retries, and maxAttempts counts the first attempt (at most 5).")
			for _, n := range notes {
				fmt.Fprintln(e.stderr, "tailscope:", visible(n))
			}
		}
	}
	if err := writeTo(e, output, func(w io.Writer) error { _, err := w.Write(body); return err }); err != nil {
		return err
	}
	if output != "" && output != "-" && !in.quiet {
		return report.PolicyWritten(e.stdout, output, rep, p)
	}
	return nil
}
