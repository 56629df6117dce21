package policy

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/option"
	"go.yaml.in/yaml/v3"
)

// The documented field names of what gRPC reads, by the path of the
// object that holds them ("" the top): the service config (gRFC A2, A6):
// MethodConfig, its name, retryPolicy, hedgingPolicy and retryThrottling.
// (Envoy's output is checked by go-control-plane's own types, which
// refuse unknown fields: envoy_consumer_test.go.)
var grpcFields = map[string][]string{
	"":                             {"*"}, // an object keyed by channel
	"*":                            {"tailscope", "methodConfig", "retryThrottling", "loadBalancingConfig"},
	"tailscope":                    {"caller", "service", "client"}, // tailscope's own, which gRPC ignores
	"methodConfig[]":               {"name", "timeout", "retryPolicy", "hedgingPolicy", "waitForReady"},
	"methodConfig[].name[]":        {"service", "method"},
	"methodConfig[].retryPolicy":   {"maxAttempts", "initialBackoff", "maxBackoff", "backoffMultiplier", "retryableStatusCodes"},
	"methodConfig[].hedgingPolicy": {"maxAttempts", "hedgingDelay", "nonFatalStatusCodes"},
	"retryThrottling":              {"maxTokens", "tokenRatio"},
}

// schemaCheck walks a decoded document and reports every key that is not
// a documented field of the object holding it, and every object whose
// path the schema does not know.
func schemaCheck(t *testing.T, what string, fields map[string][]string, v any, path string) {
	t.Helper()
	switch x := v.(type) {
	case map[string]any:
		known, ok := fields[path]
		if !ok {
			t.Errorf("%s: an object at %q, which the schema does not have", what, path)
			return
		}
		if len(known) == 1 && known[0] == "*" {
			// An object keyed by names (gRPC's channels): each value
			// is the object the schema lists at "*".
			for _, c := range x {
				schemaCheck(t, what, fields, c, "*")
			}
			return
		}
		for k, c := range x {
			if !slices.Contains(known, k) {
				t.Errorf("%s: %q is not a documented field of %q (want one of %v)", what, k, path, known)
				continue
			}
			schemaCheck(t, what, fields, c, strings.TrimPrefix(strings.TrimPrefix(path+"."+k, "*"), "."))
		}
	case []any:
		for _, c := range x {
			schemaCheck(t, what, fields, c, path+"[]")
		}
	}
}

func emitPolicy() *Policy {
	return &Policy{Budget: 5 * time.Second, Default: Hop{Timeout: time.Second},
		Hops: map[string]Hop{
			"hedged":  {Timeout: 900 * time.Millisecond, Retries: 2, Backoff: Backoff{Base: 15 * time.Millisecond, Max: 60 * time.Millisecond, Jitter: JitterFull}, Hedge: Hedge{Delay: 40 * time.Millisecond, Max: 1}, Idempotent: Idempotent},
			"hedge0":  {Timeout: 300 * time.Millisecond, Hedge: Hedge{Delay: 50 * time.Millisecond, Max: 2}, Idempotent: Idempotent},
			"retried": {Timeout: 200 * time.Millisecond, Retries: 1, Backoff: Backoff{Base: 10 * time.Millisecond, Max: 10 * time.Millisecond}, Idempotent: Idempotent},
			"plain":   {Timeout: 2 * time.Second},
		},
		RetryBudgets: map[string]RetryBudget{
			"hedged":  {Percent: 20, MinConcurrency: 3, MaxTokens: 40, TokenRatio: 0.1},
			"retried": {Percent: 5, MinConcurrency: 1, MaxTokens: 10, TokenRatio: 0.05},
		}}
}

