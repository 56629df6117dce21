package policy

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func formsPolicy() (*Policy, []Endpoint) {
	p := &Policy{Default: Hop{Timeout: time.Second}, Hops: map[string]Hop{
		"a": {Timeout: 100 * time.Millisecond}, "b": {Timeout: 200 * time.Millisecond, Retries: 1}}}
	return p, []Endpoint{
		{Hop: "a", Caller: "web", Service: "cart", Method: "GET", Route: "/cart/{id}"},
		{Hop: "b", Caller: "web", Service: "orders", GRPCService: "shop.Orders", GRPCMethod: "Get"},
	}
}

func emitFor(t *testing.T, f string, p *Policy, eps []Endpoint) string {
	t.Helper()
	switch f {
	case "envoy":
		out, _ := Envoy(p, eps, EnvoyOptions{})
		return out
	case "istio":
		out, _ := Istio(p, eps, MeshOptions{Namespace: "shop"})
		return out
	case "linkerd":
		out, _ := Linkerd(p, eps, MeshOptions{Namespace: "shop"})
		return out
	}
	out, _ := LinkerdRoutes(p, eps, MeshOptions{Namespace: "shop"})
	return out
}

func yamlDocsOf(t *testing.T, s string) []any {
	t.Helper()
	var docs []any
	dec := yaml.NewDecoder(strings.NewReader(s))
	for {
		var v any
		if err := dec.Decode(&v); err != nil {
			break
		}
		if v != nil {
			docs = append(docs, v)
		}
	}
	return docs
}

// TestReadConfigJSONAndList: the configs written as JSON (an Envoy route
// configuration; a kubectl List of Istio or Linkerd objects) and as a
// kubectl get -o yaml List sniff as their format and read back to the
// routes the YAML does.
func TestReadConfigJSONAndList(t *testing.T) {
	p, eps := formsPolicy()
	for _, f := range []string{"envoy", "istio", "linkerd", "linkerd-route"} {
		format := strings.TrimSuffix(f, "-route")
		out := emitFor(t, f, p, eps)
		want, err := ReadConfig("c.yaml", format, []byte(out))
		if err != nil {
			t.Fatal(err)
		}
		docs := yamlDocsOf(t, out)
		var forms []string
		if f == "envoy" {
			j, _ := json.MarshalIndent(docs[0], "", "  ")
			forms = append(forms, string(j))
		} else {
			l := map[string]any{"apiVersion": "v1", "kind": "List", "items": docs}
			j, _ := json.MarshalIndent(l, "", "  ")
			y, _ := yaml.Marshal(l)
			forms = append(forms, string(j), string(y))
		}
		for _, form := range forms {
			if g := SniffConfig([]byte(form)); g != format {
				t.Errorf("%s: sniffed as %q:\n%s", f, g, form)
				continue
			}
			got, err := ReadConfig("c.json", format, []byte(form))
			if err != nil {
				t.Errorf("%s: %v\n%s", f, err, form)
				continue
			}
			if len(got.Routes) != len(want.Routes) {
				t.Errorf("%s: %d routes, want %d", f, len(got.Routes), len(want.Routes))
				continue
			}
			for i := range got.Routes {
				g, w := got.Routes[i], want.Routes[i]
				if g.Service != w.Service || g.Hop != w.Hop || g.Exact != w.Exact || g.Regex != w.Regex || g.GRPCService != w.GRPCService {
					t.Errorf("%s: route %d: %s %+v, want %s %+v", f, i, g.Label(), g.Hop, w.Label(), w.Hop)
				}
			}
		}
	}
	if SniffConfig([]byte(`{"budget": "1s", "hops": {"virtual": {"timeout": "1s"}}}`)) != "" {
		t.Error("a JSON policy file sniffed as a config")
	}
}

// TestReadConfigForeignDocument: an Envoy document in an Istio file, and
// an Istio one in a Linkerd file, are errors naming the document.
func TestReadConfigForeignDocument(t *testing.T) {
	p, eps := formsPolicy()
	in := emitFor(t, "istio", p, eps) + "---\n" + emitFor(t, "envoy", p, eps)
	_, err := ReadConfig("mix.yaml", "istio", []byte(in))
	if err == nil || !strings.Contains(err.Error(), `the document "web" is of format envoy, in a istio config`) {
		t.Errorf("got %v", err)
	}
	in = emitFor(t, "linkerd", p, eps) + "---\n" + emitFor(t, "istio", p, eps)
	_, err = ReadConfig("mix.yaml", "linkerd", []byte(in))
	if err == nil || !strings.Contains(err.Error(), `"VirtualService" "cart" is of format istio`) {
		t.Errorf("got %v", err)
	}
}

// TestLinkerdIsRetryableBool: isRetryable other than true or false is an
// error at its line, not silently no retries.
func TestLinkerdIsRetryableBool(t *testing.T) {
	p, eps := formsPolicy()
	out := emitFor(t, "linkerd", p, eps)
	bad := strings.Replace(out, "isRetryable: true", "isRetryable: 'yes'", 1)
	if bad == out {
		t.Fatalf("no retryable route:\n%s", out)
	}
	line := 1 + strings.Count(bad[:strings.Index(bad, "'yes'")], "\n")
	_, err := ReadConfig("sp.yaml", "linkerd", []byte(bad))
	var ps Problems
	if err == nil || !strings.Contains(err.Error(), `"yes": want true or false`) {
		t.Fatalf("got %v", err)
	}
	ps, _ = err.(Problems)
	if len(ps) != 1 || ps[0].Line != line {
		t.Errorf("got %#v, want line %d", ps, line)
	}
}
