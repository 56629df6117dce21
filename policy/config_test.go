package policy

import (
	"strings"
	"testing"
	"time"
)

// readBackAll emits p over eps in format, reads it back, and returns for
// each mapped endpoint the settings of the first route that takes it.
func readBackAll(t *testing.T, format string, p *Policy, eps []Endpoint) (map[int]Hop, *Config) {
	t.Helper()
	var out string
	switch format {
	case "envoy":
		out, _ = Envoy(p, eps, EnvoyOptions{})
	case "grpc":
		out, _ = GRPC(p, eps, GRPCOptions{})
	case "istio":
		out, _ = Istio(p, eps, MeshOptions{})
	case "linkerd":
		out, _ = Linkerd(p, eps, MeshOptions{})
	case "linkerd-route":
		out, _ = LinkerdRoutes(p, eps, MeshOptions{})
		format = "linkerd"
	}
	if got := SniffConfig([]byte(out)); got != format {
		t.Fatalf("%s sniffed as %q", format, got)
	}
	cfg, err := ReadConfig(format+".yaml", format, []byte(out))
	if err != nil {
		t.Fatalf("%s: %v\n%s", format, err, out)
	}
	got := map[int]Hop{}
	for i, e := range eps {
		for j := range cfg.Routes {
			if cfg.Routes[j].Matches(e) {
				got[i] = cfg.Routes[j].Hop
				break
			}
		}
	}
	return got, cfg
}

// TestReadConfigRoundTrip: each format, read back, routes every endpoint
// it was emitted for to a route whose settings are the hop's policy as far
// as the format can say it: the per-attempt timeout and retries exactly
// (gRPC's deadline inverted; Linkerd without retries), through odd names
// (True, NULL, yes, ~, a bidi override) too.
func TestReadConfigRoundTrip(t *testing.T) {
	p, eps := oddPolicy()
	p.Hops["retried"] = Hop{Timeout: 200 * time.Millisecond, Retries: 2, Backoff: Backoff{Base: 10 * time.Millisecond, Max: 40 * time.Millisecond}}
	p.Hops["g"] = Hop{Timeout: 300 * time.Millisecond}
	eps = append(eps, Endpoint{Hop: "retried", Caller: "web", Service: "orders", Method: "GET", Route: "/order/{id}"},
		Endpoint{Hop: "g", Caller: "web", Service: "cart", GRPCService: "shop.Cart", GRPCMethod: "Get"})
	for _, format := range []string{"envoy", "grpc", "istio", "linkerd", "linkerd-route"} {
		got, _ := readBackAll(t, format, p, eps)
		for i, e := range eps {
			if format == "grpc" && !e.IsGRPC() {
				if _, ok := got[i]; ok {
					t.Errorf("grpc: an HTTP endpoint %s took a route", e.Label())
				}
				continue
			}
			h, ok := got[i]
			want := p.Hops[e.Hop]
			if format == "linkerd" && want.Retries > 0 {
				continue // Linkerd does not count retries
			}
			if !ok || h.Timeout != want.Timeout || h.Retries != want.Retries {
				t.Errorf("%s: %s: read back %+v (found %v), want timeout %v, %d retries", format, e.Label(), h, ok, want.Timeout, want.Retries)
			}
		}
	}
}

