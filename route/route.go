// Package route is where a hop's calls go, in the terms a proxy or an RPC
// library routes by (Endpoint): the analysis maps each hop to its
// endpoints from the spans' attributes (package analyze), the emitters
// write a config's routes from them and read a config's routes back to
// hops through them (package policy). It is a leaf both import, so that
// the statistics need not import the policy file's package.
package route

import (
	"regexp"
	"strings"
)

// Endpoint is where the calls of one hop go, in the terms a proxy or an
// RPC library routes by: the calling service, the called service, and the
// gRPC method or the HTTP method and route. A hop label ("checkoutservice
// hipstershop.CartService/GetCart") is tailscope's bucket, not a name any
// consumer of a config knows; an emitted config speaks of endpoints, and
// reading a config back maps its routes to hops through them.
//
// A hop may have several endpoints (one HTTP client span name, "HTTP GET",
// calling three routes of two services); an endpoint that could not be
// mapped carries the reason in Unmapped and is never emitted.
type Endpoint struct {
	// Hop is the hop whose calls these are (not in JSON: the report lists
	// endpoints under their hop).
	Hop string `json:"-"`
	// Caller is the calling service; "" when the logs do not say (a flat
	// log's top-level call): any caller.
	Caller string `json:"caller"`
	// Service is the called service; "" when unmapped.
	Service string `json:"service,omitempty"`
	// GRPCService and GRPCMethod are the proto service (with its package)
	// and method of a gRPC call.
	GRPCService string `json:"grpc_service,omitempty"`
	GRPCMethod  string `json:"grpc_method,omitempty"`
	// Method is the HTTP method ("" any); Route the HTTP route: a template
	// ("/api/v1/order/{orderId}") or a path. Without a gRPC method or a
	// route the endpoint is the called service as a whole.
	Method string `json:"http_method,omitempty"`
	Route  string `json:"http_route,omitempty"`
	// Calls counts the attempts seen on it.
	Calls int `json:"calls"`
	// Unmapped says why the calls could not be mapped; empty when mapped.
	Unmapped string `json:"unmapped,omitempty"`
}

// AnyCaller is how an endpoint without a known caller is named in a
// config: no Kubernetes service name holds a "*".
const AnyCaller = "*"

// CallerName is the caller, or AnyCaller.
func (e Endpoint) CallerName() string {
	if e.Caller == "" {
		return AnyCaller
	}
	return e.Caller
}

// Channel names the caller → service pair: the key of a gRPC channel.
func (e Endpoint) Channel() string { return e.CallerName() + " → " + e.Service }

// IsGRPC reports whether the endpoint is a gRPC method.
func (e Endpoint) IsGRPC() bool { return e.GRPCService != "" && e.GRPCMethod != "" }

// Whole reports whether the endpoint is the called service as a whole
// (neither a gRPC method nor an HTTP route known).
func (e Endpoint) Whole() bool { return !e.IsGRPC() && e.Route == "" }

// Path is the request path the endpoint matches: /pkg.Service/Method for
// gRPC, the route for HTTP, "" for a whole service.
func (e Endpoint) Path() string {
	if e.IsGRPC() {
		return "/" + e.GRPCService + "/" + e.GRPCMethod
	}
	return e.Route
}

// Template reports whether the path has parameters ({id}, :id, *), so
// that a config must match it by a pattern rather than exactly.
func (e Endpoint) Template() bool {
	if e.IsGRPC() {
		return false
	}
	for _, seg := range strings.Split(e.Route, "/") {
		if isParam(seg) {
			return true
		}
	}
	return false
}

func isParam(seg string) bool {
	return strings.Contains(seg, "{") || strings.HasPrefix(seg, ":") || strings.Contains(seg, "*")
}

// PathRegex is a regular expression (RE2, matched against the whole path,
// as Envoy's safe_regex, Istio's uri regex and Linkerd's pathRegex are)
// for the endpoint's path: literal parts quoted, each parameter segment
// ({id}, :id, *) any one segment, ** or {*rest} the rest of the path; a
// whole service's is every path.
func (e Endpoint) PathRegex() string {
	if e.Whole() {
		return "/.*"
	}
	var b strings.Builder
	for i, seg := range strings.Split(e.Path(), "/") {
		if i > 0 {
			b.WriteByte('/')
		}
		switch {
		case seg == "**" || strings.HasPrefix(seg, "{*"):
			b.WriteString(".*")
		case isParam(seg) && strings.HasPrefix(seg, ":"):
			b.WriteString("[^/]+")
		case isParam(seg):
			// Literal text around {id} in one segment stays literal.
			b.WriteString(paramSeg.ReplaceAllStringFunc(regexp.QuoteMeta(seg), func(p string) string {
				if p == `\*` {
					return "[^/]*"
				}
				return "[^/]+"
			}))
		default:
			b.WriteString(regexp.QuoteMeta(seg))
		}
	}
	return b.String()
}

// paramSeg finds {name} (as QuoteMeta writes it) and * in a quoted segment.
var paramSeg = regexp.MustCompile(`\\\{[^}]*\\\}|\\\*`)

// rawParam finds {name} and * in a segment.
var rawParam = regexp.MustCompile(`\{[^}]*\}|\*`)

// SamplePath is a path the endpoint's route would serve: each parameter
// replaced by "1". Reading a hand-written config back, a route's prefix or
// pattern is tested against it.
func (e Endpoint) SamplePath() string {
	if e.Whole() {
		return "/"
	}
	segs := strings.Split(e.Path(), "/")
	for i, seg := range segs {
		switch {
		case strings.HasPrefix(seg, ":"), seg == "**":
			segs[i] = "1"
		case isParam(seg):
			segs[i] = rawParam.ReplaceAllString(seg, "1")
		}
	}
	return strings.Join(segs, "/")
}

// RouteKey identifies what a config routes on: two endpoints with the
// same key cannot carry two policies.
func (e Endpoint) RouteKey() string {
	return e.Caller + "\x00" + e.Service + "\x00" + e.Method + "\x00" + e.Path()
}

// Label describes the endpoint for a message: "checkoutservice →
// cartservice /hipstershop.CartService/GetCart".
func (e Endpoint) Label() string {
	s := e.Channel()
	if e.Method != "" {
		s += " " + e.Method
	}
	if p := e.Path(); p != "" {
		s += " " + p
	} else {
		s += " (whole service)"
	}
	return s
}
