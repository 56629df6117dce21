package analyze

import (
	"fmt"
	"github.com/tailscope/tailscope/route"
	"net"
	"net/url"
	"sort"
	"strings"

	"github.com/tailscope/tailscope/internal/par"
	"github.com/tailscope/tailscope/option"

	"github.com/tailscope/tailscope/span"
)

// Endpoints: every caller-side hop mapped to where its calls go (caller
// service, called service, gRPC method or HTTP route), so that an emitted
// config routes what the policy times out, and a config read back maps to
// hops.
//
// Each attempt of a call whose role is call is mapped on its own:
//
//   - the caller is the span's service; a span without one (a flat log) is
//     called by the service its parent call went to, and a top-level call
//     of a flat log by any caller;
//   - the called service is the service of the server span paired below it
//     (as for the gap), else the span's peer.service, its peer (Zipkin's
//     remote endpoint, server.address), server.address or net.peer.name (a
//     DNS name; ".svc.cluster.local" names give their first label); a span
//     without a service of its own (a flat log: "rank", "db.query") names
//     the called service by its hop, routed as a whole;
//   - the route is the gRPC method from rpc.service and rpc.method or a
//     gRPC-style span name ("pkg.Service/Method", "/pkg.Service/Method"),
//     the client span's before the server span's; else the HTTP method
//     (http.request.method, http.method, a name "HTTP GET" or "GET /x") and
//     route, a template before a path (http.route, a server span named by
//     its path as Spring's are, url.path, http.target without its query).
//
// A call whose called service cannot be found is listed with the reason and
// never emitted: a route that matches every service would take the calls
// of all of them. The same for a hop whose calls go to more than
// MaxRoutesPerService concrete paths of one service (ids in the path, no
// template logged), and for every hop but the busiest of those that share
// one route (a config can give a route one policy).
const MaxRoutesPerService = 20

// routingKeys are the span attributes the mapping reads. The trace sample
// keeps these, and only these, of each span's attributes.
var routingKeys = map[string]bool{
	"rpc.system": true, "rpc.service": true, "rpc.method": true,
	"http.route": true, "url.path": true, "http.target": true, "url.full": true, "http.url": true,
	"http.request.method": true, "http.method": true,
	"server.address": true, "peer.service": true, "net.peer.name": true,
}

func attr(s *span.Span, key string) string {
	if s == nil {
		return ""
	}
	for _, a := range s.Attrs {
		if a.Key == key {
			return a.Value
		}
	}
	return ""
}

// endpointMinPer is the fewest requests a goroutine of MapEndpoints walks.
const endpointMinPer = 512

// MapEndpoints fills Hop.Endpoints from the call trees.
func MapEndpoints(rep *Report, reqs []*span.Request) {
	type hk struct {
		hop string
		e   route.Endpoint
	}
	// The requests are walked on all cores (package par), each range
	// counting into its own map; the counts are summed after.
	parts := make([]map[hk]int, par.Workers(len(reqs), endpointMinPer))
	par.Ranges(len(reqs), endpointMinPer, func(w, lo, hi int) {
		counts := map[hk]int{}
		var walk func(cs []*span.Call, caller string)
		walk = func(cs []*span.Call, caller string) {
			for _, c := range cs {
				for _, a := range c.Attempts {
					s := a.Span
					inner := caller
					if s.Service != "" {
						inner = s.Service
					}
					if c.Role == span.RoleCall {
						e := endpointOf(s, serverOf(a), caller)
						counts[hk{c.Hop, e}]++
						if e.Service != "" && s.Service == "" {
							inner = e.Service
						}
					}
					walk(a.Calls, inner)
				}
			}
		}
		for _, r := range reqs[lo:hi] {
			caller := ""
			if r.Root != nil {
				caller = r.Root.Service
				if caller == "" {
					caller = r.Root.Hop
				}
			}
			walk(r.Calls, caller)
		}
		parts[w] = counts
	})
	counts := parts[0]
	for _, p := range parts[1:] {
		for k, n := range p {
			counts[k] += n
		}
	}
	byHop := map[string][]route.Endpoint{}
	for k, n := range counts {
		e := k.e
		e.Hop, e.Calls = k.hop, n
		byHop[k.hop] = append(byHop[k.hop], e)
	}
	for hop, es := range byHop {
		byHop[hop] = boundRoutes(es, rep.opt.Names)
	}
	resolveShared(byHop)
	for i := range rep.Hops {
		es := byHop[rep.Hops[i].Hop]
		sort.Slice(es, func(a, b int) bool { return endpointLess(es[a], es[b]) })
		rep.Hops[i].Endpoints = es
	}
}

