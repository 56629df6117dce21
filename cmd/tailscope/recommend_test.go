// Tests of recommend: only the caller's side of a call gets a timeout, in every --emit form.

package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recommend sets timeouts on the caller's side of each call only: a SERVER
// hop under a CLIENT call appears neither in the policy nor in --emit.
func TestRecommendCallerSideOnly(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 50; i++ {
		t0 := int64(1e18) + int64(i)*1e9
		fmt.Fprintf(&b, `{"trace_id":"t%d","span_id":"g%d","service":"gw","name":"GET /","kind":"server","start":%d,"duration_ms":300}`+"\n", i, i, t0)
		fmt.Fprintf(&b, `{"trace_id":"t%d","span_id":"c%d","parent_id":"g%d","service":"gw","name":"call api","kind":"client","start":%d,"duration_ms":%d}`+"\n", i, i, i, t0+1e6, 200+i)
		fmt.Fprintf(&b, `{"trace_id":"t%d","span_id":"s%d","parent_id":"c%d","service":"api","name":"handle","kind":"server","start":%d,"duration_ms":%d}`+"\n", i, i, i, t0+2e6, 190+i)
	}
	path := filepath.Join(t.TempDir(), "spans.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, emit := range []string{"policy", "envoy", "grpc", "istio", "linkerd"} {
		var out, errb bytes.Buffer
		if code := run([]string{"recommend", "-q", "--emit", emit, path}, strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("%s: exit %d: %s", emit, code, errb.String())
		}
		s := out.String()
		// The policy names the hop; the configs name its endpoint.
		want := map[string]string{"policy": "gw call api (client)", "envoy": "cluster: api", "grpc": `"gw → api"`, "istio": "sourceLabels: {app: gw}", "linkerd": "name: api.default.svc.cluster.local"}[emit]
		if !strings.Contains(s, want) {
			t.Errorf("%s: the client hop's %s is missing:\n%s", emit, want, s)
		}
		if strings.Contains(s, "api handle") {
			t.Errorf("%s: the server hop got its own timeout:\n%s", emit, s)
		}
	}
}
