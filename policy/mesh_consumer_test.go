package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"
	networkingv1 "istio.io/api/networking/v1"
)

// yamlDocs decodes every non-empty YAML document of an output.
func yamlDocs(out string) ([]map[string]any, error) {
	var docs []map[string]any
	dec := yaml.NewDecoder(strings.NewReader(out))
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if doc != nil {
			docs = append(docs, doc)
		}
	}
}

// mustDocs is yamlDocs for a test: an output that does not decode, or
// holds no document, fails it.
func mustDocs(t *testing.T, out string) []map[string]any {
	t.Helper()
	docs, err := yamlDocs(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatalf("no YAML document in %q", out)
	}
	return docs
}

// schemaFile reads a schema kept under testdata; one that cannot be read,
// or is empty (which would pass any document), fails the test.
func schemaFile(t *testing.T, name string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := yaml.Unmarshal(raw, &schema); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(schema) == 0 {
		t.Fatalf("%s: an empty schema", name)
	}
	return schema
}

// istioValidate reads each VirtualService's spec strictly into Istio's own
// type (istio.io/api networking/v1, protojson: unknown fields and wrong
// types are errors) and returns them by name.
func istioValidate(out string) (map[string]*networkingv1.VirtualService, error) {
	docs, err := yamlDocs(out)
	if err != nil {
		return nil, err
	}
	vss := map[string]*networkingv1.VirtualService{}
	for i, d := range docs {
		if d["apiVersion"] != "networking.istio.io/v1" || d["kind"] != "VirtualService" {
			return nil, fmt.Errorf("document %d: apiVersion %v kind %v", i, d["apiVersion"], d["kind"])
		}
		js, err := json.Marshal(d["spec"])
		if err != nil {
			return nil, err
		}
		vs := &networkingv1.VirtualService{}
		if err := protojson.Unmarshal(js, vs); err != nil {
			return nil, fmt.Errorf("document %d: %v\n%s", i, err, js)
		}
		for _, h := range vs.GetHttp() {
			if err := istioRetryOn(h.GetRetries().GetRetryOn()); err != nil {
				return nil, fmt.Errorf("document %d: route %s: %v", i, h.GetName(), err)
			}
			if h.GetRetries().GetBackoff() != nil && h.GetRetries().GetBackoff().AsDuration() < time.Millisecond {
				return nil, fmt.Errorf("document %d: route %s: backoff below 1ms", i, h.GetName())
			}
		}
		name := d["metadata"].(map[string]any)["name"].(string)
		if !regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`).MatchString(name) {
			return nil, fmt.Errorf("document %d: %q is not a Kubernetes object name", i, name)
		}
		vss[vs.GetHosts()[0]] = vs
	}
	return vss, nil
}

// istioRetryPolicies are the retryOn values Istio's validation admits
// (istio.io/istio pkg/config/validation, supportedRetryOnPolicies, recent
// releases): Envoy's x-envoy-retry-on and x-envoy-retry-grpc-on policies;
// an HTTP status code is admitted too.
var istioRetryPolicies = map[string]bool{"5xx": true, "gateway-error": true, "reset": true, "reset-before-request": true,
	"connect-failure": true, "retriable-4xx": true, "refused-stream": true, "retriable-status-codes": true, "retriable-headers": true,
	"envoy-ratelimited": true, "http3-post-connect-failure": true,
	"cancelled": true, "deadline-exceeded": true, "internal": true, "resource-exhausted": true, "unavailable": true}

// istioRetryOn validates a retryOn as Istio does.
func istioRetryOn(on string) error {
	if on == "" {
		return nil
	}
	for _, p := range strings.Split(on, ",") {
		p = strings.TrimSpace(p)
		if _, err := strconv.Atoi(p); err != nil && !istioRetryPolicies[p] {
			return fmt.Errorf("retryOn %q: %q is not a retry policy Istio knows", on, p)
		}
	}
	return nil
}

// TestIstioAcceptedByIstioAPI: the VirtualServices of a policy over gRPC,
// HTTP and whole-service endpoints read strictly into Istio's types; each
// route matches its caller's sourceLabels and URI, carries the call's
// timeout and the retries (attempts 0 without: Istio would retry twice on
// its own); and the check can fail.
func TestIstioAcceptedByIstioAPI(t *testing.T) {
	p := emitPolicy()
	eps := emitEndpoints(p)
	eps = append(eps, Endpoint{Hop: "plain", Caller: "gw", Service: "orders", Method: "GET", Route: "/order/{id}"},
		Endpoint{Hop: "plain", Caller: "", Service: "orders"})
	out, notes := Istio(p, eps, MeshOptions{Namespace: "shop"})
	vss, err := istioValidate(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	r := vss["backend"].GetHttp()
	byName := map[string]int{}
	for i, x := range r {
		byName[x.GetName()] = i
	}
	plain := r[byName["plain"]]
	if plain.GetMatch()[0].GetSourceLabels()["app"] != "web" || plain.GetMatch()[0].GetUri().GetExact() != "/pkg.Backend/plain" ||
		plain.GetTimeout().AsDuration() != 2*time.Second || plain.GetRetries().GetAttempts() != 0 || plain.GetRetries() == nil {
		t.Errorf("plain: %v", plain)
	}
	retried := r[byName["retried"]]
	if retried.GetRetries().GetAttempts() != 1 || retried.GetRetries().GetPerTryTimeout().AsDuration() != 200*time.Millisecond ||
		retried.GetTimeout().AsDuration() != callBound(p, p.Hops["retried"]) {
		t.Errorf("retried: %v", retried)
	}
	orders := vss["orders"].GetHttp()
	if len(orders) != 2 || orders[0].GetMatch()[0].GetUri().GetRegex() != "/order/[^/]+" || orders[0].GetMatch()[0].GetMethod().GetExact() != "GET" ||
		orders[1].GetMatch()[0].GetUri().GetPrefix() != "/" || orders[1].GetMatch()[0].GetSourceLabels() != nil {
		t.Errorf("orders: %v", orders)
	}
	if !strings.Contains(strings.Join(notes, "\n"), "Istio has no hedging") {
		t.Errorf("no note on hedging: %q", notes)
	}
	if _, err := istioValidate(strings.Replace(out, "retries: {attempts: 0}", "retries: {atempts: 0}", 1)); err == nil {
		t.Error("an unknown field passed")
	}
}

// TestIstioOddNames: callers (and the services that are host names) named True, NULL, yes, ~ and
// with a bidi override keep their names in hosts and sourceLabels, and
// every VirtualService has a valid object name.
func TestIstioOddNames(t *testing.T) {
	p, eps := oddPolicy()
	out, _ := Istio(p, eps, MeshOptions{})
	if strings.ContainsRune(out, '\u202e') {
		t.Errorf("a raw bidi override:\n%s", out)
	}
	vss, err := istioValidate(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for i, n := range oddNames() {
		vs := vss[oddService(n)]
		if vs == nil {
			t.Errorf("%q: no VirtualService (%d of %d read back)", n, len(vss), len(oddNames()))
			continue
		}
		h := vs.GetHttp()[0]
		if h.GetMatch()[0].GetSourceLabels()["app"] != n || h.GetRoute()[0].GetDestination().GetHost() != oddService(n) ||
			h.GetTimeout().AsDuration() != time.Duration(i+1)*100*time.Millisecond {
			t.Errorf("%q: %v", n, h)
		}
	}
}

// oddPolicy has a hop per odd name, calling a service and route of that
// name from a caller of that name.
func oddPolicy() (*Policy, []Endpoint) {
	p := &Policy{Default: Hop{Timeout: time.Second}, Hops: map[string]Hop{}}
	var eps []Endpoint
	for i, n := range oddNames() {
		p.Hops[n] = Hop{Timeout: time.Duration(i+1) * 100 * time.Millisecond}
		eps = append(eps, Endpoint{Hop: n, Caller: n, Service: oddService(n), Route: "/" + n})
	}
	return p, eps
}

// schemaValidate checks v against an OpenAPI v3 schema of the kinds a CRD
// uses: type, properties (no others allowed: the CRD does not preserve
// unknown fields), required, items, enum, and a string's pattern and
// length and an array's maxItems.
func schemaValidate(schema map[string]any, v any, path string) error {
	if enum, ok := schema["enum"].([]any); ok && !slices.Contains(enum, v) {
		return fmt.Errorf("%s: %v is not one of %v", path, v, enum)
	}
	switch schema["type"] {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: %T, want an object", path, v)
		}
		props, _ := schema["properties"].(map[string]any)
		for _, r := range asList(schema["required"]) {
			if _, ok := m[r.(string)]; !ok {
				return fmt.Errorf("%s: %s is required", path, r)
			}
		}
		for k, x := range m {
			ps, ok := props[k].(map[string]any)
			if ap, isMap := schema["additionalProperties"].(map[string]any); !ok && isMap {
				ps, ok = ap, true
			}
			if !ok {
				return fmt.Errorf("%s: unknown property %q", path, k)
			}
			if err := schemaValidate(ps, x, path+"."+k); err != nil {
				return err
			}
		}
	case "array":
		xs, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: %T, want an array", path, v)
		}
		if n, ok := schema["maxItems"].(int); ok && len(xs) > n {
			return fmt.Errorf("%s: %d items, at most %d", path, len(xs), n)
		}
		for i, x := range xs {
			if err := schemaValidate(schema["items"].(map[string]any), x, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s: %T (%v), want a string", path, v, v)
		}
		if n, ok := schema["maxLength"].(int); ok && len(str) > n {
			return fmt.Errorf("%s: %q is longer than %d", path, str, n)
		}
		if n, ok := schema["minLength"].(int); ok && len(str) < n {
			return fmt.Errorf("%s: %q is shorter than %d", path, str, n)
		}
		if pat, ok := schema["pattern"].(string); ok && !regexp.MustCompile(pat).MatchString(str) {
			return fmt.Errorf("%s: %q does not match %s", path, str, pat)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%s: %T, want a boolean", path, v)
		}
	case "integer":
		if _, ok := v.(int); !ok {
			return fmt.Errorf("%s: %T, want an integer", path, v)
		}
	case "number":
		switch v.(type) {
		case int, float64:
		default:
			return fmt.Errorf("%s: %T, want a number", path, v)
		}
	}
	return nil
}

func asList(v any) []any { l, _ := v.([]any); return l }

// linkerdValidate checks every document against the ServiceProfile CRD's
// schema (testdata) and that each timeout and ttl is a Go duration, as
// Linkerd parses them; it returns the profiles by name.
func linkerdValidate(t *testing.T, out string) map[string]map[string]any {
	t.Helper()
	raw, err := os.ReadFile("testdata/linkerd-serviceprofile-v1alpha2.schema.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := yaml.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	docs, err := yamlDocs(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	sps := map[string]map[string]any{}
	for i, d := range docs {
		if err := schemaValidate(schema, d, fmt.Sprintf("document %d", i)); err != nil {
			t.Errorf("%v", err)
			continue
		}
		if d["apiVersion"] != "linkerd.io/v1alpha2" || d["kind"] != "ServiceProfile" {
			t.Errorf("document %d: %v %v", i, d["apiVersion"], d["kind"])
		}
		spec := d["spec"].(map[string]any)
		for _, r := range asList(spec["routes"]) {
			r := r.(map[string]any)
			if s, ok := r["timeout"].(string); ok {
				if _, err := time.ParseDuration(s); err != nil {
					t.Errorf("document %d: timeout %q: %v", i, s, err)
				}
			}
			if _, err := regexp.Compile(r["condition"].(map[string]any)["pathRegex"].(string)); err != nil {
				t.Errorf("document %d: %v", i, err)
			}
		}
		sps[d["metadata"].(map[string]any)["name"].(string)] = spec
	}
	return sps
}

// TestLinkerdAcceptedBySchema: ServiceProfiles named
// SERVICE.NAMESPACE.svc.cluster.local pass the CRD's schema; routes of
// several callers to one route merge with the longest timeout; gRPC
// routes are POSTs to the method path; the retry budget is the service's
// most conservative; and the schema check can fail.
func TestLinkerdAcceptedBySchema(t *testing.T) {
	p := emitPolicy()
	p.RetryBudgets["retried"] = RetryBudget{RetryRatio: 0.2, MinRetriesPerSecond: 10}
	eps := emitEndpoints(p)
	eps = append(eps, Endpoint{Hop: "retried", Caller: "other", Service: "backend", GRPCService: "pkg.Backend", GRPCMethod: "plain"})
	out, notes := Linkerd(p, eps, MeshOptions{Namespace: "shop"})
	sps := linkerdValidate(t, out)
	spec := sps["backend.shop.svc.cluster.local"]
	if spec == nil {
		t.Fatalf("profiles %v\n%s", sps, out)
	}
	var plain map[string]any
	for _, r := range asList(spec["routes"]) {
		if r.(map[string]any)["name"] == "plain" {
			plain = r.(map[string]any)
		}
	}
	c := plain["condition"].(map[string]any)
	if c["method"] != "POST" || c["pathRegex"] != `/pkg\.Backend/plain` || plain["timeout"] != "2s" || plain["isRetryable"] != true {
		t.Errorf("plain: %v (want the longest timeout 2s, and retryable as one caller's hop retries)", plain)
	}
	if !strings.Contains(strings.Join(notes, "\n"), "one Linkerd route for the hops plain, retried") {
		t.Errorf("no note on the merged route: %q", notes)
	}
	rb := spec["retryBudget"].(map[string]any)
	if rb["retryRatio"] != 0.2 || rb["minRetriesPerSecond"] != 10 || rb["ttl"] != "10s" {
		t.Errorf("retryBudget %v", rb)
	}
	schema := schemaFile(t, "linkerd-serviceprofile-v1alpha2.schema.yaml")
	docs := mustDocs(t, strings.Replace(out, "isRetryable:", "retryable:", 1))
	if schemaValidate(schema, docs[0], "") == nil {
		t.Error("an unknown property passed the schema")
	}
}

// TestLinkerdOddNames: odd service names keep their routes' paths and get
// valid profile names; what a reader cannot see is escaped.
func TestLinkerdOddNames(t *testing.T) {
	p, eps := oddPolicy()
	out, _ := Linkerd(p, eps, MeshOptions{})
	if strings.ContainsRune(out, '\u202e') {
		t.Errorf("a raw bidi override:\n%s", out)
	}
	sps := linkerdValidate(t, out)
	if len(sps) != len(oddNames()) {
		t.Errorf("%d profiles for %d services:\n%s", len(sps), len(oddNames()), out)
	}
	for name, spec := range sps {
		if !regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`).MatchString(name) {
			t.Errorf("%q is not a Kubernetes object name", name)
		}
		r := asList(spec["routes"])[0].(map[string]any)
		re := regexp.MustCompile("^(?:" + r["condition"].(map[string]any)["pathRegex"].(string) + ")$")
		if !re.MatchString("/" + r["name"].(string)) {
			t.Errorf("%s: route %v does not match /%s", name, r, r["name"])
		}
	}
}