func endpointLess(a, b route.Endpoint) bool {
	if a.Caller != b.Caller {
		return a.Caller < b.Caller
	}
	if a.Service != b.Service {
		return a.Service < b.Service
	}
	if a.Path() != b.Path() {
		return a.Path() < b.Path()
	}
	if a.Method != b.Method {
		return a.Method < b.Method
	}
	return a.Unmapped < b.Unmapped
}

// boundRoutes folds a hop's concrete HTTP paths into one unmapped entry
// per caller and service when there are more than MaxRoutesPerService;
// the entry names HopBy by names.
func boundRoutes(es []route.Endpoint, names option.Names) []route.Endpoint {
	type cs struct{ caller, service string }
	paths := map[cs]int{}
	for _, e := range es {
		if e.Unmapped == "" && !e.IsGRPC() && e.Route != "" && !e.Template() {
			paths[cs{e.Caller, e.Service}]++
		}
	}
	var out []route.Endpoint
	folded := map[cs]int{}
	for _, e := range es {
		k := cs{e.Caller, e.Service}
		if paths[k] > MaxRoutesPerService && e.Unmapped == "" && !e.IsGRPC() && e.Route != "" && !e.Template() {
			folded[k] += e.Calls
			continue
		}
		out = append(out, e)
	}
	for k, n := range folded {
		out = append(out, route.Endpoint{Hop: es[0].Hop, Caller: k.caller, Service: k.service, Calls: n,
			Unmapped: fmt.Sprintf("%d distinct paths of %s without a route template (ids in the path?): log http.route, or name the hop by it (%s attr:http.route)", paths[k], k.service, names.Of(option.HopBy))})
	}
	return out
}

// resolveShared keeps a route shared by several hops with the hop that
// has the most calls on it; the others' copies become unmapped.
func resolveShared(byHop map[string][]route.Endpoint) {
	owner := map[string]route.Endpoint{}
	for _, es := range byHop {
		for _, e := range es {
			if e.Unmapped != "" {
				continue
			}
			k := e.RouteKey()
			o, ok := owner[k]
			if !ok || e.Calls > o.Calls || (e.Calls == o.Calls && e.Hop < o.Hop) {
				owner[k] = e
			}
		}
	}
	for hop, es := range byHop {
		for i, e := range es {
			if e.Unmapped != "" {
				continue
			}
			if o := owner[e.RouteKey()]; o.Hop != hop {
				es[i].Unmapped = fmt.Sprintf("the same route as hop %q, which has more calls on it (%d against %d): a config gives a route one policy", o.Hop, o.Calls, e.Calls)
			}
		}
	}
}

// endpointOf maps one caller-side span, with srv the server span paired
// below it (nil when none) and caller the service of the call above.
func endpointOf(s, srv *span.Span, caller string) route.Endpoint {
	e := route.Endpoint{Caller: s.Service}
	if e.Caller == "" {
		e.Caller = caller
	}
	e.Service, e.Unmapped = calledService(s, srv)
	if e.Unmapped != "" {
		return e
	}
	if svc, m := grpcOf(s); svc != "" {
		e.GRPCService, e.GRPCMethod = svc, m
		return e
	}
	if svc, m := grpcOf(srv); svc != "" {
		e.GRPCService, e.GRPCMethod = svc, m
		return e
	}
	e.Method, e.Route = httpOf(s, srv)
	return e
}

// calledService is the service s calls, or "" and why not.
func calledService(s, srv *span.Span) (string, string) {
	if srv != nil && srv.Service != "" {
		return srv.Service, ""
	}
	if v := attr(s, "peer.service"); v != "" {
		return v, ""
	}
	why := ""
	for _, v := range []string{s.Peer, attr(s, "server.address"), attr(s, "net.peer.name")} {
		if v == "" {
			continue
		}
		h, w := hostService(v)
		if h != "" {
			return h, ""
		}
		why = w
	}
	if s.Service == "" && s.Hop != "" {
		// A flat log: the hop names the called service.
		return s.Hop, ""
	}
	if why != "" {
		return "", why
	}
	return "", "no called service: no server span of another service below it, and no peer.service, server.address or net.peer.name"
}

