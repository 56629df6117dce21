package check

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/policy"
)

// Codes of the findings on a deployed config read back (Envoy, gRPC,
// Istio, Linkerd).
const (
	// CodeRouteNoHop: a route of the config matches no call in the logs.
	CodeRouteNoHop = "route-matches-no-hop"
	// CodeHopNotRouted: a logged call no route of the config takes: the
	// config does not bound it.
	CodeHopNotRouted = "hop-not-routed"
	// CodeRoutesDisagree: one hop's calls take routes with different
	// settings; the replay uses the first.
	CodeRoutesDisagree = "routes-disagree"
	// CodeConfigReadback: what reading the format back had to assume.
	CodeConfigReadback = "config-readback"
)

// readBack turns a deployed config into the per-hop policy it amounts to
// on these logs: every caller-side endpoint the analysis mapped takes the
// first route that matches it (the order Envoy, Istio and Linkerd try
// routes in), and its hop gets that route's settings. A hop no route
// takes is left unbounded (no timeout, no retries), as the proxy leaves
// it. There is no request budget: none of the formats has one.
func readBack(rep *analyze.Report, p *policy.Policy) (*policy.Policy, []Finding) {
	cfg := p.Config
	out := &policy.Policy{Name: p.Name, Path: p.Path, Hops: map[string]policy.Hop{}, Lines: map[string]int{}}
	var fs []Finding
	used := make([]bool, len(cfg.Routes))
	type taken struct {
		route int
		calls int
	}
	byHop := map[string][]taken{}
	for _, h := range rep.Hops {
		for _, e := range h.Endpoints {
			if e.Unmapped != "" {
				fs = append(fs, Finding{Code: CodeHopNotRouted, Severity: SevWarning, Hop: h.Hop,
					Message: fmt.Sprintf("%d of its calls could not be mapped to an endpoint (%s): no route can take them", e.Calls, e.Unmapped)})
				continue
			}
			ri := -1
			for i := range cfg.Routes {
				if cfg.Routes[i].Matches(e) {
					ri = i
					break
				}
			}
			if ri < 0 {
				// The config's own catch-all for the call's service (or
				// any): the call is bounded by the default, as the proxy
				// or client bounds it.
				for i := range cfg.Defaults {
					if cfg.Defaults[i].Matches(e) {
						ri = len(cfg.Routes) + i
						break
					}
				}
			}
			if ri < 0 {
				fs = append(fs, Finding{Code: CodeHopNotRouted, Severity: SevWarning, Hop: h.Hop,
					Message: fmt.Sprintf("no route of the %s config takes %s (%d calls): the config leaves it unbounded", cfg.Format, e.Label(), e.Calls)})
				continue
			}
			if ri < len(cfg.Routes) {
				used[ri] = true
			}
			byHop[h.Hop] = append(byHop[h.Hop], taken{ri, e.Calls})
		}
	}
	routes := append(append([]policy.Route(nil), cfg.Routes...), cfg.Defaults...)
	for hop, ts := range byHop {
		first := routes[ts[0].route]
		out.Hops[hop] = first.Hop
		out.Lines[hop] = first.Line
		for _, t := range ts[1:] {
			r := routes[t.route]
			if r.Hop != first.Hop {
				fs = append(fs, Finding{Code: CodeRoutesDisagree, Severity: SevWarning, Hop: hop,
					Message: fmt.Sprintf("its calls take routes with different settings (%s and %s): replayed with the first", first.Label(), r.Label())})
				break
			}
		}
	}
	// A route's service that no logged call goes to (a misspelled
	// ServiceProfile name or annotation, a host of another cluster): one
	// finding for the service, naming what the logs call.
	var called []string
	for _, h := range rep.Hops {
		for _, e := range h.Endpoints {
			if e.Unmapped == "" && !slices.Contains(called, e.Service) {
				called = append(called, e.Service)
			}
		}
	}
	sort.Strings(called)
	unknown := map[string][]int{}
	var unknownOrder []string
	for _, r := range cfg.Routes {
		if r.Service == "" || slices.ContainsFunc(called, func(s string) bool { return policy.ServiceMatches(r.Service, s) }) {
			continue
		}
		if unknown[r.Service] == nil {
			unknownOrder = append(unknownOrder, r.Service)
		}
		unknown[r.Service] = append(unknown[r.Service], r.Line)
	}
	for _, svc := range unknownOrder {
		lines := make([]string, len(unknown[svc]))
		for i, l := range unknown[svc] {
			lines[i] = fmt.Sprint(l)
		}
		fs = append(fs, Finding{Code: CodeRouteNoHop, Severity: SevWarning,
			Message: fmt.Sprintf("the %s config routes service %q (line %s), which no call in the logs goes to (they call %s): its routes bound nothing here; check the service's name",
				cfg.Format, svc, strings.Join(lines, ", "), strings.Join(called, ", "))})
	}
	anyUsed := false
	for i, u := range used {
		anyUsed = anyUsed || u
		if !u && unknown[cfg.Routes[i].Service] == nil {
			r := cfg.Routes[i]
			fs = append(fs, Finding{Code: CodeRouteNoHop, Severity: SevWarning,
				Message: fmt.Sprintf("route %s matches no call in the logs", r.Label())})
		}
	}
	if !anyUsed && len(byHop) == 0 && len(called) > 0 {
		// Not a pass: the config bounds none of the logged calls.
		fs = append(fs, Finding{Code: CodeRouteNoHop, Severity: SevError,
			Message: fmt.Sprintf("no route of the %s config takes any call in the logs: it bounds none of them", cfg.Format)})
	}
	for _, n := range cfg.Notes {
		fs = append(fs, Finding{Code: CodeConfigReadback, Severity: SevInfo, Message: n})
	}
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].Code < fs[j].Code })
	return out, fs
}
