package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// envoyValidate reads every YAML document of an Envoy output as Envoy's
// own types read it (go-control-plane: the YAML converted to JSON, then
// protojson, which refuses unknown fields and wrong types), and runs the
// types' ValidateAll (the constraints Envoy checks on load). It returns
// the route configurations and clusters, by name.
func envoyValidate(out string) (map[string]*routev3.RouteConfiguration, map[string]*clusterv3.Cluster, error) {
	rcs, cls := map[string]*routev3.RouteConfiguration{}, map[string]*clusterv3.Cluster{}
	dec := yaml.NewDecoder(strings.NewReader(out))
	for i := 0; ; i++ {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return rcs, cls, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("document %d: %v", i, err)
		}
		if doc == nil {
			continue
		}
		js, err := json.Marshal(doc)
		if err != nil {
			return nil, nil, fmt.Errorf("document %d: %v", i, err)
		}
		var m interface {
			proto.Message
			ValidateAll() error
		}
		rc, cl := &routev3.RouteConfiguration{}, &clusterv3.Cluster{}
		if _, ok := doc["virtual_hosts"]; ok {
			m = rc
		} else {
			m = cl
		}
		if err := protojson.Unmarshal(js, m); err != nil {
			return nil, nil, fmt.Errorf("document %d: %v\n%s", i, err, js)
		}
		if err := m.ValidateAll(); err != nil {
			return nil, nil, fmt.Errorf("document %d: %v\n%s", i, err, js)
		}
		if m == rc {
			rcs[rc.GetName()] = rc
		} else {
			cls[cl.GetName()] = cl
		}
	}
}

// TestEnvoyAcceptedByGoControlPlane: the route configurations and
// clusters of a policy with timeouts, retries, hedges, budgets and an
// ejection, over gRPC, HTTP and whole-service endpoints, are valid Envoy
// configuration; and the validation can fail (a hand-broken route).
func TestEnvoyAcceptedByGoControlPlane(t *testing.T) {
	p := emitPolicy()
	p.Ejections = map[string]Ejection{"retried": {Key: "k8s.pod.name", Value: "cart-3", Of: "tail", Lift: 3.9, Share: 0.78, Instances: 5}}
	eps := emitEndpoints(p)
	eps = append(eps, Endpoint{Hop: "plain", Caller: "gw", Service: "orders", Method: "GET", Route: "/order/{id}"},
		Endpoint{Hop: "retried", Caller: "gw", Service: "orders", Route: "/order"}, Endpoint{Hop: "hedged", Caller: "", Service: "rank"})
	out, _ := Envoy(p, eps, EnvoyOptions{})
	rcs, cls, err := envoyValidate(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rcs) != 3 || rcs["web"] == nil || rcs["gw"] == nil || rcs[AnyCaller] == nil || len(cls) != 3 || cls["orders"].GetOutlierDetection() == nil {
		t.Errorf("route configurations %d, clusters %d:\n%s", len(rcs), len(cls), out)
	}
	r := rcs["gw"].GetVirtualHosts()[0].GetRoutes()[0]
	if r.GetMatch().GetPath() != "/order" || r.GetRoute().GetTimeout().AsDuration() != callBound(p, p.Hops["retried"]) {
		t.Errorf("gw's first route %v", r)
	}
	bad := strings.Replace(out, `domains: [backend, "backend:*"]`, "domains: []", 1)
	if _, _, err := envoyValidate(bad); bad == out || err == nil {
		t.Errorf("a virtual host without domains passed")
	}
	if _, _, err := envoyValidate(strings.Replace(out, "virtual_hosts:", "virtual_hosts:\n- {name: x, domains: [x], rutes: []}", 1)); err == nil {
		t.Errorf("an unknown field passed")
	}
}