// envoyDocs decodes the Envoy output's YAML documents: route
// configurations by name, clusters by name.
func envoyDocs(t *testing.T, out string) (routes, clusters map[string]map[string]any) {
	t.Helper()
	routes, clusters = map[string]map[string]any{}, map[string]map[string]any{}
	dec := yaml.NewDecoder(strings.NewReader(out))
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if err == io.EOF {
			return routes, clusters
		}
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if doc == nil {
			continue
		}
		name, _ := doc["name"].(string)
		if _, ok := doc["virtual_hosts"]; ok {
			routes[name] = doc
		} else {
			clusters[name] = doc
		}
	}
}

// envoyRoutes are the route actions of the output by route name (the hop).
func envoyRoutes(t *testing.T, out string) map[string]map[string]any {
	t.Helper()
	rcs, _ := envoyDocs(t, out)
	got := map[string]map[string]any{}
	for _, rc := range rcs {
		for _, vh := range rc["virtual_hosts"].([]any) {
			for _, r := range vh.(map[string]any)["routes"].([]any) {
				r := r.(map[string]any)
				got[r["name"].(string)] = r["route"].(map[string]any)
			}
		}
	}
	return got
}

// TestEnvoyEmit: the Envoy output is a route configuration per caller,
// a virtual host per called service, routes matching the gRPC method
// path, to the service's cluster; a hedged hop has a hedge_policy
// hedging on the per-try timeout, which is its hedge delay, with a
// comment saying so.
func TestEnvoyEmit(t *testing.T) {
	p := emitPolicy()
	out, _ := Envoy(p, emitEndpoints(p), EnvoyOptions{})
	rcs, _ := envoyDocs(t, out)
	if len(rcs) != 1 || rcs["web"] == nil {
		t.Fatalf("route configurations %v, want one named web:\n%s", rcs, out)
	}
	vh := rcs["web"]["virtual_hosts"].([]any)[0].(map[string]any)
	if vh["name"] != "backend" || fmt.Sprint(vh["domains"]) != "[backend backend:*]" {
		t.Errorf("virtual host %v, want backend with its domains", vh)
	}
	routeList := vh["routes"].([]any)
	if last := routeList[len(routeList)-1].(map[string]any); last["name"] != "default" || last["match"].(map[string]any)["prefix"] != "/" ||
		last["route"].(map[string]any)["timeout"] != "1s" || fmt.Sprint(last["route"].(map[string]any)["retry_policy"]) != "map[num_retries:0]" {
		t.Errorf("the last route %v, want the default: prefix /, the policy's 1s default, no retries", last)
	}
	for _, r := range routeList[:len(routeList)-1] {
		r := r.(map[string]any)
		m := r["match"].(map[string]any)
		if m["path"] != "/pkg.Backend/"+r["name"].(string) || r["route"].(map[string]any)["cluster"] != "backend" {
			t.Errorf("route %v: want the method path and the service's cluster", r)
		}
	}
	routes := envoyRoutes(t, out)
	for _, n := range []string{"hedged", "hedge0"} {
		rt := routes[n]
		hp, ok := rt["hedge_policy"].(map[string]any)
		if !ok || hp["hedge_on_per_try_timeout"] != true {
			t.Errorf("%s: hedge_policy %v, want hedge_on_per_try_timeout: true", n, rt["hedge_policy"])
		}
		rp := rt["retry_policy"].(map[string]any)
		h := p.Hops[n]
		// num_retries is the policy's retries (its hedges without
		// retries): a slow call is never sent more often than the policy
		// sends it.
		want := h.Retries
		if want == 0 {
			want = h.Hedge.Max
		}
		if rp["per_try_timeout"] != units.DecimalSeconds(h.Hedge.Delay) || rp["num_retries"] != want {
			t.Errorf("%s: retry_policy %v, want per_try_timeout %s (the delay) and num_retries %d", n, rp, units.DecimalSeconds(h.Hedge.Delay), want)
		}
	}
	for _, n := range []string{"retried", "plain"} {
		if _, ok := routes[n]["hedge_policy"]; ok {
			t.Errorf("%s: a hedge_policy without a hedge", n)
		}
	}
	if rp := routes["retried"]["retry_policy"].(map[string]any); rp["per_try_timeout"] != "0.2s" {
		t.Errorf("retried: per_try_timeout %v, want the hop's timeout", rp["per_try_timeout"])
	}
	if !strings.Contains(out, "Envoy hedges only on a per-try timeout") || !strings.Contains(out, "no attempt is cut at tailscope's 0.9s per-attempt timeout") {
		t.Errorf("the output does not say what Envoy's hedging does not cover:\n%s", out)
	}
}

