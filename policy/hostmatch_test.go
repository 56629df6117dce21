package policy

import (
	"strings"
	"testing"
	"time"
)

// TestReadBackHostsAsConsumers: hosts read back as the proxies match
// them. The tool's own Envoy and Istio output for services named with a
// port or as Kubernetes DNS names routes each of its endpoints (they were
// cut to "a" and "svc" and matched nothing); a domain's port is that
// port's; svc.ns.svc.cluster.local is svc of namespace ns; a host that is
// not one (http://svc) is an error, not cut to "http".
func TestReadBackHostsAsConsumers(t *testing.T) {
	p := &Policy{Default: Hop{Timeout: time.Second}, Hops: map[string]Hop{}}
	var eps []Endpoint
	for i, s := range []string{"a:8080", "svc.ns.svc.cluster.local", "cart.shop", "orders"} {
		hop := "h" + s
		p.Hops[hop] = Hop{Timeout: time.Duration(i+1) * 100 * time.Millisecond}
		eps = append(eps, Endpoint{Hop: hop, Caller: "web", Service: s, Route: "/x"})
	}
	for _, f := range []string{"envoy", "istio", "linkerd", "linkerd-route"} {
		es := eps
		if f != "envoy" {
			es = eps[1:] // a mesh's hosts have no port
		}
		got, _ := readBackAll(t, f, p, es)
		for i, e := range es {
			if got[i].Timeout != p.Hops[e.Hop].Timeout {
				t.Errorf("%s: %s read back as %+v, want timeout %s", f, e.Label(), got[i], p.Hops[e.Hop].Timeout)
			}
		}
	}
	for _, c := range []struct {
		host, service string
		want          bool
	}{
		{"a:8080", "a:8080", true}, {"a:8080", "a:9090", false}, {"a:8080", "a", true}, {"a", "a:8080", true},
		{"svc.ns.svc.cluster.local", "svc", true}, {"svc.ns.svc.cluster.local", "svc.ns", true},
		{"svc.ns.svc.cluster.local", "svc.other", false}, {"svc.ns.svc.cluster.local", "svc.other.svc.cluster.local", false},
		{"svc.ns", "svc.ns.svc.cluster.local:80", true}, {"svc", "svcx", false}, {"*.shop", "cart.shop", true}, {"*.shop", "cart", false},
		{"Cart", "cart", true}, {"", "anything", true},
	} {
		if g := ServiceMatches(c.host, c.service); g != c.want {
			t.Errorf("ServiceMatches(%q, %q) = %v, want %v", c.host, c.service, g, c.want)
		}
	}
	envoy := "name: web\nvirtual_hosts:\n- name: x\n  domains: [\"http://svc\"]\n  routes:\n  - match: {prefix: \"/\"}\n    route: {cluster: x, timeout: 1s}\n"
	_, err := ReadConfig("e.yaml", "envoy", []byte(envoy))
	if err == nil || !strings.Contains(err.Error(), `"http://svc" is not a host name`) {
		t.Errorf("envoy: %v", err)
	}
	istio := "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: x}\nspec:\n  hosts: [\"http://svc\"]\n  http:\n  - route: [{destination: {host: x}}]\n"
	_, err = ReadConfig("i.yaml", "istio", []byte(istio))
	if err == nil || !strings.Contains(err.Error(), `"http://svc" is not a host name`) {
		t.Errorf("istio: %v", err)
	}
}
