// Tests of recommend --emit on the real exports: every config names
// endpoints (caller, called service, method or route), never hop labels,
// carries the policy's numbers, and its consumer's own parser accepts it.

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/tailscope/tailscope/policy"
	"go.yaml.in/yaml/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
	networkingv1 "istio.io/api/networking/v1"
)

const nezhaColumns = "trace_id=TraceID,span_id=SpanID,parent_id=ParentID,service=PodName,name=OperationName,start=StartTimeUnixNano,end=EndTimeUnixNano"

// realExports are the real exports kept under testdata/real.
var realExports = map[string]string{
	"online-boutique": "../../testdata/real/nezha-online-boutique/checkout-12_02_trace.csv",
	"trainticket":     "../../testdata/real/nezha-trainticket/fault-12_06_trace.csv",
}

// emitOn runs recommend --emit on a real export, and the policy too.
func emitOn(t *testing.T, export, emit string, extra ...string) (out, stderr string) {
	t.Helper()
	path := realExports[export]
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("real export missing from testdata/real (every clone has it): %v", err)
	}
	var o, e bytes.Buffer
	args := append([]string{"recommend", "--map", nezhaColumns, "--emit", emit}, extra...)
	if code := run(append(args, path), strings.NewReader(""), &o, &e); code != 0 {
		t.Fatalf("%s %s: exit %d: %s", export, emit, code, e.String())
	}
	return o.String(), e.String()
}

// writeEmitted writes an emitted config to a temporary file.
func writeEmitted(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestEmitGRPCOnlineBoutique: on the real Online Boutique export, --emit
// grpc writes one service config per channel (caller → called service),
// each accepted by grpc-go; checkoutservice → cartservice's GetCart has
// exactly the policy's timeout (no retries: the deadline is the timeout),
// named by proto service and method.
func TestEmitGRPCOnlineBoutique(t *testing.T) {
	out, _ := emitOn(t, "online-boutique", "grpc")
	pol, _ := emitOn(t, "online-boutique", "policy")
	var chans map[string]struct {
		MethodConfig []struct {
			Name []struct {
				Service, Method string
			}
			Timeout     string
			RetryPolicy any
		}
	}
	if err := json.Unmarshal([]byte(out), &chans); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for ch := range chans {
		var raw map[string]json.RawMessage
		_ = json.Unmarshal([]byte(out), &raw)
		cc, err := grpc.NewClient("passthrough:///x", grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithDefaultServiceConfig(string(raw[ch])))
		if err != nil {
			t.Errorf("%s: grpc-go refuses it: %v", ch, err)
			continue
		}
		cc.Close()
		if strings.Contains(ch, "hipstershop") || !strings.Contains(ch, " → ") {
			t.Errorf("channel %q is not caller → service", ch)
		}
	}
	want := policyTimeout(t, pol, "checkoutservice hipstershop.CartService/GetCart")
	found := false
	for _, m := range chans["checkoutservice → cartservice"].MethodConfig {
		for _, n := range m.Name {
			if n.Service == "hipstershop.CartService" && n.Method == "GetCart" {
				found = true
				if configDur(t, m.Timeout) != want || m.RetryPolicy != nil {
					t.Errorf("GetCart: timeout %q (retry %v), want the policy's %q", m.Timeout, m.RetryPolicy, want)
				}
			}
		}
	}
	if !found {
		t.Errorf("no GetCart method config on checkoutservice → cartservice:\n%s", out)
	}
}

// policyTimeout is a hop's timeout in a policy file as recommend wrote it.
func policyTimeout(t *testing.T, pol, hop string) time.Duration {
	t.Helper()
	p, err := policy.Parse("policy.yaml", []byte(pol))
	if err != nil {
		t.Fatal(err)
	}
	h, ok := p.Hops[hop]
	if !ok || h.Timeout <= 0 {
		t.Fatalf("hop %q has no timeout in the policy:\n%s", hop, pol)
	}
	return h.Timeout
}

// configDur reads a duration as the configs write it ("0.05s").
func configDur(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("duration %q: %v", s, err)
	}
	return d
}

