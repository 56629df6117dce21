package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Config is a deployed config read back: the routes of an Envoy, gRPC,
// Istio or Linkerd file (what --emit writes, or a hand-written one in
// those forms), each with the caller, called service and request it
// matches and the per-hop policy its settings amount to. Which hops a
// route governs depends on the logs: check maps routes to the hops'
// endpoints (see Route.Matches).
type Config struct {
	// Format is envoy, grpc, istio or linkerd.
	Format string
	Routes []Route
	// Defaults are the routes a config ends with that take every call
	// the routes before them do not (tailscope writes them with the
	// policy's default, for the methods and routes the logs did not
	// show): they are no hop's, so check maps the logs' calls to Routes
	// only.
	Defaults []Route
	// Notes say what the readback had to assume (the formats' semantics
	// are not tailscope's).
	Notes []string
}

// Route is one route of a config, in the order the consumer tries them.
type Route struct {
	// Caller is the calling service ("" any); Service the called one
	// ("" any, as Envoy's domain "*").
	Caller, Service string
	// Method is the HTTP method ("" any). Exactly one of Exact, Prefix,
	// Regex (RE2, matched against the whole path) or GRPCService (with
	// GRPCMethod "" for every method of it) is set; none is every path.
	Method, Exact, Prefix, Regex string
	GRPCService, GRPCMethod      string
	// Name is the route's name in the file, Line its line.
	Name string
	Line int
	// Hop is the policy the route's settings amount to.
	Hop Hop
	re  *regexp.Regexp
}

// Label describes the route for a message.
func (r Route) Label() string {
	c, s := r.Caller, r.Service
	if c == "" {
		c = AnyCaller
	}
	if s == "" {
		s = AnyCaller
	}
	m := "every path"
	switch {
	case r.Exact != "":
		m = r.Exact
	case r.Prefix != "":
		m = "prefix " + r.Prefix
	case r.Regex != "":
		m = "regex " + r.Regex
	case r.GRPCService != "":
		m = "/" + r.GRPCService + "/" + r.GRPCMethod
	}
	if r.Method != "" {
		m = r.Method + " " + m
	}
	return fmt.Sprintf("line %d: %s → %s %s", r.Line, c, s, m)
}

// Matches reports whether the route takes the calls of endpoint e: the
// same caller and service (or any), method and path. A route pattern is
// tried on the endpoint's path with its parameters filled in (SamplePath)
// and on the path as logged.
func (r *Route) Matches(e Endpoint) bool {
	if e.Unmapped != "" || (r.Caller != "" && r.Caller != e.Caller) || !ServiceMatches(r.Service, e.Service) {
		return false
	}
	if r.Method != "" && r.Method != e.Method && !(e.IsGRPC() && r.Method == "POST") {
		return false
	}
	switch {
	case r.GRPCService != "":
		return e.IsGRPC() && r.GRPCService == e.GRPCService && (r.GRPCMethod == "" || r.GRPCMethod == e.GRPCMethod)
	case r.Exact != "":
		return r.Exact == e.Path() || r.Exact == e.SamplePath()
	case r.Prefix != "":
		return strings.HasPrefix(e.SamplePath(), r.Prefix) || (e.Whole() && r.Prefix == "/")
	case r.Regex != "":
		if r.re == nil {
			return false
		}
		if e.Whole() {
			return r.Regex == e.PathRegex()
		}
		return r.re.MatchString(e.SamplePath()) || r.re.MatchString(e.Path())
	}
	return true
}

// SniffConfig names the config format data holds (envoy, grpc, istio,
// linkerd), or "" for tailscope's own policy file: an Istio or Linkerd
// object by its apiVersion (a Gateway API route is read as Linkerd reads
// it), an Envoy route configuration by its
// virtual_hosts, a gRPC document by the methodConfig of its values.
func SniffConfig(data []byte) string {
	head := data[:min(len(data), 1<<16)]
	switch {
	case sniffIstio.Match(head):
		return "istio"
	case sniffLinkerd.Match(head):
		return "linkerd"
	case sniffEnvoy.Match(head):
		return "envoy"
	case sniffGRPC.Match(head):
		return "grpc"
	}
	return ""
}