// TestIstioDefaultBackoffIdempotency: each VirtualService, read strictly
// by istio.io/api, ends with a route named default without a match (any
// caller, any path) carrying the policy's default, so that a caller or a
// method the logs did not show is not answered 404; a retried route
// carries its backoff; a method that is not idempotent (Charge, a POST) is
// never retried on reset or a server error; read back, the default is a
// default route and the backoff Envoy's.
func TestIstioDefaultBackoffIdempotency(t *testing.T) {
	retried := Hop{Timeout: 250 * time.Millisecond, Retries: 2, Backoff: Backoff{Base: 10 * time.Millisecond, Max: 60 * time.Millisecond}}
	p := &Policy{Budget: 5 * time.Second, Default: Hop{Timeout: 1500 * time.Millisecond}, Hops: map[string]Hop{"charge": retried, "get": retried, "order": retried}}
	eps := []Endpoint{
		{Hop: "charge", Caller: "checkout", Service: "payment", GRPCService: "shop.Payment", GRPCMethod: "Charge"},
		{Hop: "get", Caller: "checkout", Service: "cart", GRPCService: "shop.Cart", GRPCMethod: "GetCart"},
		{Hop: "order", Caller: "web", Service: "orders", Method: "POST", Route: "/order"},
	}
	out, notes := Istio(p, eps, MeshOptions{Namespace: "shop"})
	vss, err := istioValidate(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(vss) != 3 {
		t.Fatalf("%d VirtualServices", len(vss))
	}
	for host, vs := range vss {
		hs := vs.GetHttp()
		d := hs[len(hs)-1]
		if d.GetName() != "default" || len(d.GetMatch()) != 0 || d.GetTimeout().AsDuration() != 1500*time.Millisecond ||
			d.GetRetries() == nil || d.GetRetries().GetAttempts() != 0 || d.GetRoute()[0].GetDestination().GetHost() != host {
			t.Errorf("%s: last route %v, want the default", host, d)
		}
		r := hs[0].GetRetries()
		if r.GetBackoff().AsDuration() != 10*time.Millisecond || r.GetAttempts() != 2 {
			t.Errorf("%s: retries %v, want the 10ms backoff", host, r)
		}
		on := "," + r.GetRetryOn() + ","
		reset := strings.Contains(on, ",reset,")
		if wantReset := host == "cart"; reset != wantReset || !wantReset && (strings.Contains(on, "5xx") || !strings.Contains(on, "reset-before-request")) {
			t.Errorf("%s: retryOn %s (reset %v, want %v)", host, r.GetRetryOn(), reset, wantReset)
		}
	}
	if j := strings.Join(notes, "\n"); strings.Contains(j, "Istio sets no backoff") || !strings.Contains(j, "the policy's maximum 0.06s is not said") {
		t.Errorf("notes:\n%s", j)
	}
	cfg, err := ReadConfig("i.yaml", "istio", []byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Defaults) != 3 || len(cfg.Routes) != 3 {
		t.Fatalf("routes %+v\ndefaults %+v", cfg.Routes, cfg.Defaults)
	}
	for _, r := range cfg.Routes {
		want := 0
		if r.Name == "get" {
			want = 2
		}
		if r.Hop.Retries != want || want > 0 && r.Hop.Backoff.Base != 10*time.Millisecond {
			t.Errorf("%s read back as %+v, want %d retries", r.Name, r.Hop, want)
		}
	}
}

// gatewayValidate checks every document of a --emit linkerd-route output
// against the Gateway API CRD's schema of its kind (testdata), the CEL
// rules of the CRD that bear on what tailscope writes (an Exact or
// PathPrefix path starts with '/'; a gRPC service and method are
// identifiers), and Linkerd's annotations as Linkerd documents them
// (durations of GEP-2257, the HTTP and gRPC retry conditions it knows, a
// whole number of retries); it returns the documents by name.
func gatewayValidate(t *testing.T, out string) map[string]map[string]any {
	t.Helper()
	schemas := map[string]map[string]any{}
	for kind, file := range map[string]string{"HTTPRoute": "testdata/gateway-httproute-v1.schema.yaml", "GRPCRoute": "testdata/gateway-grpcroute-v1.schema.yaml"} {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var sc map[string]any
		if err := yaml.Unmarshal(raw, &sc); err != nil {
			t.Fatal(err)
		}
		schemas[kind] = sc
	}
	docs, err := yamlDocs(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	gatewayDur := regexp.MustCompile(`^([0-9]{1,5}(h|m|s|ms)){1,4}$`)
	grpcService := regexp.MustCompile(`(?i)^\.?[a-z_][a-z_0-9]*(\.[a-z_][a-z_0-9]*)*$`)
	grpcMethod := regexp.MustCompile(`^[A-Za-z_][A-Za-z_0-9]*$`)
	linkerdGRPC := map[string]bool{"cancelled": true, "deadline-exceeded": true, "internal": true, "resource-exhausted": true, "unavailable": true}
	byName := map[string]map[string]any{}
	for i, d := range docs {
		kind, _ := d["kind"].(string)
		sc := schemas[kind]
		if sc == nil {
			t.Errorf("document %d: kind %v", i, d["kind"])
			continue
		}
		if err := schemaValidate(sc, d, fmt.Sprintf("document %d (%s)", i, kind)); err != nil {
			t.Errorf("%v", err)
			continue
		}
		md := d["metadata"].(map[string]any)
		ann, _ := md["annotations"].(map[string]any)
		for k, v := range ann {
			v := v.(string)
			switch k {
			case LinkerdRequestTimeout, LinkerdRetryTimeout:
				if !gatewayDur.MatchString(v) {
					t.Errorf("document %d: %s: %q is not a Gateway API duration", i, k, v)
				}
			case LinkerdRetryLimit:
				if n, err := strconv.Atoi(v); err != nil || n < 0 {
					t.Errorf("document %d: %s: %q", i, k, v)
				}
			case LinkerdRetryHTTP:
				if kind != "HTTPRoute" || v != "5xx" && v != "gateway-error" {
					t.Errorf("document %d: %s %q on a %s", i, k, v, kind)
				}
			case LinkerdRetryGRPC:
				for _, c := range strings.Split(v, ",") {
					if kind != "GRPCRoute" || !linkerdGRPC[c] {
						t.Errorf("document %d: %s %q on a %s", i, k, v, kind)
					}
				}
			case ServiceAnnotation, DefaultAnnotation:
			default:
				t.Errorf("document %d: annotation %s", i, k)
			}
		}
		for _, rule := range asList(d["spec"].(map[string]any)["rules"]) {
			for _, m := range asList(rule.(map[string]any)["matches"]) {
				m := m.(map[string]any)
				if pm, ok := m["path"].(map[string]any); ok && pm["type"] != "RegularExpression" {
					if v := pm["value"].(string); !strings.HasPrefix(v, "/") || strings.Contains(v, "//") {
						t.Errorf("document %d: path %q", i, v)
					}
				}
				if pm, ok := m["path"].(map[string]any); ok && pm["type"] == "RegularExpression" {
					if _, err := regexp.Compile(pm["value"].(string)); err != nil {
						t.Errorf("document %d: %v", i, err)
					}
				}
				if gm, ok := m["method"].(map[string]any); ok && kind == "GRPCRoute" {
					if !grpcService.MatchString(fmt.Sprint(gm["service"])) || !grpcMethod.MatchString(fmt.Sprint(gm["method"])) {
						t.Errorf("document %d: gRPC method match %v", i, gm)
					}
				}
			}
		}
		byName[md["name"].(string)] = d
	}
	return byName
}

// TestLinkerdRoutes: --emit linkerd-route writes, per called service, a
// GRPCRoute per gRPC method and an HTTPRoute per HTTP route attached to
// the Service, which pass the Gateway API CRDs' schema and carry Linkerd's
// timeout and retry annotations (the call bound, the retries, the
// per-attempt timeout; none for a call that is not idempotent), and a
// last route without a match carrying the policy's default; read back
// (sniffed as Linkerd), every endpoint takes its route and its settings,
// the default is a default route; and the schema check can fail.
func TestLinkerdRoutes(t *testing.T) {
	retried := Hop{Timeout: 250 * time.Millisecond, Retries: 2, Backoff: Backoff{Base: 10 * time.Millisecond, Max: 40 * time.Millisecond}}
	p := &Policy{Budget: 5 * time.Second, Default: Hop{Timeout: 1500 * time.Millisecond},
		Hops: map[string]Hop{"charge": retried, "get": retried, "order": retried, "item": {Timeout: 400 * time.Millisecond}}}
	eps := []Endpoint{
		{Hop: "charge", Caller: "checkout", Service: "payment", GRPCService: "shop.Payment", GRPCMethod: "Charge"},
		{Hop: "get", Caller: "checkout", Service: "cart", GRPCService: "shop.Cart", GRPCMethod: "GetCart"},
		{Hop: "order", Caller: "web", Service: "orders", Method: "POST", Route: "/order"},
		{Hop: "item", Caller: "web", Service: "orders", Method: "GET", Route: "/order/{id}"},
	}
	out, notes := LinkerdRoutes(p, eps, MeshOptions{Namespace: "shop"})
	docs := gatewayValidate(t, out)
	if len(docs) != 7 {
		t.Fatalf("%d routes:\n%s", len(docs), out)
	}
	ann := func(name string) map[string]any {
		d := docs[name]
		if d == nil {
			t.Fatalf("no route %s in %v", name, slices.Sorted(maps.Keys(docs)))
		}
		a, _ := d["metadata"].(map[string]any)["annotations"].(map[string]any)
		return a
	}
	var getName, chargeName string
	for n, d := range docs {
		rules := asList(d["spec"].(map[string]any)["rules"])
		if ms := asList(rules[0].(map[string]any)["matches"]); len(ms) > 0 {
			if gm, ok := ms[0].(map[string]any)["method"].(map[string]any); ok {
				switch gm["method"] {
				case "GetCart":
					getName = n
				case "Charge":
					chargeName = n
				}
			}
		}
	}
	if a := ann(getName); a[LinkerdRequestTimeout] != "780ms" || a[LinkerdRetryLimit] != "2" || a[LinkerdRetryTimeout] != "250ms" ||
		a[LinkerdRetryGRPC] != "unavailable,resource-exhausted" || docs[getName]["kind"] != "GRPCRoute" {
		t.Errorf("GetCart: %v", a)
	}
	if a := ann(chargeName); a[LinkerdRetryLimit] != nil || a[LinkerdRequestTimeout] != "250ms" {
		t.Errorf("Charge (not idempotent): %v, want no retries and its 250ms timeout", a)
	}
	for _, svc := range []string{"payment", "cart", "orders"} {
		d := docs[svc+"-default"]
		a := ann(svc + "-default")
		if a[DefaultAnnotation] != "true" || a[LinkerdRequestTimeout] != "1500ms" || len(asList(d["spec"].(map[string]any)["rules"])) != 1 {
			t.Errorf("%s's default route: %v", svc, d)
		}
		if pr := asList(d["spec"].(map[string]any)["parentRefs"])[0].(map[string]any); pr["name"] != svc || pr["kind"] != "Service" {
			t.Errorf("%s: parentRefs %v", svc, pr)
		}
	}
	if docs["orders-default"]["kind"] != "HTTPRoute" || docs["cart-default"]["kind"] != "GRPCRoute" {
		t.Errorf("default kinds: orders %v, cart %v", docs["orders-default"]["kind"], docs["cart-default"]["kind"])
	}
	if j := strings.Join(notes, "\n"); !strings.Contains(j, "charge: not idempotent") || !strings.Contains(j, "Linkerd's retries have no backoff") {
		t.Errorf("notes:\n%s", j)
	}
	if f := SniffConfig([]byte(out)); f != "linkerd" {
		t.Fatalf("sniffed as %q", f)
	}
	cfg, err := ReadConfig("routes.yaml", "linkerd", []byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Defaults) != 3 {
		t.Errorf("defaults %+v", cfg.Defaults)
	}
	for _, e := range eps {
		var got *Route
		for i := range cfg.Routes {
			if cfg.Routes[i].Matches(e) {
				got = &cfg.Routes[i]
				break
			}
		}
		h := p.Hops[e.Hop]
		want := Hop{Timeout: h.Timeout, Retries: h.Retries}
		if idem, _ := IdempotentRule(e); !idem {
			want = Hop{Timeout: callBound(p, Hop{Timeout: h.Timeout})}
		}
		if got == nil || got.Hop.Timeout != want.Timeout || got.Hop.Retries != want.Retries {
			t.Errorf("%s: read back %+v, want %+v", e.Label(), got, want)
		}
	}
	bad := mustDocs(t, strings.Replace(out, "parentRefs:", "parentRef:", 1))
	sc := schemaFile(t, "gateway-grpcroute-v1.schema.yaml")
	if schemaValidate(sc, bad[0], "") == nil {
		t.Error("an unknown property passed the schema")
	}
	badType := strings.Replace(out, "type: Exact, service", "type: Prefix, service", 1)
	bd := mustDocs(t, badType)
	if badType == out || schemaValidate(sc, bd[0], "") == nil {
		t.Error("a method match type outside the enum passed the schema")
	}
}

// TestLinkerdRoutesOddNames: odd service names keep their names in the
// annotation, get valid object and parent names, and read back.
func TestLinkerdRoutesOddNames(t *testing.T) {
	p, eps := oddPolicy()
	out, _ := LinkerdRoutes(p, eps, MeshOptions{})
	if strings.ContainsRune(out, '\u202e') {
		t.Errorf("a raw bidi override:\n%s", out)
	}
	docs := gatewayValidate(t, out)
	if len(docs) != 2*len(oddNames()) {
		t.Errorf("%d routes for %d services", len(docs), len(oddNames()))
	}
	cfg, err := ReadConfig("r.yaml", "linkerd", []byte(out))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range eps {
		found := false
		for i := range cfg.Routes {
			if cfg.Routes[i].Matches(e) {
				found = cfg.Routes[i].Hop.Timeout == p.Hops[e.Hop].Timeout
				break
			}
		}
		if !found {
			t.Errorf("%s: not read back with its timeout", e.Label())
		}
	}
}