// TestEnvoyRouteForms: an HTTP route with parameters is matched by
// safe_regex, one without exactly, a whole service by the prefix "/"
// after the others of its virtual host; the method by the :method header;
// an unmapped endpoint is not routed and its reason is in a comment;
// --cluster-name's template names the cluster.
func TestEnvoyRouteForms(t *testing.T) {
	p := &Policy{Default: Hop{Timeout: time.Second}, Hops: map[string]Hop{"a": {Timeout: time.Second}, "b": {Timeout: 2 * time.Second}, "c": {Timeout: 3 * time.Second}, "d": {}}}
	eps := []Endpoint{
		{Hop: "c", Caller: "gw", Service: "orders"},
		{Hop: "a", Caller: "gw", Service: "orders", Method: "GET", Route: "/order/{id}"},
		{Hop: "b", Caller: "gw", Service: "orders", Method: "POST", Route: "/order"},
		{Hop: "d", Caller: "gw", Unmapped: "no called service\nevil: true"},
	}
	out, notes := Envoy(p, eps, EnvoyOptions{ClusterName: "outbound|80||{service}.{namespace}.svc.cluster.local", Namespace: "shop"})
	rcs, _ := envoyDocs(t, out)
	routes := rcs["gw"]["virtual_hosts"].([]any)[0].(map[string]any)["routes"].([]any)
	var order []string
	for _, r := range routes {
		r := r.(map[string]any)
		order = append(order, r["name"].(string))
		m := r["match"].(map[string]any)
		switch r["name"] {
		case "a":
			if m["safe_regex"].(map[string]any)["regex"] != "/order/[^/]+" || !strings.Contains(fmt.Sprint(m["headers"]), "exact:GET") {
				t.Errorf("a: match %v", m)
			}
		case "b":
			if m["path"] != "/order" {
				t.Errorf("b: match %v", m)
			}
		case "c":
			if m["prefix"] != "/" {
				t.Errorf("c: match %v", m)
			}
		}
		if cl := r["route"].(map[string]any)["cluster"]; cl != "outbound|80||orders.shop.svc.cluster.local" {
			t.Errorf("cluster %v", cl)
		}
	}
	if strings.Join(order, ",") != "b,a,c" {
		t.Errorf("route order %v, want exact, pattern, whole service", order)
	}
	if len(notes) != 1 || !strings.Contains(out, `# d: not routed: no called service\nevil: true`) {
		t.Errorf("the unmapped endpoint's note: %q\n%s", notes, out)
	}
}

