package policy

import (
	"regexp"
	"testing"
)

// TestPathRegex: each route form becomes a pattern that matches its own
// paths and not its neighbours' (matched whole, as the proxies match).
func TestPathRegex(t *testing.T) {
	cases := []struct {
		e          Endpoint
		want       string
		match, not []string
	}{
		{Endpoint{GRPCService: "hipstershop.CartService", GRPCMethod: "GetCart"}, `/hipstershop\.CartService/GetCart`,
			[]string{"/hipstershop.CartService/GetCart"}, []string{"/hipstershopxCartService/GetCart", "/hipstershop.CartService/GetCartX"}},
		{Endpoint{Route: "/api/v1/order/{orderId}"}, `/api/v1/order/[^/]+`,
			[]string{"/api/v1/order/17"}, []string{"/api/v1/order/17/x", "/api/v1/order/"}},
		{Endpoint{Route: "/users/:id/posts"}, `/users/[^/]+/posts`, []string{"/users/a/posts"}, []string{"/users/a/b/posts"}},
		{Endpoint{Route: "/files/{*rest}"}, `/files/.*`, []string{"/files/a/b"}, []string{"/file/a"}},
		{Endpoint{Route: "/v1/item-{id}.json"}, `/v1/item-[^/]+\.json`, []string{"/v1/item-7.json"}, []string{"/v1/item-7xjson"}},
		{Endpoint{Service: "rank"}, `/.*`, []string{"/", "/x/y"}, nil},
	}
	for _, c := range cases {
		got := c.e.PathRegex()
		if got != c.want {
			t.Errorf("%+v: %q, want %q", c.e, got, c.want)
			continue
		}
		re := regexp.MustCompile("^(?:" + got + ")$")
		for _, m := range c.match {
			if !re.MatchString(m) {
				t.Errorf("%q does not match %q", got, m)
			}
		}
		for _, m := range c.not {
			if re.MatchString(m) {
				t.Errorf("%q matches %q", got, m)
			}
		}
		if !re.MatchString(c.e.SamplePath()) {
			t.Errorf("%q does not match its own sample path %q", got, c.e.SamplePath())
		}
	}
}