// envoyRouteConfigs reads every document of an Envoy output with
// go-control-plane (YAML to JSON, protojson, which refuses unknown fields,
// then ValidateAll) and returns the route configurations by name.
func envoyRouteConfigs(t *testing.T, out string) map[string]*routev3.RouteConfiguration {
	t.Helper()
	rcs := map[string]*routev3.RouteConfiguration{}
	dec := yaml.NewDecoder(strings.NewReader(out))
	for i := 0; ; i++ {
		var doc map[string]any
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			return rcs
		} else if err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		if doc == nil {
			continue
		}
		js, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := doc["virtual_hosts"]; !ok {
			cl := &clusterv3.Cluster{}
			if err := protojson.Unmarshal(js, cl); err != nil {
				t.Errorf("cluster document %d: %v", i, err)
			} else if err := cl.ValidateAll(); err != nil {
				t.Errorf("cluster document %d: %v", i, err)
			}
			continue
		}
		rc := &routev3.RouteConfiguration{}
		if err := protojson.Unmarshal(js, rc); err != nil {
			t.Errorf("document %d: %v\n%s", i, err, js)
			continue
		}
		if err := rc.ValidateAll(); err != nil {
			t.Errorf("document %d: %v", i, err)
		}
		rcs[rc.GetName()] = rc
	}
}

// TestEmitEnvoyRealExports: on both real exports, every document of
// --emit envoy passes go-control-plane's validation; route configurations
// are named after callers and virtual hosts and clusters after called
// services (never a hop label), no route is a catch-all outside its own
// service's virtual host; on Online Boutique checkoutservice →
// cartservice GetCart has exactly the policy's timeout.
func TestEmitEnvoyRealExports(t *testing.T) {
	for export := range realExports {
		out, _ := emitOn(t, export, "envoy")
		pol, _ := emitOn(t, export, "policy")
		p, err := policy.Parse("policy.yaml", []byte(pol))
		if err != nil {
			t.Fatal(err)
		}
		rcs := envoyRouteConfigs(t, out)
		if len(rcs) < 3 {
			t.Fatalf("%s: %d route configurations", export, len(rcs))
		}
		for name, rc := range rcs {
			if p.Listed(name) || strings.Contains(name, " ") {
				t.Errorf("%s: route configuration %q is a hop label", export, name)
			}
			for _, vh := range rc.GetVirtualHosts() {
				for _, r := range vh.GetRoutes() {
					cl := r.GetRoute().GetCluster()
					if cl != vh.GetName() || p.Listed(cl) {
						t.Errorf("%s: %s → %s: cluster %q", export, name, vh.GetName(), cl)
					}
					if r.GetMatch().GetPrefix() == "/" && len(vh.GetRoutes()) > 1 && r != vh.GetRoutes()[len(vh.GetRoutes())-1] {
						t.Errorf("%s: a whole-service route before others in %s", export, vh.GetName())
					}
				}
			}
		}
		if export != "online-boutique" {
			continue
		}
		want := policyTimeout(t, pol, "checkoutservice hipstershop.CartService/GetCart")
		found := false
		for _, vh := range rcs["checkoutservice"].GetVirtualHosts() {
			for _, r := range vh.GetRoutes() {
				if r.GetMatch().GetPath() == "/hipstershop.CartService/GetCart" {
					found = true
					if vh.GetName() != "cartservice" || r.GetRoute().GetTimeout().AsDuration() != want || r.GetRoute().GetRetryPolicy().GetNumRetries().GetValue() != 0 {
						t.Errorf("GetCart: %v, want timeout %v on cartservice", r, want)
					}
				}
			}
		}
		if !found {
			t.Errorf("no GetCart route in checkoutservice's configuration")
		}
	}
}

