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
		eps = append(eps, Endpoint{Hop: n, Caller: n, Service: n, Route: "/" + n})
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
		if vh.GetName() != n || r.GetName() != n || r.GetRoute().GetCluster() != n || r.GetMatch().GetPath() != "/"+n ||
			r.GetRoute().GetTimeout().AsDuration() != time.Duration(i+1)*100*time.Millisecond {
			t.Errorf("%q: read back as %v", n, rc)
		}
	}
}