// TestGRPCEmit: the service config is JSON with only gRPC's documented
// field names (and the "tailscope" object naming the channel); for
// grpc-go (the default) a hedged hop keeps its retryPolicy and loses the
// hedge, which grpc-go would ignore with the retries, and the notes say
// so; for grpc-js a hedged hop gets a hedgingPolicy of 1 + the hedge's max
// attempts (never more: the policy allows that many hedges), its retries
// as nonFatalStatusCodes; durations have nine fraction digits.
func TestGRPCEmit(t *testing.T) {
	p := emitPolicy()
	out, notes := GRPC(p, emitEndpoints(p), GRPCOptions{})
	var doc any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	schemaCheck(t, "grpc", grpcFields, doc, "")
	methods := grpcMethods(t, out, "web → backend")
	for n, attempts := range map[string]float64{"hedged": 3, "retried": 2} {
		m := methods[n]
		rp, _ := m["retryPolicy"].(map[string]any)
		if _, ok := m["hedgingPolicy"]; ok || rp == nil || rp["maxAttempts"] != attempts {
			t.Errorf("%s: %v, want a retryPolicy of %v attempts and no hedgingPolicy", n, m, attempts)
		}
	}
	if m := methods["hedge0"]; m["retryPolicy"] != nil || m["hedgingPolicy"] != nil || m["timeout"] != "0.300000000s" {
		t.Errorf("hedge0: %v, want its timeout alone (no retries, the hedge left out)", m)
	}
	if m := methods["hedged"]; m["timeout"] != GRPCDuration(callBound(p, p.Hops["hedged"])) || !strings.HasSuffix(m["timeout"].(string), "0000s") {
		t.Errorf("hedged: timeout %v, want the call's bound %s in nine digits", m["timeout"], GRPCDuration(callBound(p, p.Hops["hedged"])))
	}
	joined := strings.Join(notes, "\n")
	for _, want := range []string{"hedged: its hedge after 0.04s is left out: gRPC-go does not implement hedgingPolicy", "its 2 retries are kept in a retryPolicy",
		"hedge0: its hedge after 0.05s is left out", "it has no retries"} {
		if !strings.Contains(joined, want) {
			t.Errorf("notes lack %q:\n%s", want, joined)
		}
	}
	if strings.Contains(out, "hedging") {
		t.Errorf("a hedgingPolicy for grpc-go:\n%s", out)
	}

	out, notes = GRPC(p, emitEndpoints(p), GRPCOptions{Client: GRPCClientJS, Names: func(o option.Option) string { return "<" + o.String() + ">" }})
	var jsDoc any
	if err := json.Unmarshal([]byte(out), &jsDoc); err != nil {
		t.Fatal(err)
	}
	schemaCheck(t, "grpc js", grpcFields, jsDoc, "")
	methods = grpcMethods(t, out, "web → backend")
	want := map[string][3]any{ // maxAttempts, hedgingDelay, nonFatalStatusCodes given
		"hedged": {float64(2), "0.040000000s", true},
		"hedge0": {float64(3), "0.050000000s", false},
	}
	for n, w := range want {
		m := methods[n]
		if _, ok := m["retryPolicy"]; ok {
			t.Errorf("%s: both a retryPolicy and a hedgingPolicy", n)
		}
		hp, _ := m["hedgingPolicy"].(map[string]any)
		_, codes := hp["nonFatalStatusCodes"]
		if hp == nil || hp["maxAttempts"] != w[0] || hp["hedgingDelay"] != w[1] || codes != w[2] {
			t.Errorf("%s: hedgingPolicy %v, want maxAttempts %v, hedgingDelay %v, nonFatalStatusCodes %v", n, hp, w[0], w[1], w[2])
		}
	}
	joined = strings.Join(notes, "\n")
	if !strings.Contains(joined, "hedged: a method has a retryPolicy or a hedgingPolicy, not both: its 2 retries share the 1 hedged attempts") ||
		!strings.Contains(joined, "these configs are for <GRPCClient> js: a grpc-go or C-core client ignores hedgingPolicy") {
		t.Errorf("notes do not say what the hedgingPolicy does to the retries and who ignores it:\n%s", joined)
	}
	// Without hedges, no word of them.
	q := emitPolicy()
	delete(q.Hops, "hedged")
	delete(q.Hops, "hedge0")
	out, notes = GRPC(q, emitEndpoints(q), GRPCOptions{Client: GRPCClientJava})
	if strings.Contains(out, "hedging") || strings.Contains(strings.Join(notes, "\n"), "hedg") {
		t.Errorf("hedging without a hedge:\n%s\n%q", out, notes)
	}
	if e, _ := Envoy(q, emitEndpoints(q), EnvoyOptions{}); strings.Contains(e, "hedge_policy") || strings.Contains(e, "hedge after") {
		t.Errorf("envoy: hedge without a hedge:\n%s", e)
	}
}