// The marks of each format at the start of a line (a policy file's hop
// names and comments never start a line with them) or, for gRPC's JSON,
// a methodConfig list in a document that starts as a JSON object.
// A config written as JSON (JSON is YAML) has the keys quoted, anywhere
// on a line; a kubectl List (kind: List, items: [...]) has its objects'
// keys indented, after "- ".
var (
	sniffIstio   = regexp.MustCompile(`(?m)(^[ \t-]*|"|\{\s*)apiVersion"?\s*:\s*["']?networking\.istio\.io/`)
	sniffLinkerd = regexp.MustCompile(`(?m)(^[ \t-]*|"|\{\s*)apiVersion"?\s*:\s*["']?(linkerd\.io|gateway\.networking\.k8s\.io)/`)
	sniffEnvoy   = regexp.MustCompile(`(?m)^virtual_hosts:|^\s*[\[{][\s\S]*"virtual_hosts"\s*:`)
	sniffGRPC    = regexp.MustCompile(`^\s*\{[\s\S]*"methodConfig"\s*:\s*\[`)
)

// ReadConfig reads a deployed config of the given format (see
// SniffConfig). Mistakes are Problems with their line, all of them.
func ReadConfig(path, format string, data []byte) (*Config, error) {
	if len(data) > MaxFileSize {
		return nil, Problems{{File: path, Msg: fmt.Sprintf("larger than %d MiB", MaxFileSize>>20)}}
	}
	if n, line := entries(data); n > MaxEntries {
		return nil, Problems{{File: path, Line: line, Msg: fmt.Sprintf("more than %d entries", MaxEntries)}}
	}
	cr := &configReader{path: path, cfg: &Config{Format: format}}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for docs := 0; ; docs++ {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			cr.ps = append(cr.ps, syntaxProblem(path, err))
			break
		}
		doc := &n
		if doc.Kind == yaml.DocumentNode {
			if len(doc.Content) == 0 {
				continue
			}
			doc = doc.Content[0]
		}
		doc = deref(doc)
		if doc == nil || isNull(doc) {
			continue
		}
		if doc.Kind != yaml.MappingNode {
			cr.add(doc, "", "a document that is not a mapping")
			continue
		}
		objs := []*yaml.Node{doc}
		if k := get(doc, "kind"); k != nil && k.Kind == yaml.ScalarNode && k.Value == "List" && get(doc, "items") != nil {
			// kubectl get -o yaml: the List's items are the documents.
			objs = nil
			for _, it := range list(get(doc, "items")) {
				if it = deref(it); it == nil || it.Kind != yaml.MappingNode {
					cr.add(it, "items", "a List item that is not a mapping")
					continue
				}
				objs = append(objs, it)
			}
		}
		for _, doc := range objs {
			if f := docFormat(doc); f != "" && f != format {
				cr.add(doc, "", fmt.Sprintf("%s is of format %s, in a %s config: not read (give it a file of its own)", describeDoc(doc), f, format))
				continue
			}
			switch format {
			case "envoy":
				cr.envoy(doc)
			case "grpc":
				cr.grpc(doc)
			case "istio":
				cr.istio(doc)
			case "linkerd":
				cr.linkerd(doc)
			default:
				return nil, fmt.Errorf("%s: unknown config format %q", path, format)
			}
		}
		if len(cr.ps) >= maxProblems {
			break
		}
	}
	// Gateway API routes, in the order their precedence tries them.
	sort.SliceStable(cr.gw, func(i, j int) bool {
		a, b := cr.gw[i], cr.gw[j]
		return a.rank < b.rank || a.rank == b.rank && len(a.r.Prefix) > len(b.r.Prefix)
	})
	for _, g := range cr.gw {
		cr.cfg.Routes = append(cr.cfg.Routes, g.r)
	}
	if len(cr.ps) > 0 {
		return nil, cr.ps
	}
	if len(cr.cfg.Routes) == 0 {
		return nil, Problems{{File: path, Msg: "no route in the " + format + " config"}}
	}
	var all []*Route
	for i := range cr.cfg.Routes {
		all = append(all, &cr.cfg.Routes[i])
	}
	for i := range cr.cfg.Defaults {
		all = append(all, &cr.cfg.Defaults[i])
	}
	for _, r := range all {
		if r.Regex != "" {
			re, err := regexp.Compile("^(?:" + r.Regex + ")$")
			if err != nil {
				return nil, Problems{{File: path, Line: r.Line, Key: "regex", Msg: err.Error()}}
			}
			r.re = re
		}
	}
	return cr.cfg, nil
}

