package analyze

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/span"
	"github.com/tailscope/tailscope/span/spantest"
)

func TestIDTemplate(t *testing.T) {
	cases := []struct {
		name, want string
		id         bool
	}{
		{"GET /users/12345", "GET /users/{id}", true},
		{"GET /orders/3f2b9c1e-7a4d-4b8e-9f10-2c3d4e5f6a7b/items", "GET /orders/{id}/items", true},
		{"GET /blobs/5f1c9a2b8e7d6c4f3a2b1c0d", "GET /blobs/{id}", true},
		{"POST /sessions/Zx8kQ2mP4rT7vW1yB3nD5f/refresh", "POST /sessions/{id}/refresh", true},
		{"order-12345 process", "order-{id} process", true},
		{"users.12345.get", "users.{id}.get", true},
		{"SELECT * FROM t WHERE id=42", "SELECT * FROM t WHERE id={id}", true},
		// Not ids: words, versions, short codes, service names.
		{"GET /api/v1/users", "GET /api/v1/users", false},
		{"grpc.health.v1.Health/Check", "grpc.health.v1.Health/Check", false},
		{"ts-order-service", "ts-order-service", false},
		{"redis GET", "redis GET", false},
		{"s3 PutObject", "s3 PutObject", false},
		{"http2 deadbeef", "http2 deadbeef", false},
		{"kafka.produce orders-v2", "kafka.produce orders-v2", false},
		{"svc.local/com.example.v3.CheckoutService/PlaceOrderWithInventoryReservation07", "svc.local/com.example.v3.CheckoutService/PlaceOrderWithInventoryReservation07", false},
		{"/api/v1/basicservice/basic/travel", "/api/v1/basicservice/basic/travel", false},
	}
	for _, c := range cases {
		got, id := idTemplate(c.name)
		if got != c.want || id != c.id {
			t.Errorf("idTemplate(%q) = %q, %v; want %q, %v", c.name, got, id, c.want, c.id)
		}
	}
}

// accumReport runs spans through an Accum, as the command does.
func accumReport(spans []span.Span, sample int) *Report {
	a := NewAccum(sample)
	for i := range spans {
		a.Add(&spans[i])
	}
	return measured(a, Options{})
}

func unboundedWarning(rep *Report) *Warning {
	for i := range rep.Warnings {
		if rep.Warnings[i].Code == WarnUnboundedHops {
			return &rep.Warnings[i]
		}
	}
	return nil
}

func TestUnboundedHopsFires(t *testing.T) {
	cases := []struct {
		name   string
		shapes []int
		traces int
		hops   int
		sample int
	}{
		{"digits", []int{0}, 3000, 2000, 0},
		{"uuids", []int{1}, 3000, 2000, 0},
		{"hex", []int{2}, 3000, 2000, 0},
		{"tokens", []int{3}, 3000, 2000, 0},
		{"mixed, sampled", []int{0, 1, 2, 3, 4}, 6000, 5000, 5000},
		{"few hops each seen often", []int{0, 4}, 4000, 60, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep := accumReport(spantest.IDSpans(7, c.traces, c.hops, c.shapes), c.sample)
			u := rep.UnboundedHops()
			if u == nil {
				t.Fatalf("no %s over %d hops", WarnUnboundedHops, len(rep.Hops))
			}
			w := u.Warning(angled)
			if u.Templates != len(c.shapes) || u.IDHops < len(rep.Hops)-2 {
				t.Errorf("%d id-laden hops under %d templates of %d hops; want %d templates, all but the root", u.IDHops, u.Templates, len(rep.Hops), len(c.shapes))
			}
			if len(u.HopBy) == 0 || u.HopBy[0] != "attr:http.route" || !strings.Contains(w.Message, "<HopBy> attr:http.route") {
				t.Errorf("suggested %v: %s", u.HopBy, w.Message)
			}
			if !strings.Contains(w.Message, u.Examples[0]) {
				t.Errorf("message lacks an example name: %s", w.Message)
			}
		})
	}
}

// boundedNames are hop names of a real system: routes as templates,
// RPC methods, queries, queues, versions and pods — no ids.
func boundedNames(n int) []string {
	verbs := []string{"GET", "POST", "PUT", "DELETE"}
	nouns := []string{"users", "orders", "carts", "items", "payments", "search", "auth", "sessions", "catalog", "prices", "stock", "reviews", "shipping", "tax"}
	var out []string
	for i := 0; len(out) < n; i++ {
		switch i % 5 {
		case 0:
			out = append(out, fmt.Sprintf("%s /api/v%d/%s/{id}", verbs[i%4], 1+i%3, nouns[i%len(nouns)]))
		case 1:
			out = append(out, fmt.Sprintf("grpc.%s.v%d.%sService/Get", nouns[i%len(nouns)], 1+i%2, strings.ToUpper(nouns[i%len(nouns)][:1])+nouns[i%len(nouns)][1:]))
		case 2:
			out = append(out, fmt.Sprintf("SELECT %s", nouns[i%len(nouns)]))
		case 3:
			out = append(out, fmt.Sprintf("kafka.produce %s-v%d", nouns[i%len(nouns)], i%4))
		default:
			out = append(out, fmt.Sprintf("ts-%s-service-%d", nouns[i%len(nouns)], i/len(nouns)))
		}
	}
	return out
}

func TestUnboundedHopsQuiet(t *testing.T) {
	for _, n := range []int{12, 55, 300} {
		names := boundedNames(n)
		r := rand.New(rand.NewPCG(uint64(n), 1))
		var spans []span.Span
		for tr := range 400 {
			id := fmt.Sprintf("q%05d", tr)
			for k := range 6 {
				h := names[r.IntN(len(names))]
				spans = append(spans, span.Span{TraceID: id, SpanID: fmt.Sprintf("%s-%d", id, k), Service: "svc", Name: h, Hop: h,
					Start: int64(tr)*1e9 + int64(k)*1e7, Duration: int64(1+r.IntN(50)) * 1e6, Weight: 1})
			}
		}
		rep := accumReport(spans, 0)
		if w := unboundedWarning(rep); w != nil {
			t.Errorf("%d bounded hop names: %s", len(rep.Hops), w.Message)
		}
	}
	// A minority of id-laden hops among many named ones does not make
	// the table unbounded.
	seen := []hopSeen{}
	for _, n := range boundedNames(200) {
		seen = append(seen, hopSeen{name: n, attempts: 500})
	}
	for k := range 60 {
		seen = append(seen, hopSeen{name: fmt.Sprintf("GET /users/%d", k), attempts: 3})
	}
	if u := unboundedHops(seen); u != nil {
		t.Errorf("60 id-laden hops among 200 bounded ones: %+v", u)
	}
	// Names with one id each but no two sharing a pattern are not ids of
	// a few routes.
	seen = seen[:0]
	for k := range 100 {
		seen = append(seen, hopSeen{name: fmt.Sprintf("job%c%c-%d", 'a'+k%26, 'a'+k/26, k), attempts: 3})
	}
	if u := unboundedHops(seen); u != nil {
		t.Errorf("unrelated names: %+v", u)
	}
}