// TestGRPCDefault: each channel ends with a methodConfig named [{}]
// carrying the policy's default (the deadline of a method the logs did
// not show), without retries unless the default says it is idempotent;
// a channel whose whole service is a hop has that hop's as its default.
func TestGRPCDefault(t *testing.T) {
	p := emitPolicy()
	p.Default = Hop{Timeout: 960 * time.Millisecond, Retries: 1}
	eps := append(emitEndpoints(p), Endpoint{Hop: "plain", Caller: "web", Service: "rank"})
	chans, notes := GRPCChannels(p, eps, GRPCOptions{})
	if len(chans) != 2 || chans[0].Name() != "web → backend" || chans[1].Name() != "web → rank" {
		t.Fatalf("channels %v", chans)
	}
	var backend grpcConfig
	if err := json.Unmarshal([]byte(chans[0].Config), &backend); err != nil {
		t.Fatal(err)
	}
	last := backend.MethodConfig[len(backend.MethodConfig)-1]
	if len(last.Name) != 1 || last.Name[0] != (grpcName{}) || last.Timeout != "0.960000000s" || last.RetryPolicy != nil {
		t.Errorf("the default method config %+v, want [{}] with the 0.96s timeout and no retries", last)
	}
	if backend.Tailscope == nil || backend.Tailscope.Caller != "web" || backend.Tailscope.Service != "backend" || backend.Tailscope.Client != "go" {
		t.Errorf("tailscope %+v", backend.Tailscope)
	}
	if !strings.Contains(strings.Join(notes, "\n"), "the default: not idempotent (methods not in the logs are taken as not idempotent): its 1 retry is left out") {
		t.Errorf("notes %q", notes)
	}
	var rank grpcConfig
	if err := json.Unmarshal([]byte(chans[1].Config), &rank); err != nil {
		t.Fatal(err)
	}
	if len(rank.MethodConfig) != 1 || rank.MethodConfig[0].Timeout != "2.000000000s" {
		t.Errorf("rank: %+v, want the whole-service hop alone as the default", rank)
	}
	p.Default.Idempotent = Idempotent
	chans, _ = GRPCChannels(p, eps, GRPCOptions{})
	backend = grpcConfig{}
	if err := json.Unmarshal([]byte(chans[0].Config), &backend); err != nil {
		t.Fatal(err)
	}
	if last := backend.MethodConfig[len(backend.MethodConfig)-1]; last.RetryPolicy == nil || last.RetryPolicy.MaxAttempts != 2 {
		t.Errorf("an idempotent default: %+v", last)
	}
	if f := chans[0].File(); f != "web/backend.json" {
		t.Errorf("file %q", f)
	}
	if f := (GRPCChannel{Caller: AnyCaller, Service: "a/../b"}).File(); !strings.HasPrefix(f, "_any/a_.._b-") || strings.Count(f, "/") != 1 {
		t.Errorf("file %q", f)
	}
	for _, sel := range []string{"web→backend", "web -> backend", "web → backend"} {
		if !SameChannel(sel, chans[0]) || SameChannel(sel, chans[1]) {
			t.Errorf("%q does not select web → backend alone", sel)
		}
	}
}

