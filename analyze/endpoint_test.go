package analyze_test

import (
	"github.com/tailscope/tailscope/route"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/pipeline"
	"github.com/tailscope/tailscope/policy"
)

// nezhaMap names the columns of the Nezha CSV exports.
var nezhaMap = map[string]string{"trace_id": "TraceID", "span_id": "SpanID", "parent_id": "ParentID",
	"service": "PodName", "name": "OperationName", "start": "StartTimeUnixNano", "end": "EndTimeUnixNano"}

// realReport analyses a real export under ../testdata/real, and recommends
// on it, through the same path as the commands (the streaming accumulator and its sample).
func realReport(t *testing.T, rel string) (*analyze.Report, *policy.Policy) {
	t.Helper()
	path := filepath.Join("..", "testdata", "real", rel)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("real export missing from testdata/real (every clone has it): %v", err)
	}
	l, err := pipeline.Read([]string{path}, pipeline.Options{Ingest: ingest.Options{Map: nezhaMap}})
	if err != nil {
		t.Fatal(err)
	}
	return l.Recommend(analyze.Options{})
}

func endpointsOf(rep *analyze.Report, hop string) []route.Endpoint {
	for _, h := range rep.Hops {
		if h.Hop == hop {
			return h.Endpoints
		}
	}
	return nil
}

// TestEndpointsOnlineBoutique: on the real Online Boutique export (gRPC,
// client spans named pkg.Service/Method on the calling pod, server spans
// below them), every hop the recommendation times out maps to its caller,
// the called service (from the server span, never the hop label) and the
// proto service and method, whatever the span name's spelling.
func TestEndpointsOnlineBoutique(t *testing.T) {
	rep, p := realReport(t, "nezha-online-boutique/checkout-12_02_trace.csv")
	want := map[string]route.Endpoint{
		"checkoutservice hipstershop.CartService/GetCart": {Caller: "checkoutservice", Service: "cartservice",
			GRPCService: "hipstershop.CartService", GRPCMethod: "GetCart"},
		"checkoutservice hipstershop.CartService/EmptyCart": {Caller: "checkoutservice", Service: "cartservice",
			GRPCService: "hipstershop.CartService", GRPCMethod: "EmptyCart"},
		// A leading slash in the client span's name.
		"recommendationservice /hipstershop.ProductCatalogService/ListProducts": {Caller: "recommendationservice",
			Service: "productcatalogservice", GRPCService: "hipstershop.ProductCatalogService", GRPCMethod: "ListProducts"},
		// The server span is named grpc.hipstershop.CurrencyService/Convert:
		// the client span's name wins.
		"frontend hipstershop.CurrencyService/Convert": {Caller: "frontend", Service: "currencyservice",
			GRPCService: "hipstershop.CurrencyService", GRPCMethod: "Convert"},
	}
	for hop, w := range want {
		es := endpointsOf(rep, hop)
		if len(es) != 1 {
			t.Fatalf("%s: endpoints %+v, want one", hop, es)
		}
		got := es[0]
		if got.Calls == 0 || got.Hop != hop {
			t.Errorf("%s: %+v: no calls or wrong hop", hop, got)
		}
		got.Calls, got.Hop = 0, ""
		if got != w {
			t.Errorf("%s: got %+v, want %+v", hop, got, w)
		}
		if got.Path() != "/"+w.GRPCService+"/"+w.GRPCMethod {
			t.Errorf("%s: path %q", hop, got.Path())
		}
	}
	hops := p.HopNames()
	if len(hops) < 15 {
		t.Fatalf("fixture: %d hops in the policy", len(hops))
	}
	labels := map[string]bool{}
	for _, h := range rep.Hops {
		labels[h.Hop] = true
	}
	mapped := 0
	for _, e := range rep.Endpoints(hops) {
		if e.Unmapped != "" {
			continue
		}
		mapped++
		if labels[e.Service] || strings.Contains(e.Service, " ") || e.Caller == "" || !e.IsGRPC() {
			t.Errorf("%s: %+v: a hop label as the service, no caller, or no gRPC method", e.Hop, e)
		}
	}
	if mapped < len(hops)-1 {
		t.Errorf("%d of %d policy hops mapped", mapped, len(hops))
	}
}