// TestEmitMeshRealExports: on both real exports, every Istio
// VirtualService's spec reads strictly into istio.io/api's type and every
// Linkerd ServiceProfile is named SERVICE.default.svc.cluster.local; none
// is named after a hop label; on Online Boutique checkoutservice →
// cartservice GetCart carries exactly the policy's timeout in both.
func TestEmitMeshRealExports(t *testing.T) {
	for export := range realExports {
		pol, _ := emitOn(t, export, "policy")
		p, err := policy.Parse("policy.yaml", []byte(pol))
		if err != nil {
			t.Fatal(err)
		}
		for _, emit := range []string{"istio", "linkerd"} {
			out, _ := emitOn(t, export, emit)
			dec := yaml.NewDecoder(strings.NewReader(out))
			found := false
			for n := 0; ; n++ {
				var doc map[string]any
				if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
					break
				} else if err != nil {
					t.Fatalf("%s %s: %v", export, emit, err)
				}
				if doc == nil {
					continue
				}
				name := doc["metadata"].(map[string]any)["name"].(string)
				if p.Listed(name) || strings.Contains(name, " ") {
					t.Errorf("%s %s: object named after a hop: %q", export, emit, name)
				}
				js, _ := json.Marshal(doc["spec"])
				if emit == "istio" {
					vs := &networkingv1.VirtualService{}
					if err := protojson.Unmarshal(js, vs); err != nil {
						t.Errorf("%s istio document %d: %v", export, n, err)
						continue
					}
					for _, h := range vs.GetHttp() {
						for _, m := range h.GetMatch() {
							if m.GetUri().GetExact() == "/hipstershop.CartService/GetCart" && m.GetSourceLabels()["app"] == "checkoutservice" {
								found = true
								if h.GetTimeout().AsDuration() != p.Hops["checkoutservice hipstershop.CartService/GetCart"].Timeout {
									t.Errorf("istio GetCart: timeout %v", h.GetTimeout().AsDuration())
								}
							}
						}
					}
					continue
				}
				if !strings.HasSuffix(name, ".default.svc.cluster.local") {
					t.Errorf("%s linkerd: profile %q", export, name)
				}
				if name != "cartservice.default.svc.cluster.local" {
					continue
				}
				var spec struct {
					Routes []struct {
						Name      string
						Condition struct{ Method, PathRegex string }
						Timeout   string
					}
				}
				_ = json.Unmarshal(js, &spec)
				for _, r := range spec.Routes {
					if r.Condition.PathRegex == `/hipstershop\.CartService/GetCart` {
						found = true
						// Linkerd applies a route to every caller: the
						// longest of the callers' timeouts.
						want := max(p.Hops["checkoutservice hipstershop.CartService/GetCart"].Timeout, p.Hops["frontend hipstershop.CartService/GetCart"].Timeout)
						if configDur(t, r.Timeout) != want || r.Condition.Method != "POST" {
							t.Errorf("linkerd GetCart: %+v, want timeout %v", r, want)
						}
					}
				}
			}
			if export == "online-boutique" && !found {
				t.Errorf("%s: no GetCart route of checkoutservice", emit)
			}
		}
	}
}

// checkConfigJSON runs check --policy FILE -f json on a real export and returns
// the one result's replay successes and its lint codes.
func checkConfigJSON(t *testing.T, export, policyFile string) (succeeded int, codes map[string]int) {
	t.Helper()
	var o, e bytes.Buffer
	code := run([]string{"check", "--map", nezhaColumns, "--policy", policyFile, "-f", "json", realExports[export]}, strings.NewReader(""), &o, &e)
	if code != 0 && code != 3 {
		t.Fatalf("check %s: exit %d: %s", policyFile, code, e.String())
	}
	var r struct {
		Results []struct {
			Lint   []struct{ Code, Severity, Message string }
			Replay struct{ Succeeded int }
		}
	}
	if err := json.Unmarshal(o.Bytes(), &r); err != nil || len(r.Results) != 1 {
		t.Fatalf("check %s: %v\n%s", policyFile, err, o.String())
	}
	codes = map[string]int{}
	for _, l := range r.Results[0].Lint {
		codes[l.Code]++
	}
	return r.Results[0].Replay.Succeeded, codes
}