// TestGRPCNotIdempotent: a method the rule takes as not idempotent
// (Charge) gets neither retries nor hedges, and its deadline is its
// timeout; the policy's idempotent: true gives them back.
func TestGRPCNotIdempotent(t *testing.T) {
	h := Hop{Timeout: 250 * time.Millisecond, Retries: 2, Backoff: Backoff{Base: 10 * time.Millisecond, Max: 20 * time.Millisecond}, Hedge: Hedge{Delay: 50 * time.Millisecond, Max: 1}}
	p := &Policy{Hops: map[string]Hop{"charge": h}}
	eps := []Endpoint{{Hop: "charge", Caller: "checkout", Service: "payment", GRPCService: "shop.Payment", GRPCMethod: "Charge"}}
	for _, client := range []string{GRPCClientGo, GRPCClientJS} {
		out, notes := GRPC(p, eps, GRPCOptions{Client: client})
		m := grpcMethods(t, out, "checkout → payment")["Charge"]
		if m["retryPolicy"] != nil || m["hedgingPolicy"] != nil || m["timeout"] != "0.250000000s" {
			t.Errorf("%s: Charge %v, want the 0.25s timeout alone", client, m)
		}
		if j := strings.Join(notes, "\n"); !strings.Contains(j, "charge: not idempotent (gRPC method Charge changes state (Charge)): its hedge after 0.05s is left out") ||
			!strings.Contains(j, "its 2 retries are left out") {
			t.Errorf("%s: notes %s", client, j)
		}
	}
	h.Idempotent = Idempotent
	p.Hops["charge"] = h
	out, _ := GRPC(p, eps, GRPCOptions{})
	if m := grpcMethods(t, out, "checkout → payment")["Charge"]; m["retryPolicy"] == nil {
		t.Errorf("idempotent: true: %v", m)
	}
}

// The caps: more attempts than gRPC allows are capped, with a note.
func TestGRPCHedgeCap(t *testing.T) {
	p := &Policy{Default: Hop{}, Hops: map[string]Hop{"x": {Timeout: time.Second, Retries: 7, Idempotent: Idempotent, Hedge: Hedge{Delay: 10 * time.Millisecond, Max: 4}}}}
	for _, client := range []string{GRPCClientGo, GRPCClientJava} {
		out, notes := GRPC(p, emitEndpoints(p), GRPCOptions{Client: client})
		if !strings.Contains(out, fmt.Sprintf(`"maxAttempts": %d`, GRPCMaxAttempts)) || !strings.Contains(strings.Join(notes, "\n"), "exceed gRPC's cap") && client == GRPCClientGo {
			t.Errorf("%s: no cap:\n%s\n%q", client, out, notes)
		}
	}
}

// TestEmitRetryBudgets: budgets go to each hop's Envoy cluster
// retry_budget and to gRPC's retryThrottling (one per channel: the most
// conservative, with a note of each hop's own).
func TestEmitRetryBudgets(t *testing.T) {
	p := emitPolicy()
	eps := emitEndpoints(p)
	for i := range eps {
		eps[i].Service = eps[i].Hop // a service each, so a cluster each
	}
	out, _ := Envoy(p, eps, EnvoyOptions{})
	_, clusters := envoyDocs(t, out)
	got := map[string]string{}
	for _, c := range clusters {
		th := c["circuit_breakers"].(map[string]any)["thresholds"].([]any)[0].(map[string]any)
		rb := th["retry_budget"].(map[string]any)
		got[c["name"].(string)] = fmt.Sprint(rb["budget_percent"].(map[string]any)["value"], "/", rb["min_retry_concurrency"])
	}
	if len(got) != 2 || got["hedged"] != "20/3" || got["retried"] != "5/1" {
		t.Errorf("envoy retry budgets %v", got)
	}
	out, notes := GRPC(p, emitEndpoints(p), GRPCOptions{})
	var gs map[string]struct {
		RetryThrottling *struct {
			MaxTokens  int     `json:"maxTokens"`
			TokenRatio float64 `json:"tokenRatio"`
		} `json:"retryThrottling"`
	}
	if err := json.Unmarshal([]byte(out), &gs); err != nil {
		t.Fatal(err)
	}
	g := gs["web → backend"]
	if g.RetryThrottling == nil || g.RetryThrottling.MaxTokens != 10 || g.RetryThrottling.TokenRatio != 0.05 {
		t.Errorf("retryThrottling %+v, want the most conservative {10, 0.05}", g.RetryThrottling)
	}
	if !strings.Contains(strings.Join(notes, "\n"), "hedged {maxTokens: 40, tokenRatio: 0.1}") {
		t.Errorf("notes lack each hop's budget: %q", notes)
	}
	p.RetryBudgets = nil
	if out, _ := GRPC(p, emitEndpoints(p), GRPCOptions{}); strings.Contains(out, "retryThrottling") {
		t.Errorf("retryThrottling without a budget")
	}
	if out, _ := Envoy(p, eps, EnvoyOptions{}); strings.Contains(out, "retry_budget") {
		t.Errorf("retry_budget without a budget")
	}
}

