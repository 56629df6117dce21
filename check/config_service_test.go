package check

import (
	"strings"
	"testing"
	"time"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/policy"
)

// TestReadBackUnknownService: a ServiceProfile whose service no logged
// call goes to is a finding naming the service and what the logs call;
// a config that routes none of the logged calls is an error, not a pass.
func TestReadBackUnknownService(t *testing.T) {
	p := &policy.Policy{Default: policy.Hop{Timeout: time.Second}, Hops: map[string]policy.Hop{"h": {Timeout: 100 * time.Millisecond}}}
	eps := []policy.Endpoint{{Hop: "h", Caller: "web", Service: "cart", Route: "/c", Calls: 3}}
	out, _ := policy.Linkerd(p, eps, policy.MeshOptions{Namespace: "shop"})
	rep := &analyze.Report{Hops: []analyze.Hop{{Hop: "h", Endpoints: eps}}}
	read := func(s string) []Finding {
		cfg, err := policy.ReadConfig("sp.yaml", "linkerd", []byte(s))
		if err != nil {
			t.Fatal(err)
		}
		_, fs := readBack(rep, &policy.Policy{Name: "sp", Config: cfg})
		return fs
	}
	for _, f := range read(out) {
		if f.Code == CodeRouteNoHop || f.Severity == SevError {
			t.Errorf("the emitted profile: %+v", f)
		}
	}
	bad := strings.Replace(out, "tailscope.io/service: cart", "tailscope.io/service: carts", 1)
	if bad == out {
		t.Fatalf("no annotation:\n%s", out)
	}
	var named, failed bool
	for _, f := range read(bad) {
		named = named || f.Code == CodeRouteNoHop && strings.Contains(f.Message, `service "carts"`) && strings.Contains(f.Message, "they call cart")
		failed = failed || f.Severity == SevError
	}
	if !named || !failed {
		t.Errorf("findings %+v: want the unknown service named and an error", read(bad))
	}
}