// docFormat is the format one document is of by its own marks (see
// SniffConfig), "" when it has none of them.
func docFormat(doc *yaml.Node) string {
	av := get(doc, "apiVersion")
	v := ""
	if av != nil && av.Kind == yaml.ScalarNode {
		v = av.Value
	}
	switch {
	case strings.HasPrefix(v, "networking.istio.io/"):
		return "istio"
	case strings.HasPrefix(v, "linkerd.io/"), strings.HasPrefix(v, "gateway.networking.k8s.io/"):
		return "linkerd"
	case get(doc, "virtual_hosts") != nil:
		return "envoy"
	case get(doc, "methodConfig") != nil:
		return "grpc"
	}
	return ""
}

// describeDoc names a document for a message: its kind and name.
func describeDoc(doc *yaml.Node) string {
	k, n := get(doc, "kind"), get(doc, "name")
	if md := get(doc, "metadata"); md != nil {
		n = get(md, "name")
	}
	var parts []string
	for _, x := range []*yaml.Node{k, n} {
		if x != nil && x.Kind == yaml.ScalarNode && x.Value != "" {
			parts = append(parts, echo(x.Value))
		}
	}
	if len(parts) == 0 {
		return "a document"
	}
	return "the document " + strings.Join(parts, " ")
}

type configReader struct {
	path string
	cfg  *Config
	ps   Problems
	// gw are the Gateway API routes read, ranked by their precedence:
	// ReadConfig orders them once every document is read.
	gw []rankedRoute
}

type rankedRoute struct {
	r    Route
	rank int
}

func (cr *configReader) add(n *yaml.Node, key, msg string) {
	if len(cr.ps) < maxProblems {
		cr.ps = append(cr.ps, Problem{File: cr.path, Line: n.Line, Col: n.Column, Key: key, Msg: msg})
	}
}

// get is the value of key in mapping m (nil when absent or m is not one).
func get(m *yaml.Node, key string) *yaml.Node {
	if m == nil {
		return nil
	}
	m = deref(m)
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key && m.Content[i+1] != nil {
			return deref(m.Content[i+1])
		}
	}
	return nil
}

// list is the items of a sequence node (none when it is not one).
func list(n *yaml.Node) []*yaml.Node {
	if n == nil {
		return nil
	}
	if n = deref(n); n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	return n.Content
}

// str is a scalar's text ("" when absent); a non-scalar is a problem.
func (cr *configReader) str(n *yaml.Node, key string) string {
	if n == nil || isNull(n) {
		return ""
	}
	if n.Kind != yaml.ScalarNode {
		cr.add(n, key, "want a string, got "+describe(n))
		return ""
	}
	return n.Value
}