// A hop whose tail concentrates on one instance gets Envoy
// outlier_detection on its cluster (with Envoy's field names, gateway
// failures enforced, and room to eject one of its instances), next to its
// retry budget when it has one; a key or value with a line break stays in
// its comment.
func TestEnvoyOutlierDetection(t *testing.T) {
	p := emitPolicy()
	p.Ejections = map[string]Ejection{
		"retried": {Key: "k8s.pod.name", Value: "cart-3\nevil: true", Of: "tail", Lift: 3.9, Share: 0.78, Instances: 5},
		"plain":   {Key: "host", Value: "h1", Of: "failures", Lift: 12, Share: 0.9, Instances: 40},
	}
	p.Hops["plain"] = Hop{Timeout: time.Second}
	eps := emitEndpoints(p)
	for i := range eps {
		eps[i].Service = eps[i].Hop
	}
	out, _ := Envoy(p, eps, EnvoyOptions{})
	_, clusters := envoyDocs(t, out)
	if strings.Contains(out, "\nevil") {
		t.Errorf("a value's line break escaped its comment:\n%s", out)
	}
	got := map[string]map[string]any{}
	for _, c := range clusters {
		if c["evil"] != nil {
			t.Errorf("a value's line break escaped its comment:\n%s", out)
		}
		if od, ok := c["outlier_detection"].(map[string]any); ok {
			got[c["name"].(string)] = od
		}
		if c["name"] == "retried" && c["circuit_breakers"] == nil {
			t.Errorf("the retry budget was lost next to outlier_detection")
		}
	}
	if len(got) != 2 {
		t.Fatalf("outlier_detection on %v:\n%s", got, out)
	}
	for name, want := range map[string]string{"retried": "20", "plain": "10"} {
		od := got[name]
		for _, f := range []string{"consecutive_5xx", "consecutive_gateway_failure", "enforcing_consecutive_gateway_failure", "interval", "base_ejection_time"} {
			if od[f] == nil {
				t.Errorf("%s: no %s", name, f)
			}
		}
		if fmt.Sprint(od["max_ejection_percent"]) != want || fmt.Sprint(od["enforcing_consecutive_gateway_failure"]) != "100" {
			t.Errorf("%s: %v", name, od)
		}
	}
	if !strings.Contains(out, "holds 78% of the hop's slow attempts (lift 3.9×)") {
		t.Errorf("no reason in the comment:\n%s", out)
	}
	p.Ejections = nil
	if out, _ := Envoy(p, eps, EnvoyOptions{}); strings.Contains(out, "outlier_detection") {
		t.Error("outlier_detection without an ejection")
	}
}

// emitEndpoints puts every hop of p on one gRPC channel, web → backend,
// as method pkg.Backend/<hop>.
func emitEndpoints(p *Policy) []Endpoint {
	var eps []Endpoint
	for _, n := range p.HopNames() {
		eps = append(eps, Endpoint{Hop: n, Caller: "web", Service: "backend", GRPCService: "pkg.Backend", GRPCMethod: n})
	}
	return eps
}

// grpcMethods decodes an emitted gRPC document and returns the method
// configs of one channel by method name.
func grpcMethods(t *testing.T, out, channel string) map[string]map[string]any {
	t.Helper()
	var doc map[string]struct {
		MethodConfig []map[string]any `json:"methodConfig"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	ms := map[string]map[string]any{}
	for _, m := range doc[channel].MethodConfig {
		for _, n := range m["name"].([]any) {
			ms[fmt.Sprint(n.(map[string]any)["method"])] = m
		}
	}
	return ms
}