// hostService turns a peer address into a service name: the port and a
// scheme dropped, a Kubernetes service DNS name ("cart.shop.svc.cluster.local")
// to its first label. An IP address names no service.
func hostService(v string) (string, string) {
	if u, err := url.Parse(v); err == nil && u.Host != "" {
		v = u.Host
	}
	if h, _, err := net.SplitHostPort(v); err == nil {
		v = h
	}
	v = strings.Trim(v, "[]")
	if net.ParseIP(v) != nil {
		return "", fmt.Sprintf("the peer is an address (%s), not a service name: log peer.service or a server span", v)
	}
	if i := strings.Index(v, ".svc"); i > 0 && (strings.HasSuffix(v, ".svc") || strings.Contains(v, ".svc.")) {
		v = v[:i]
		if j := strings.IndexByte(v, '.'); j > 0 {
			v = v[:j]
		}
	}
	return v, ""
}

// grpcOf reads a gRPC service and method from s: rpc.service and
// rpc.method (when rpc.system is grpc or absent), else a name
// "pkg.Service/Method" with or without a leading slash.
func grpcOf(s *span.Span) (string, string) {
	if s == nil {
		return "", ""
	}
	if sys := attr(s, "rpc.system"); sys == "" || sys == "grpc" {
		if svc, m := attr(s, "rpc.service"), attr(s, "rpc.method"); svc != "" && m != "" && ident(m) && protoName(svc) {
			return svc, m
		}
	}
	n := strings.TrimPrefix(s.Name, "/")
	svc, m, ok := strings.Cut(n, "/")
	if !ok || !strings.Contains(svc, ".") || !protoName(svc) || !ident(m) {
		return "", ""
	}
	return svc, m
}

// protoName reports whether s is a full proto service name: identifiers
// joined by dots.
func protoName(s string) bool {
	for _, p := range strings.Split(s, ".") {
		if !ident(p) {
			return false
		}
	}
	return true
}

func ident(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '_' && !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && !(i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

var httpMethods = map[string]bool{"GET": true, "HEAD": true, "POST": true, "PUT": true, "DELETE": true,
	"CONNECT": true, "OPTIONS": true, "TRACE": true, "PATCH": true}

// httpOf reads the HTTP method and route of a call from the client span s
// and the server span srv.
func httpOf(s, srv *span.Span) (method, path string) {
	nameParts := func(x *span.Span) (m, p string) {
		if x == nil {
			return "", ""
		}
		f := strings.Fields(x.Name)
		if len(f) == 2 && f[0] == "HTTP" && httpMethods[f[1]] {
			return f[1], ""
		}
		if len(f) >= 1 && httpMethods[f[0]] {
			m = f[0]
			if len(f) == 2 && strings.HasPrefix(f[1], "/") {
				p = f[1]
			}
			return m, p
		}
		if len(f) == 1 && strings.HasPrefix(f[0], "/") {
			return "", f[0]
		}
		return "", ""
	}
	cm, cp := nameParts(s)
	sm, sp := nameParts(srv)
	for _, m := range []string{attr(s, "http.request.method"), attr(s, "http.method"), cm, attr(srv, "http.request.method"), attr(srv, "http.method"), sm} {
		if m = strings.ToUpper(m); httpMethods[m] {
			method = m
			break
		}
	}
	var paths []string
	for _, p := range []string{attr(s, "http.route"), attr(srv, "http.route"), sp, cp,
		attr(s, "url.path"), attr(srv, "url.path"), attr(s, "http.target"), attr(srv, "http.target"),
		urlPath(attr(s, "url.full")), urlPath(attr(s, "http.url"))} {
		p, _, _ = strings.Cut(p, "?")
		if strings.HasPrefix(p, "/") {
			paths = append(paths, p)
		}
	}
	for _, p := range paths {
		if (route.Endpoint{Route: p}).Template() {
			return method, p
		}
	}
	if len(paths) > 0 {
		return method, paths[0]
	}
	return method, ""
}

func urlPath(v string) string {
	if v == "" {
		return ""
	}
	u, err := url.Parse(v)
	if err != nil {
		return ""
	}
	return u.Path
}

// Endpoints lists the endpoints of hops, in the order of hops and each
// hop's in its own order, with Hop set: mapped and unmapped alike (the
// emitters route the mapped ones and list the others with their reasons).
// A hop without call-side calls in the logs gets one unmapped entry.
func (r *Report) Endpoints(hops []string) []route.Endpoint {
	byName := make(map[string]*Hop, len(r.Hops))
	for i := range r.Hops {
		byName[r.Hops[i].Hop] = &r.Hops[i]
	}
	var out []route.Endpoint
	for _, name := range hops {
		h := byName[name]
		if h == nil || len(h.Endpoints) == 0 {
			out = append(out, route.Endpoint{Hop: name, Unmapped: "no caller-side call of this hop in the logs (or in their trace sample)"})
			continue
		}
		for _, e := range h.Endpoints {
			e.Hop = name
			out = append(out, e)
		}
	}
	return out
}