// TestReadConfigRouteOrder: the first route that matches takes a call,
// as the proxies do: a prefix "/" before a specific route takes it.
func TestReadConfigRouteOrder(t *testing.T) {
	doc := `name: web
virtual_hosts:
- name: cart
  domains: ["cart.shop.svc.cluster.local:7070"]
  routes:
  - match: {prefix: "/"}
    route: {cluster: cart, timeout: 2s}
  - match: {path: "/shop.Cart/Get"}
    route: {cluster: cart, timeout: 1s}
`
	cfg, err := ReadConfig("r.yaml", "envoy", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	e := Endpoint{Caller: "web", Service: "cart", GRPCService: "shop.Cart", GRPCMethod: "Get"}
	if !cfg.Routes[0].Matches(e) || cfg.Routes[0].Hop.Timeout != 2*time.Second {
		t.Errorf("routes %+v", cfg.Routes)
	}
	if cfg.Routes[0].Matches(Endpoint{Caller: "api", Service: "cart", Route: "/x"}) {
		t.Error("a route of web's configuration took api's call")
	}
}

// Bad configs: every mistake with its line and key.
func TestReadConfigErrors(t *testing.T) {
	cases := []struct{ format, doc, want string }{
		{"envoy", "name: a\nvirtual_hosts:\n- name: b\n  domains: [b]\n  routes:\n  - match: {path: /x}\n    route: {timeout: soon}\n", "e.yaml:7:22: route.timeout: bad duration"},
		{"envoy", "name: a\nvirtual_hosts:\n- name: b\n  routes: []\n", "e.yaml:3:3: virtual_hosts.domains: no domains"},
		{"grpc", `{"a b": {"methodConfig": []}}`, `e.yaml:1:2: a b: a channel key is "caller → service"`},
		{"grpc", `{"a → b": {"methodConfig": [{"name": [{"service": "s.S"}], "retryPolicy": {"maxAttempts": "many"}}]}}`, "retryPolicy.maxAttempts: bad count"},
		{"istio", "apiVersion: networking.istio.io/v1\nkind: VirtualService\nspec:\n  http: []\n", "spec.hosts: a VirtualService without hosts"},
		{"linkerd", "apiVersion: linkerd.io/v1alpha2\nkind: ServiceProfile\nmetadata: {name: a.b.svc.cluster.local}\nspec:\n  routes:\n  - name: x\n    condition: {method: GET}\n", "e.yaml:6:5: condition: no pathRegex"},
		{"linkerd", "apiVersion: linkerd.io/v1alpha2\nkind: ServiceProfile\nmetadata: {name: a}\nspec:\n  routes:\n  - name: x\n    condition: {pathRegex: \"(\"}\n", "regex: error parsing regexp"},
		{"envoy", "name: [\n", "e.yaml:1: not valid YAML"},
	}
	for _, c := range cases {
		_, err := ReadConfig("e.yaml", c.format, []byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %q: error %v, want %q", c.format, c.doc, err, c.want)
		}
	}
}

func fuzzConfig(f *testing.F, format string, seeds ...string) {
	p, eps := oddPolicy()
	eps = append(eps, Endpoint{Hop: "x", Caller: "web", Service: "cart", GRPCService: "shop.Cart", GRPCMethod: "Get"})
	var out string
	switch format {
	case "envoy":
		out, _ = Envoy(p, eps, EnvoyOptions{})
	case "grpc":
		out, _ = GRPC(p, eps, GRPCOptions{})
	case "istio":
		out, _ = Istio(p, eps, MeshOptions{})
	case "linkerd":
		out, _ = Linkerd(p, eps, MeshOptions{})
		routes, _ := LinkerdRoutes(p, eps, MeshOptions{})
		f.Add([]byte(routes))
	}
	f.Add([]byte(out))
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ReadConfig("f", format, data)
		if err != nil {
			return
		}
		for i := range cfg.Routes {
			cfg.Routes[i].Matches(Endpoint{Caller: "web", Service: "cart", Route: "/a/{b}"})
		}
	})
}

// The config readers never panic and always end, whatever the file.
func FuzzReadEnvoy(f *testing.F) {
	fuzzConfig(f, "envoy", "virtual_hosts: [{domains: ['*'], routes: [{match: {safe_regex: {regex: '.*'}}}]}]", "a: &a [*a]")
}
func FuzzReadGRPC(f *testing.F) {
	fuzzConfig(f, "grpc", `{"methodConfig":[{"name":[{}],"timeout":"1s","retryPolicy":{"maxAttempts":5}}]}`, `{"→ ":{}}`)
}
func FuzzReadIstio(f *testing.F) {
	fuzzConfig(f, "istio", "kind: VirtualService\nspec: {hosts: [a], http: [{retries: {}}]}")
}
func FuzzReadLinkerd(f *testing.F) {
	fuzzConfig(f, "linkerd", "kind: ServiceProfile\nspec: {routes: [{condition: {pathRegex: x}, isRetryable: true}]}",
		"kind: HTTPRoute\nmetadata: {annotations: {retry.linkerd.io/limit: '3'}}\nspec: {parentRefs: [{name: a}], rules: [{matches: [{path: {type: RegularExpression, value: '('}}]}]}")
}

