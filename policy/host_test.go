package policy

import (
	"strings"
	"testing"
	"time"
)

// TestInvalidHostNotRouted: a called service that is not a host name
// (*, a space, a comma, a scheme, a newline) gets no route in Envoy,
// Istio, Linkerd or the Gateway API routes — a "*" would be a catch-all
// for every service of that caller — and the file's notes list it as not
// routed; a service with a port is an Envoy domain of that port only.
func TestInvalidHostNotRouted(t *testing.T) {
	bad := []string{"*", "cart svc", "a,b", "http://svc", "x\ny", "-a", "a..b"}
	p := &Policy{Default: Hop{Timeout: time.Second}, Hops: map[string]Hop{"ok": {Timeout: 100 * time.Millisecond}}}
	eps := []Endpoint{{Hop: "ok", Caller: "web", Service: "cart", Route: "/c"}}
	for _, s := range bad {
		p.Hops["h"+s] = Hop{Timeout: 200 * time.Millisecond}
		eps = append(eps, Endpoint{Hop: "h" + s, Caller: "web", Service: s, Route: "/x"})
	}
	for _, f := range []string{"envoy", "istio", "linkerd", "linkerd-route"} {
		var out string
		var notes []string
		switch f {
		case "envoy":
			out, notes = Envoy(p, eps, EnvoyOptions{})
		case "istio":
			out, notes = Istio(p, eps, MeshOptions{})
		case "linkerd":
			out, notes = Linkerd(p, eps, MeshOptions{})
		case "linkerd-route":
			out, notes = LinkerdRoutes(p, eps, MeshOptions{})
		}
		for _, s := range bad {
			n := 0
			for _, x := range notes {
				if strings.HasPrefix(x, "h"+s+": not routed: not a valid host name") {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%s: %q: %d notes of it: %q", f, s, n, notes)
			}
		}
		for _, frag := range []string{`"*"`, "cart svc", "a,b", "http://svc", "-a", "a..b"} {
			for _, line := range strings.Split(out, "\n") {
				if strings.Contains(line, frag) && !strings.HasPrefix(line, "#") {
					t.Errorf("%s: %q written: %s", f, frag, line)
				}
			}
		}
		cfg, err := ReadConfig("c.yaml", map[string]string{"linkerd-route": "linkerd"}[f]+map[bool]string{true: f}[f != "linkerd-route"], []byte(out))
		if err != nil {
			t.Fatalf("%s: %v\n%s", f, err, out)
		}
		for _, r := range cfg.Routes {
			if r.Service != "cart" {
				t.Errorf("%s: a route of %q: %s", f, r.Service, r.Label())
			}
		}
	}
	out, _ := Envoy(p, []Endpoint{{Hop: "ok", Caller: "web", Service: "cart:8080", Route: "/c"}}, EnvoyOptions{})
	if !strings.Contains(out, `domains: ["cart:8080"]`) && !strings.Contains(out, `domains: [cart:8080]`) {
		t.Errorf("cart:8080's domains:\n%s", out)
	}
	for _, s := range []string{"cart", "Cart", "cart.shop", "cart-1.shop.svc.cluster.local", "10.0.0.1"} {
		if !ValidHost(s, false) {
			t.Errorf("%q is a host name", s)
		}
	}
	if ValidHost("cart:8080", false) || !ValidHost("cart:8080", true) || ValidHost("cart:x", true) {
		t.Error("ports")
	}
	if DNSLabel("Shop") || DNSLabel("a.b") || DNSLabel("x\ny") || !DNSLabel("shop-1") {
		t.Error("DNSLabel")
	}
}
