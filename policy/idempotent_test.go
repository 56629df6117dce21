package policy

import (
	"strings"
	"testing"
)

// The idempotent key: true or false on a hop or the default (a hop
// inherits the default's), written back by Marshal only when set; a bad
// value is a problem with its line, column and key like any other.
func TestIdempotentKey(t *testing.T) {
	const y = `budget: 2s
default: {timeout: 1s, idempotent: true}
hops:
  charge: {timeout: 250ms, retries: 1, idempotent: false}
  get: {timeout: 100ms}
`
	p, err := Parse("i.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	if p.Default.Idempotent != Idempotent || p.Hops["charge"].Idempotent != NotIdempotent || p.Hops["get"].Idempotent != Idempotent {
		t.Errorf("default %v, charge %v, get %v", p.Default.Idempotent, p.Hops["charge"].Idempotent, p.Hops["get"].Idempotent)
	}
	out := string(p.Marshal())
	if !strings.Contains(out, "default:\n  timeout: 1s\n  retries: 0\n  backoff: 0s\n  budget_aware: false\n  idempotent: true\n") ||
		!strings.Contains(out, "  charge:\n    timeout: 250ms\n    retries: 1\n    backoff: 0s\n    budget_aware: false\n    idempotent: false\n") {
		t.Errorf("Marshal:\n%s", out)
	}
	q, err := Parse("i.yaml", []byte(out))
	if err != nil {
		t.Fatal(err)
	}
	for n, h := range p.Hops {
		if q.Hops[n] != h {
			t.Errorf("%s: read back %+v, want %+v", n, q.Hops[n], h)
		}
	}
	unset, _ := Parse("u.yaml", []byte("default: {timeout: 1s}\n"))
	if unset.Default.Idempotent.Set() || strings.Contains(string(unset.Marshal()), "idempotent") {
		t.Errorf("an unset key: %v\n%s", unset.Default.Idempotent, unset.Marshal())
	}
	_, err = Parse("b.yaml", []byte("default:\n  timeout: 1s\nhops:\n  x: {idempotent: sometimes}\n  y: {idempotent: [true]}\n"))
	if err == nil || !strings.Contains(err.Error(), `b.yaml:4:19: hops.x.idempotent: want true or false, got "sometimes"`) ||
		!strings.Contains(err.Error(), "b.yaml:5:19: hops.y.idempotent: want true or false, found a list") {
		t.Errorf("error %v", err)
	}
}

// IdempotentRule: HTTP by its method (RFC 9110), gRPC by the verb its
// method starts with, anything unknown not idempotent.
func TestIdempotentRule(t *testing.T) {
	g := func(m string) Endpoint { return Endpoint{Service: "s", GRPCService: "pkg.S", GRPCMethod: m} }
	cases := []struct {
		e    Endpoint
		want bool
		why  string
	}{
		{g("GetCart"), true, "reads (Get)"},
		{g("ListProducts"), true, "reads (List)"},
		{g("Check"), true, "reads (Check)"},
		{g("Watch"), true, ""},
		{g("get_cart"), true, "reads (get)"},
		{g("QueryOrders"), true, ""},
		{g("ReadRows"), true, ""},
		{g("Charge"), false, "changes state (Charge)"},
		{g("PlaceOrder"), false, "changes state (Place)"},
		{g("EmptyCart"), false, ""},
		{g("AddItem"), false, ""},
		{g("SendOrderConfirmation"), false, ""},
		{g("CreateUser"), false, ""},
		{g("UpdateUser"), false, ""},
		{g("Convert"), false, "Convert is not a verb known to read"},
		{g("HTTPGet"), false, ""},
		{Endpoint{Service: "s", Method: "GET", Route: "/a"}, true, "HTTP GET is idempotent"},
		{Endpoint{Service: "s", Method: "head", Route: "/a"}, true, ""},
		{Endpoint{Service: "s", Method: "OPTIONS", Route: "/a"}, true, ""},
		{Endpoint{Service: "s", Method: "PUT", Route: "/a"}, true, ""},
		{Endpoint{Service: "s", Method: "DELETE", Route: "/a"}, true, ""},
		{Endpoint{Service: "s", Method: "POST", Route: "/a"}, false, "HTTP POST is not idempotent"},
		{Endpoint{Service: "s", Method: "PATCH", Route: "/a"}, false, ""},
		{Endpoint{Service: "s", Route: "/a"}, false, "no method known"},
		{Endpoint{Service: "s"}, false, "no method known"},
	}
	for _, c := range cases {
		got, why := IdempotentRule(c.e)
		if got != c.want || !strings.Contains(why, c.why) {
			t.Errorf("%s: %v (%s), want %v (%s)", c.e.Label(), got, why, c.want, c.why)
		}
	}
	if ok, why := idempotentFor(Hop{Idempotent: Idempotent}, g("Charge")); !ok || why != "the policy says idempotent: true" {
		t.Errorf("the key does not win over the rule: %v %s", ok, why)
	}
}