// TestEndpointsTrainTicket: on the real TrainTicket export (HTTP; client
// spans named "HTTP GET", server spans named by their Spring route
// template), one client hop calls several routes of several services; each
// is its own endpoint with the method from the client span and the
// template from the server span.
func TestEndpointsTrainTicket(t *testing.T) {
	rep, _ := realReport(t, "nezha-trainticket/fault-12_06_trace.csv")
	es := endpointsOf(rep, "ts-execute-service HTTP GET")
	services := map[string]bool{}
	for _, e := range es {
		if e.Unmapped != "" || e.Method != "GET" || !e.Template() || e.Caller != "ts-execute-service" || !strings.HasPrefix(e.Route, "/api/v1/") {
			t.Errorf("%+v: want a mapped GET route template called by ts-execute-service", e)
		}
		services[e.Service] = true
	}
	if len(es) < 3 || !services["ts-order-service"] || !services["ts-order-other-service"] {
		t.Errorf("endpoints %+v: want several routes of ts-order-service and ts-order-other-service", es)
	}
	found := false
	for _, e := range es {
		if e.Service == "ts-order-service" && e.Route == "/api/v1/orderservice/order/{orderId}" {
			found = true
		}
	}
	if !found {
		t.Errorf("no endpoint for GET /api/v1/orderservice/order/{orderId}: %+v", es)
	}
}

// TestEndpointsFromAttributes: OTel attributes map a call through the
// streaming reader and its trace sample (which keeps the routing
// attributes): rpc.service/rpc.method, peer.service, a Kubernetes DNS
// server.address with its port, http.route over url.path; an IP address
// names no service, and the call is listed unmapped with the reason.
func TestEndpointsFromAttributes(t *testing.T) {
	lines := []string{
		`{"trace_id":"t1","span_id":"a","service":"web","name":"call cart","kind":"client","duration_ms":5,"attributes":{"rpc.system":"grpc","rpc.service":"shop.Cart","rpc.method":"Get","server.address":"cart.shop.svc.cluster.local:7070"}}`,
		`{"trace_id":"t2","span_id":"b","service":"web","name":"GET","kind":"client","duration_ms":5,"attributes":{"http.request.method":"GET","url.path":"/users/42","http.route":"/users/{id}","peer.service":"users"}}`,
		`{"trace_id":"t3","span_id":"c","service":"web","name":"POST","kind":"client","duration_ms":5,"attributes":{"http.request.method":"POST","url.path":"/pay","server.address":"10.0.0.7"}}`,
	}
	path := filepath.Join(t.TempDir(), "spans.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := pipeline.Read([]string{path}, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep := l.Report(analyze.Options{})
	got := map[string]route.Endpoint{}
	for _, h := range rep.Hops {
		for _, e := range h.Endpoints {
			e.Calls, e.Hop = 0, ""
			got[strings.TrimSuffix(h.Hop, " (client)")] = e
		}
	}
	want := map[string]route.Endpoint{
		"web call cart": {Caller: "web", Service: "cart", GRPCService: "shop.Cart", GRPCMethod: "Get"},
		"web GET":       {Caller: "web", Service: "users", Method: "GET", Route: "/users/{id}"},
	}
	for hop, w := range want {
		if got[hop] != w {
			t.Errorf("%s: got %+v, want %+v", hop, got[hop], w)
		}
	}
	if e := got["web POST"]; e.Service != "" || !strings.Contains(e.Unmapped, "10.0.0.7") {
		t.Errorf("web POST: %+v: want unmapped, naming the address", e)
	}
}