// TestEnvoyOddNames: callers and services named True, NULL, yes, ~ and
// with a bidi override stay strings through YAML (no two collapse), the
// override is written as an escape, and Envoy's types read each back.
func TestEnvoyOddNames(t *testing.T) {
	names := oddNames()
	p := &Policy{Default: Hop{Timeout: time.Second}, Hops: map[string]Hop{}}
	var eps []Endpoint
	for i, n := range names {
		p.Hops[n] = Hop{Timeout: time.Duration(i+1) * 100 * time.Millisecond}
		eps = append(eps, Endpoint{Hop: n, Caller: n, Service: oddService(n), Route: "/" + n})
	}
	out, _ := Envoy(p, eps, EnvoyOptions{})
	if strings.ContainsRune(out, '\u202e') {
		t.Errorf("a raw bidi override:\n%s", out)
	}
	rcs, _, err := envoyValidate(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for i, n := range names {
		rc := rcs[n]
		if rc == nil {
			t.Errorf("%q: no route configuration (names read back: %d of %d)", n, len(rcs), len(names))
			continue
		}
		vh := rc.GetVirtualHosts()[0]
		r := vh.GetRoutes()[0]
		if vh.GetName() != oddService(n) || r.GetName() != n || r.GetRoute().GetCluster() != oddService(n) || r.GetMatch().GetPath() != "/"+n ||
			r.GetRoute().GetTimeout().AsDuration() != time.Duration(i+1)*100*time.Millisecond {
			t.Errorf("%q: read back as %v", n, rc)
		}
	}
}

// TestEnvoyDefaultAndIdempotency: every virtual host of every route
// configuration, read by go-control-plane, ends with a route that takes
// every path with the policy's default (an unlisted method gets it, not a
// 404); a method that is not idempotent (Charge, a POST) is retried only
// on connect-failure, refused-stream and reset-before-request, never on
// reset or a server error, and is never hedged; an idempotent one (GetCart)
// is retried on reset; read back, the default is a default route, and a
// route retried only before the upstream has no retries.
func TestEnvoyDefaultAndIdempotency(t *testing.T) {
	retried := Hop{Timeout: 250 * time.Millisecond, Retries: 2, Backoff: Backoff{Base: 10 * time.Millisecond, Max: 40 * time.Millisecond}, Hedge: Hedge{Delay: 60 * time.Millisecond, Max: 1}}
	p := &Policy{Budget: 5 * time.Second, Default: Hop{Timeout: 1500 * time.Millisecond, Retries: 1}, Hops: map[string]Hop{"charge": retried, "get": retried, "order": retried}}
	eps := []Endpoint{
		{Hop: "charge", Caller: "checkout", Service: "payment", GRPCService: "shop.Payment", GRPCMethod: "Charge"},
		{Hop: "get", Caller: "checkout", Service: "cart", GRPCService: "shop.Cart", GRPCMethod: "GetCart"},
		{Hop: "order", Caller: "web", Service: "orders", Method: "POST", Route: "/order"},
	}
	out, notes := Envoy(p, eps, EnvoyOptions{})
	rcs, _, err := envoyValidate(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	routes := map[string]*routev3.Route{}
	for _, rc := range rcs {
		for _, vh := range rc.GetVirtualHosts() {
			rs := vh.GetRoutes()
			d := rs[len(rs)-1]
			if d.GetName() != "default" || d.GetMatch().GetPrefix() != "/" || d.GetRoute().GetTimeout().AsDuration() != callBound(p, p.Default) ||
				d.GetRoute().GetRetryPolicy().GetRetryOn() != envoyBeforeUpstream {
				t.Errorf("%s %s: last route %v, want the default (not idempotent: methods not in the logs)", rc.GetName(), vh.GetName(), d)
			}
			for _, r := range rs[:len(rs)-1] {
				routes[r.GetName()] = r
			}
		}
	}
	for _, n := range []string{"charge", "order"} {
		r := routes[n].GetRoute()
		on := r.GetRetryPolicy().GetRetryOn()
		if on != "connect-failure,refused-stream,reset-before-request" || strings.Contains(","+on+",", ",reset,") || strings.Contains(on, "5xx") || r.GetHedgePolicy() != nil ||
			r.GetRetryPolicy().GetPerTryTimeout().AsDuration() != 250*time.Millisecond {
			t.Errorf("%s: %v, want retries only before the upstream, no hedge", n, r)
		}
	}
	get := routes["get"].GetRoute()
	if !strings.Contains(get.GetRetryPolicy().GetRetryOn(), "reset") || !get.GetHedgePolicy().GetHedgeOnPerTryTimeout() || get.GetRetryPolicy().GetNumRetries().GetValue() != 2 {
		t.Errorf("get: %v, want retries on reset and the hedge, num_retries the policy's 2", get)
	}
	if !strings.Contains(out, "# not idempotent: gRPC method Charge changes state (Charge): retried only when") ||
		!strings.Contains(out, "# idempotent: gRPC method GetCart reads (Get)") || !strings.Contains(out, "# not idempotent: HTTP POST is not idempotent") {
		t.Errorf("the output does not say which calls are idempotent and why:\n%s", out)
	}
	if j := strings.Join(notes, "\n"); !strings.Contains(j, "charge: not idempotent (gRPC method Charge changes state (Charge)): its hedge after 0.06s is left out") ||
		!strings.Contains(j, "get: Envoy counts hedges and retries in one num_retries (2, the policy's retries)") {
		t.Errorf("notes:\n%s", j)
	}
	cfg, err := ReadConfig("e.yaml", "envoy", []byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Defaults) != 3 || len(cfg.Routes) != 3 {
		t.Fatalf("routes %d, defaults %d", len(cfg.Routes), len(cfg.Defaults))
	}
	for _, r := range cfg.Routes {
		want := 0
		if r.Name == "get" {
			want = 1 // one of the two is the hedge
		}
		if r.Hop.Retries != want {
			t.Errorf("%s read back with %d retries, want %d", r.Name, r.Hop.Retries, want)
		}
	}
	for _, d := range cfg.Defaults {
		if d.Hop.Timeout != 1500*time.Millisecond || d.Hop.Retries != 0 || d.Prefix != "/" {
			t.Errorf("default read back as %+v", d)
		}
	}
}