// TestCheckReadsEmittedConfigs: check --policy reads back what --emit
// wrote (sniffed: Envoy, gRPC, Istio), maps its routes to the logged hops
// and replays them exactly as the policy file: the same successes on the
// real Online Boutique export, every route matching a hop and every hop
// routed.
func TestCheckReadsEmittedConfigs(t *testing.T) {
	pol, _ := emitOn(t, "online-boutique", "policy")
	want, _ := checkConfigJSON(t, "online-boutique", writeEmitted(t, "policy.yaml", pol))
	if want == 0 {
		t.Fatal("no success replayed under the policy")
	}
	for _, emit := range []string{"envoy", "grpc", "istio"} {
		out, _ := emitOn(t, "online-boutique", emit)
		got, codes := checkConfigJSON(t, "online-boutique", writeEmitted(t, "deployed."+emit, out))
		if got != want {
			t.Errorf("%s: %d successes replayed, the policy file %d", emit, got, want)
		}
		if codes["route-matches-no-hop"] > 0 || codes["hop-not-routed"] > 0 {
			t.Errorf("%s: findings %v", emit, codes)
		}
	}
}

// TestCheckConfigFindings: a route that matches no logged call is a
// finding of check on a hand-edited config; the call it no longer takes
// falls to the virtual host's default route, which bounds it (no
// hop-not-routed), as Envoy would route it.
func TestCheckConfigFindings(t *testing.T) {
	out, _ := emitOn(t, "online-boutique", "envoy")
	// GetCart's route now names a method the logs never call, so that
	// route matches nothing and checkoutservice's GetCart takes the
	// default route.
	edited := strings.Replace(out, `path: "/hipstershop.CartService/GetCart"`, `path: "/hipstershop.CartService/GetCartz"`, 1)
	if edited == out {
		t.Fatal("fixture: no GetCart route to edit")
	}
	_, codes := checkConfigJSON(t, "online-boutique", writeEmitted(t, "edited.yaml", edited))
	if codes["route-matches-no-hop"] != 1 || codes["hop-not-routed"] != 0 {
		t.Errorf("findings %v, want one route matching no hop, and the call taken by the default route", codes)
	}
}

// TestCheckConfigBaseline: an emitted config as --baseline is read back
// like a --policy (the same successes as the policy file under
// --no-worse; --optimistic, as the export's spans say no outcome), and as --policy-in-force it is refused: its routes map to
// hops only through the analysis it would feed.
func TestCheckConfigBaseline(t *testing.T) {
	pol, _ := emitOn(t, "online-boutique", "policy")
	out, _ := emitOn(t, "online-boutique", "envoy")
	pf, cf := writeEmitted(t, "policy.yaml", pol), writeEmitted(t, "deployed.yaml", out)
	var o, e bytes.Buffer
	if code := run([]string{"check", "--map", nezhaColumns, "--policy", pf, "--baseline", cf, "--no-worse", "--optimistic", "-f", "json", realExports["online-boutique"]}, strings.NewReader(""), &o, &e); code != 0 {
		t.Errorf("check against the emitted config as baseline: exit %d: %s\n%s", code, e.String(), o.String())
	}
	var r struct {
		Baseline struct{ Replay struct{ Succeeded int } }
		Results  []struct{ Replay struct{ Succeeded int } }
	}
	if err := json.Unmarshal(o.Bytes(), &r); err != nil || len(r.Results) != 1 {
		t.Fatalf("%v\n%s", err, o.String())
	}
	if r.Baseline.Replay.Succeeded != r.Results[0].Replay.Succeeded || r.Baseline.Replay.Succeeded == 0 {
		t.Errorf("baseline %d successes, policy %d", r.Baseline.Replay.Succeeded, r.Results[0].Replay.Succeeded)
	}
	o.Reset()
	e.Reset()
	if code := run([]string{"analyze", "--map", nezhaColumns, "--policy-in-force", cf, realExports["online-boutique"]}, strings.NewReader(""), &o, &e); code != 2 || !strings.Contains(e.String(), "is a deployed envoy config") {
		t.Errorf("--policy-in-force with a config: exit %d: %s", code, e.String())
	}
}