// A tailscope policy file whose hop names or comments mention the formats'
// words is still a policy file.
func TestSniffConfigPolicy(t *testing.T) {
	for _, doc := range []string{
		"# copied from networking.istio.io/v1 virtual_hosts\nbudget: 1s\nhops:\n  virtual_hosts: {timeout: 1s}\n",
		`{"budget": "1s", "hops": {"methodConfig": {"timeout": "1s"}}}`,
	} {
		if f := SniffConfig([]byte(doc)); f != "" {
			t.Errorf("%q sniffed as %s", doc, f)
		}
	}
}

// The policy file itself: hops named True, NULL, yes, ~, 0x1F and with a
// bidi override are written so that they read back as those names (none
// collapses into a boolean, null or number), the override escaped.
func TestPolicyFileOddHopNames(t *testing.T) {
	p, _ := oddPolicy()
	out := p.Marshal()
	if strings.ContainsRune(string(out), '\u202e') {
		t.Errorf("a raw bidi override:\n%s", out)
	}
	q, err := Parse("p.yaml", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(q.Hops) != len(p.Hops) {
		t.Errorf("%d hops read back of %d:\n%s", len(q.Hops), len(p.Hops), out)
	}
	for n, h := range p.Hops {
		if q.Hops[n].Timeout != h.Timeout {
			t.Errorf("%q: read back %+v, want %+v", n, q.Hops[n], h)
		}
	}
}

// TestReadGRPCChannel: one channel's config, as GRPCChannels writes it
// for a client to load, reads back for that channel only (its tailscope
// object names it): its method routes first, whatever their order in the
// file, and its default [{}] as a default route, not a hop's; a bare
// config without the object applies to any caller and service.
func TestReadGRPCChannel(t *testing.T) {
	p := &Policy{Default: Hop{Timeout: 2 * time.Second}, Hops: map[string]Hop{"get": {Timeout: 300 * time.Millisecond}}}
	eps := []Endpoint{{Hop: "get", Caller: "web", Service: "cart", GRPCService: "shop.Cart", GRPCMethod: "Get"}}
	chans, _ := GRPCChannels(p, eps, GRPCOptions{})
	if len(chans) != 1 {
		t.Fatalf("channels %v", chans)
	}
	data := []byte(chans[0].Config)
	if f := SniffConfig(data); f != "grpc" {
		t.Fatalf("sniffed as %q", f)
	}
	cfg, err := ReadConfig("web/cart.json", "grpc", data)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Routes) != 1 || len(cfg.Defaults) != 1 {
		t.Fatalf("routes %+v, defaults %+v", cfg.Routes, cfg.Defaults)
	}
	r, d := cfg.Routes[0], cfg.Defaults[0]
	if r.Caller != "web" || r.Service != "cart" || r.Hop.Timeout != 300*time.Millisecond || !r.Matches(eps[0]) ||
		r.Matches(Endpoint{Caller: "api", Service: "cart", GRPCService: "shop.Cart", GRPCMethod: "Get"}) {
		t.Errorf("route %+v", r)
	}
	if d.Caller != "web" || d.Service != "cart" || d.Hop.Timeout != 2*time.Second || d.GRPCService != "" {
		t.Errorf("default %+v", d)
	}
	// Default first in the file: gRPC still applies the method's own.
	bare := `{"methodConfig": [{"name": [{}], "timeout": "2s"}, {"name": [{"service": "shop.Cart"}], "timeout": "1s"}, {"name": [{"service": "shop.Cart", "method": "Get"}], "timeout": "0.3s"}]}`
	cfg, err = ReadConfig("bare.json", "grpc", []byte(bare))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Routes) != 2 || cfg.Routes[0].GRPCMethod != "Get" || cfg.Routes[1].GRPCMethod != "" || cfg.Routes[0].Caller != "" || len(cfg.Defaults) != 1 {
		t.Errorf("routes %+v, defaults %+v", cfg.Routes, cfg.Defaults)
	}
}

// GatewayDuration: GEP-2257 durations, milliseconds or whole seconds
// when they fit, rounded up to the millisecond.
func TestGatewayDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{0: `"0s"`, 990 * time.Millisecond: `"990ms"`, 1550 * time.Millisecond: `"1550ms"`,
		2 * time.Second: `"2s"`, 1500 * time.Microsecond: `"2ms"`, 100 * time.Second: `"100s"`, 200*time.Second + time.Millisecond: `"3m20s1ms"`,
		1000 * time.Hour: `"1000h"`} {
		if got := GatewayDuration(d); got != want {
			t.Errorf("%v: %s, want %s", d, got, want)
		}
	}
}