// dur reads a duration as the configs write them: protobuf JSON ("0.05s")
// or Go ("50ms", Linkerd); 0 when absent.
func (cr *configReader) dur(n *yaml.Node, key string) time.Duration {
	s := cr.str(n, key)
	if s == "" {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 || d > MaxDuration {
		cr.add(n, key, fmt.Sprintf("bad duration %s", echo(s)))
		return 0
	}
	return d
}

func (cr *configReader) count(n *yaml.Node, key string) int {
	s := cr.str(n, key)
	if s == "" {
		return 0
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 || v > 100 {
		cr.add(n, key, fmt.Sprintf("bad count %s", echo(s)))
		return 0
	}
	return v
}

// host reads a host or domain as the consumers match it: "*" is any
// service (""), a ":*" port any port; a port is kept (the domain matches
// that port only), and so is a DNS name's namespace ("svc.ns",
// "svc.ns.svc.cluster.local": see ServiceMatches). An Envoy wildcard
// ("*.shop", "cart-*") is kept as a pattern. What is not a host name
// ("http://svc", "cart svc") is a problem, never cut to one.
func (cr *configReader) host(n *yaml.Node, key string) (string, bool) {
	h := cr.str(n, key)
	if h == "*" {
		return "", true
	}
	h = strings.TrimSuffix(h, ":*")
	base, _ := splitPort(h)
	if strings.HasPrefix(base, "*") && (base == "*" || ValidHost(strings.TrimLeft(base[1:], ".-"), false)) ||
		strings.HasSuffix(base, "*") && ValidHost(strings.TrimRight(base[:len(base)-1], ".-"), false) ||
		ValidHost(h, true) {
		return h, true
	}
	if n != nil && n.Kind == yaml.ScalarNode {
		cr.add(n, key, fmt.Sprintf("%s is not a host name (a DNS name, with a port or not)", echo(h)))
	}
	return "", false
}

// splitPort cuts a host's ":PORT" ("" when it has none).
func splitPort(h string) (string, string) {
	if i := strings.LastIndexByte(h, ':'); i >= 0 {
		p := h[i+1:]
		if p == "*" || p != "" && strings.Trim(p, "0123456789") == "" {
			return h[:i], p
		}
	}
	return h, ""
}

// serviceName splits a called service as a mesh resolves it: a port, and
// a Kubernetes DNS name ("svc.ns.svc.cluster.local", "svc.ns.svc",
// "svc.ns") into the service and its namespace; case is folded.
func serviceName(s string) (name, ns, port string) {
	h, port := splitPort(strings.ToLower(s))
	h = strings.TrimSuffix(h, ".")
	for _, suf := range []string{".svc.cluster.local", ".svc"} {
		if t := strings.TrimSuffix(h, suf); t != h && strings.Count(t, ".") == 1 {
			h = t
			break
		}
	}
	if name, ns, ok := strings.Cut(h, "."); ok && !strings.Contains(ns, ".") {
		return name, ns, port
	}
	return h, "", port
}

// ServiceMatches reports whether a config's host (Route.Service) takes
// the calls to the service the logs name: the same service, a namespace
// on either side that is the other's or absent, and the host's port (if
// it has one) the service's, when the logs name the service with one
// (they mostly name it without: then any port). An Envoy wildcard matches by its prefix or
// suffix; "" is any service.
func ServiceMatches(host, service string) bool {
	if host == "" || host == service {
		return true
	}
	h, _ := splitPort(strings.ToLower(host))
	switch {
	case strings.HasPrefix(h, "*"):
		sh, _ := splitPort(strings.ToLower(service))
		return strings.HasSuffix(sh, h[1:]) && len(sh) > len(h)-1
	case strings.HasSuffix(h, "*"):
		sh, _ := splitPort(strings.ToLower(service))
		return strings.HasPrefix(sh, h[:len(h)-1]) && len(sh) > len(h)-1
	}
	n1, ns1, p1 := serviceName(host)
	n2, ns2, p2 := serviceName(service)
	return n1 == n2 && (ns1 == "" || ns2 == "" || ns1 == ns2) && (p1 == "" || p1 == "*" || p2 == "" || p1 == p2)
}

func anyName(s string) string {
	if s == AnyCaller {
		return ""
	}
	return s
}

// envoy reads a RouteConfiguration (caller: its name): per virtual host
// its domains' services, per route its match and the retry policy.
// A Cluster document carries no route and is passed over.
func (cr *configReader) envoy(doc *yaml.Node) {
	vhs := get(doc, "virtual_hosts")
	if vhs == nil {
		return
	}
	caller := anyName(cr.str(get(doc, "name"), "name"))
	for _, vh := range list(vhs) {
		var services []string
		for _, d := range list(get(vh, "domains")) {
			s, ok := cr.host(d, "domains")
			if !ok {
				continue
			}
			dup := false
			for _, x := range services {
				dup = dup || x == s
			}
			if !dup {
				services = append(services, s)
			}
		}
		if len(services) == 0 {
			cr.add(vh, "virtual_hosts.domains", "no domains")
			continue
		}
		rts := list(get(vh, "routes"))
		for i, rt := range rts {
			r := Route{Caller: caller, Name: cr.str(get(rt, "name"), "name"), Line: rt.Line}
			m := get(rt, "match")
			if m == nil {
				cr.add(rt, "match", "a route without a match")
				continue
			}
			r.Exact = cr.str(get(m, "path"), "match.path")
			r.Prefix = cr.str(get(m, "prefix"), "match.prefix")
			r.Regex = cr.str(get(get(m, "safe_regex"), "regex"), "match.safe_regex.regex")
			if r.Exact == "" && r.Prefix == "" && r.Regex == "" {
				cr.add(m, "match", "no path, prefix or safe_regex: tailscope reads only those")
				continue
			}
			for _, h := range list(get(m, "headers")) {
				if cr.str(get(h, "name"), "headers.name") == ":method" {
					r.Method = cr.str(get(get(h, "string_match"), "exact"), "headers.string_match.exact")
				}
			}
			a := get(rt, "route")
			timeout := cr.dur(get(a, "timeout"), "route.timeout")
			rp := get(a, "retry_policy")
			retries := cr.count(get(rp, "num_retries"), "retry_policy.num_retries")
			perTry := cr.dur(get(rp, "per_try_timeout"), "retry_policy.per_try_timeout")
			bo := get(rp, "retry_back_off")
			base := cr.dur(get(bo, "base_interval"), "retry_back_off.base_interval")
			bmax := cr.dur(get(bo, "max_interval"), "retry_back_off.max_interval")
			if bmax == 0 {
				bmax = 10 * base // Envoy's default
			}
			h := Hop{Timeout: perTry, Retries: retries}
			if h.Timeout == 0 {
				h.Timeout = timeout
			}
			if on := cr.str(get(rp, "retry_on"), "retry_policy.retry_on"); retries > 0 && on != "" && beforeUpstream(on) {
				// Retried only when the request cannot have reached the
				// upstream: a timeout or a failure the logs show is not
				// retried.
				h.Retries = 0
				cr.cfg.Notes = appendOnce(cr.cfg.Notes, "Envoy: a route retried only on "+on+" (never after the request reached the upstream) is read back without retries: the logs' failures and timeouts are not retried")
			}
			if base > 0 {
				h.Backoff = Backoff{Base: base, Max: bmax, Jitter: JitterFull}
			}
			if hp := get(a, "hedge_policy"); hp != nil && cr.str(get(hp, "hedge_on_per_try_timeout"), "hedge_on_per_try_timeout") == "true" && perTry > 0 {
				// The per-try timeout is the hedge delay; one of the
				// retries is the hedge, and no attempt is cut before the
				// route timeout.
				h.Hedge = Hedge{Delay: perTry, Max: 1}
				h.Retries = max(0, retries-1)
				h.Timeout = timeout
			}
			r.Hop = h
			// The route named default that ends a virtual host, taking
			// every path: the default for paths the logs did not show.
			isDefault := i > 0 && i == len(rts)-1 && r.Name == "default" && r.Prefix == "/" && r.Method == ""
			for _, s := range services {
				r.Service = s
				if isDefault {
					cr.cfg.Defaults = append(cr.cfg.Defaults, r)
				} else {
					cr.cfg.Routes = append(cr.cfg.Routes, r)
				}
			}
		}
	}
}

// beforeUpstream reports whether a retry_on (Envoy's, Istio's retryOn)
// retries only what cannot have reached the upstream.
func beforeUpstream(on string) bool {
	for _, c := range strings.Split(on, ",") {
		switch strings.TrimSpace(c) {
		case "connect-failure", "refused-stream", "reset-before-request", "http3-post-connect-failure", "":
		default:
			return false
		}
	}
	return true
}

// grpc reads a JSON object of service configs keyed by "caller →
// service", or one channel's config given bare: the channel its
// "tailscope" object names (what GRPCChannels writes), else any caller
// and any service.
func (cr *configReader) grpc(doc *yaml.Node) {
	if get(doc, "methodConfig") != nil {
		sc := get(doc, "tailscope")
		caller, service := cr.str(get(sc, "caller"), "tailscope.caller"), cr.str(get(sc, "service"), "tailscope.service")
		cr.grpcChannel(anyName(caller), anyName(service), doc)
	} else {
		for i := 0; i+1 < len(doc.Content); i += 2 {
			k := doc.Content[i].Value
			caller, service, ok := strings.Cut(k, " → ")
			if !ok {
				cr.add(doc.Content[i], k, `a channel key is "caller → service"`)
				continue
			}
			cr.grpcChannel(anyName(caller), anyName(service), deref(doc.Content[i+1]))
		}
	}
	cr.cfg.Notes = appendOnce(cr.cfg.Notes, "gRPC: a method's timeout is the deadline of the whole call; read back as a per-attempt timeout of (deadline − backoffs) / attempts")
}

// grpcChannel reads one channel's method configs into routes in the
// order gRPC applies them (a method's own config, then its service's,
// then the channel's default [{}], whatever their order in the file). A
// default after other configs is what calls of methods the logs did not
// show get: a default route (Config.Defaults), not a route of a hop.
func (cr *configReader) grpcChannel(caller, service string, cfg *yaml.Node) {
	var routes []Route
	for _, mc := range list(get(cfg, "methodConfig")) {
		deadline := cr.dur(get(mc, "timeout"), "methodConfig.timeout")
		h := Hop{}
		if rp := get(mc, "retryPolicy"); rp != nil {
			h.Retries = max(0, cr.count(get(rp, "maxAttempts"), "retryPolicy.maxAttempts")-1)
			base := cr.dur(get(rp, "initialBackoff"), "retryPolicy.initialBackoff")
			h.Backoff = Backoff{Base: base, Max: max(base, cr.dur(get(rp, "maxBackoff"), "retryPolicy.maxBackoff")), Jitter: JitterFull}
		}
		if hp := get(mc, "hedgingPolicy"); hp != nil {
			attempts := cr.count(get(hp, "maxAttempts"), "hedgingPolicy.maxAttempts")
			h.Hedge = Hedge{Delay: cr.dur(get(hp, "hedgingDelay"), "hedgingPolicy.hedgingDelay"), Max: min(max(0, attempts-1), MaxHedges)}
			if h.Hedge.Delay == 0 || h.Hedge.Max == 0 {
				h.Hedge = Hedge{}
			} else if len(list(get(hp, "nonFatalStatusCodes"))) > 0 {
				// A non-fatal failure sends the next attempt at once: a
				// retry without backoff, out of the same attempts.
				h.Retries = max(h.Retries, attempts-1)
				cr.cfg.Notes = appendOnce(cr.cfg.Notes, "gRPC: a hedgingPolicy with nonFatalStatusCodes is read back as hedges and retries each of maxAttempts − 1 (gRPC counts both against maxAttempts)")
			}
		}
		h.Timeout = deadline
		if deadline > 0 && h.Hedge.Delay == 0 {
			// Invert what the emitter wrote: a deadline covering every
			// attempt at its timeout and the longest backoffs.
			d := deadline
			for k := 1; k <= h.Retries; k++ {
				d -= h.Backoff.MaxDelay(k)
			}
			if d > 0 {
				h.Timeout = d / time.Duration(h.Retries+1)
			}
		}
		for _, nm := range list(get(mc, "name")) {
			r := Route{Caller: caller, Service: service, Line: nm.Line, Hop: h,
				GRPCService: cr.str(get(nm, "service"), "name.service"), GRPCMethod: cr.str(get(nm, "method"), "name.method")}
			if r.GRPCService == "" && r.GRPCMethod != "" {
				cr.add(nm, "name", "a method without a service")
				continue
			}
			routes = append(routes, r)
		}
	}
	rank := func(r Route) int {
		switch {
		case r.GRPCMethod != "":
			return 0
		case r.GRPCService != "":
			return 1
		}
		return 2
	}
	sort.SliceStable(routes, func(i, j int) bool { return rank(routes[i]) < rank(routes[j]) })
	for i, r := range routes {
		if rank(r) == 2 && i > 0 {
			r.Name = "default"
			cr.cfg.Defaults = append(cr.cfg.Defaults, r)
			continue
		}
		cr.cfg.Routes = append(cr.cfg.Routes, r)
	}
}

// istio reads a VirtualService: its hosts' services, each HTTP route's
// matches (sourceLabels app as the caller, uri, method), timeout and
// retries.
func (cr *configReader) istio(doc *yaml.Node) {
	if k := cr.str(get(doc, "kind"), "kind"); k != "VirtualService" {
		return
	}
	spec := get(doc, "spec")
	var services []string
	for _, h := range list(get(spec, "hosts")) {
		if s, ok := cr.host(h, "hosts"); ok {
			services = append(services, s)
		}
	}
	if len(services) == 0 {
		cr.add(doc, "spec.hosts", "a VirtualService without hosts")
		return
	}
	hrs := list(get(spec, "http"))
	for i, hr := range hrs {
		timeout := cr.dur(get(hr, "timeout"), "http.timeout")
		rt := get(hr, "retries")
		h := Hop{Timeout: timeout, Retries: 2} // Istio retries twice unless told
		if rt != nil {
			h.Retries = cr.count(get(rt, "attempts"), "retries.attempts")
			if pt := cr.dur(get(rt, "perTryTimeout"), "retries.perTryTimeout"); pt > 0 {
				h.Timeout = pt
			}
			if bo := cr.dur(get(rt, "backoff"), "retries.backoff"); bo > 0 {
				h.Backoff = Backoff{Base: bo, Max: 10 * bo, Jitter: JitterFull} // Envoy's maximum and jitter
			}
			if on := cr.str(get(rt, "retryOn"), "retries.retryOn"); h.Retries > 0 && on != "" && beforeUpstream(on) {
				h.Retries, h.Backoff = 0, Backoff{}
				cr.cfg.Notes = appendOnce(cr.cfg.Notes, "Istio: a route retried only on "+on+" (never after the request reached the service) is read back without retries: the logs' failures and timeouts are not retried")
			}
		} else {
			cr.cfg.Notes = appendOnce(cr.cfg.Notes, "Istio: a route without retries is retried twice (Istio's default); read back so")
		}
		name := cr.str(get(hr, "name"), "http.name")
		matches := list(get(hr, "match"))
		if len(matches) == 0 {
			for _, s := range services {
				r := Route{Service: s, Prefix: "/", Name: name, Line: hr.Line, Hop: h}
				if i > 0 && i == len(hrs)-1 && name == "default" {
					// The route named default that ends the list: the
					// default for callers and paths the logs did not show.
					cr.cfg.Defaults = append(cr.cfg.Defaults, r)
				} else {
					cr.cfg.Routes = append(cr.cfg.Routes, r)
				}
			}
			continue
		}
		for _, m := range matches {
			r := Route{Name: name, Line: m.Line, Hop: h}
			r.Caller = cr.str(get(get(m, "sourceLabels"), "app"), "sourceLabels.app")
			u := get(m, "uri")
			r.Exact, r.Prefix, r.Regex = cr.str(get(u, "exact"), "uri.exact"), cr.str(get(u, "prefix"), "uri.prefix"), cr.str(get(u, "regex"), "uri.regex")
			if u == nil {
				r.Prefix = "/"
			}
			r.Method = cr.str(get(get(m, "method"), "exact"), "method.exact")
			for _, s := range services {
				r.Service = s
				cr.cfg.Routes = append(cr.cfg.Routes, r)
			}
		}
	}
}

// ServiceAnnotation carries a ServiceProfile's service name as the logs
// spell it, which its object name may not (Kubernetes names are lower
// case).
const ServiceAnnotation = "tailscope.io/service"

// linkerd reads a ServiceProfile: the service from the annotation or the
// name's first label, each route's condition, timeout and isRetryable.
func (cr *configReader) linkerd(doc *yaml.Node) {
	switch k := cr.str(get(doc, "kind"), "kind"); k {
	case "HTTPRoute", "GRPCRoute":
		cr.gatewayRoute(doc, k)
		return
	case "ServiceProfile":
	default:
		return
	}
	md := get(doc, "metadata")
	service := cr.str(get(get(md, "annotations"), ServiceAnnotation), "metadata.annotations")
	if service == "" {
		service, _ = cr.host(get(md, "name"), "metadata.name")
	}
	for _, rt := range list(get(get(doc, "spec"), "routes")) {
		c := get(rt, "condition")
		r := Route{Service: service, Name: cr.str(get(rt, "name"), "name"), Line: rt.Line,
			Method: cr.str(get(c, "method"), "condition.method"), Regex: cr.str(get(c, "pathRegex"), "condition.pathRegex")}
		if r.Regex == "" {
			cr.add(rt, "condition", "no pathRegex: tailscope reads only method and pathRegex")
			continue
		}
		timeout := cr.dur(get(rt, "timeout"), "timeout")
		if timeout == 0 {
			timeout = 10 * time.Second // Linkerd's default
		}
		r.Hop = Hop{Timeout: timeout}
		retryable := false
		if n := get(rt, "isRetryable"); n != nil && !isNull(n) {
			switch v := cr.str(n, "isRetryable"); strings.ToLower(v) {
			case "true":
				retryable = true
			case "false":
			default:
				if n.Kind == yaml.ScalarNode {
					cr.add(n, "isRetryable", fmt.Sprintf("%s: want true or false", echo(v)))
				}
			}
		}
		if retryable {
			r.Hop.Retries = 1
			r.Hop.Timeout = timeout / 2
			cr.cfg.Notes = appendOnce(cr.cfg.Notes, "Linkerd: a retryable route is read back as one retry, the route timeout shared by the two attempts (Linkerd counts retries against its budget, not per call)")
		}
		cr.cfg.Routes = append(cr.cfg.Routes, r)
	}
}

// gatewayRoute reads a Gateway API HTTPRoute or GRPCRoute as Linkerd (2.16
// and later) applies it to the calls of its parent Service: the service
// from tailscope's annotation or the first Service parent; per rule and
// match the path (Exact, PathPrefix, RegularExpression) and HTTP method,
// or the gRPC service and method (Exact); the timeout and retries from
// Linkerd's annotations (the rules' timeouts.request when the annotation
// is absent). A route annotated tailscope.io/default is the default route.
func (cr *configReader) gatewayRoute(doc *yaml.Node, kind string) {
	md := get(doc, "metadata")
	ann := get(md, "annotations")
	name := cr.str(get(md, "name"), "metadata.name")
	service := cr.str(get(ann, ServiceAnnotation), "metadata.annotations")
	if service == "" {
		for _, pr := range list(get(get(doc, "spec"), "parentRefs")) {
			if k := cr.str(get(pr, "kind"), "parentRefs.kind"); k == "Service" || k == "" {
				service = cr.str(get(pr, "name"), "parentRefs.name")
				break
			}
		}
	}
	if service == "" {
		cr.add(doc, "spec.parentRefs", "a route without a Service parent: tailscope reads Linkerd's routes of a Service")
		return
	}
	timeout := cr.dur(get(ann, LinkerdRequestTimeout), LinkerdRequestTimeout)
	rules := list(get(get(doc, "spec"), "rules"))
	if timeout == 0 && len(rules) > 0 {
		timeout = cr.dur(get(get(rules[0], "timeouts"), "request"), "rules.timeouts.request")
	}
	h := Hop{Timeout: timeout}
	codes := cr.str(get(ann, LinkerdRetryHTTP), LinkerdRetryHTTP) + cr.str(get(ann, LinkerdRetryGRPC), LinkerdRetryGRPC)
	perTry := cr.dur(get(ann, LinkerdRetryTimeout), LinkerdRetryTimeout)
	if codes != "" || perTry > 0 {
		h.Retries = 1 // Linkerd's default limit
		if l := get(ann, LinkerdRetryLimit); l != nil {
			h.Retries = cr.count(l, LinkerdRetryLimit)
		}
		switch {
		case perTry > 0:
			h.Timeout = perTry
		case timeout > 0:
			h.Timeout = timeout / time.Duration(h.Retries+1)
			cr.cfg.Notes = appendOnce(cr.cfg.Notes, "Linkerd: a retried route without "+LinkerdRetryTimeout+" is read back with its request timeout shared by its attempts")
		}
	}
	def := cr.str(get(ann, DefaultAnnotation), DefaultAnnotation) == "true"
	add := func(r Route, rank int) {
		r.Service, r.Name, r.Hop = service, name, h
		if def {
			cr.cfg.Defaults = append(cr.cfg.Defaults, r)
			return
		}
		cr.gw = append(cr.gw, rankedRoute{r, rank})
	}
	for _, rule := range rules {
		matches := list(get(rule, "matches"))
		if len(matches) == 0 {
			add(Route{Line: rule.Line}, 3)
			continue
		}
		for _, m := range matches {
			r := Route{Line: m.Line}
			if kind == "GRPCRoute" {
				gm := get(m, "method")
				if t := cr.str(get(gm, "type"), "matches.method.type"); t != "" && t != "Exact" {
					cr.add(m, "matches.method.type", "tailscope reads only Exact gRPC method matches")
					continue
				}
				r.GRPCService, r.GRPCMethod = cr.str(get(gm, "service"), "matches.method.service"), cr.str(get(gm, "method"), "matches.method.method")
				switch {
				case r.GRPCService == "" && r.GRPCMethod != "":
					cr.add(m, "matches.method", "a method without a service: tailscope reads methods of a named service")
				case r.GRPCService == "":
					add(r, 3)
				case r.GRPCMethod == "":
					add(r, 1)
				default:
					add(r, 0)
				}
				continue
			}
			r.Method = cr.str(get(m, "method"), "matches.method")
			pm := get(m, "path")
			val := cr.str(get(pm, "value"), "matches.path.value")
			rank := 2
			switch t := cr.str(get(pm, "type"), "matches.path.type"); {
			case pm == nil:
				r.Prefix, rank = "/", 3
			case t == "Exact":
				r.Exact, rank = val, 0
			case t == "RegularExpression":
				r.Regex, rank = val, 1
			case t == "PathPrefix" || t == "":
				r.Prefix = val
				if val == "" {
					r.Prefix = "/"
				}
			default:
				cr.add(pm, "matches.path.type", fmt.Sprintf("unknown path match type %s", echo(t)))
				continue
			}
			add(r, rank)
		}
	}
}
