// Tests of recommend: only the caller's side of a call gets a timeout, in every --emit form.

package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/recommend"
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

// recommend --help states the rules with the factors the code uses: the
// budget from the requests' own tail within MaxBudgetExtrapolation × the
// slowest successful request (not from every logged request × (1 +
// margin)), the cap of an extrapolated or kept timeout at
// MaxExtrapolation × the slowest success, and keep's threshold.
func TestRecommendHelpSaysTheRules(t *testing.T) {
	help := collapse(recommendUsage)
	for _, want := range []string{
		fmt.Sprintf("at most %.0f × it", recommend.MaxBudgetExtrapolation),
		fmt.Sprintf("at most %.0f × its slowest success", recommend.MaxExtrapolation),
		fmt.Sprintf("keep with fewer than %d successful attempts", analyze.MinSamplesRecommend),
		fmt.Sprintf("raised to %.0f × the slowest success", recommend.MaxExtrapolation),
		"the requests' drift headroom",
		fmt.Sprintf("never below %s", units.Duration(recommend.MinTimeout)),
	} {
		if !strings.Contains(help, want) {
			t.Errorf("recommend --help does not say %q:\n%s", want, recommendUsage)
		}
	}
	if strings.Contains(help, "covering every logged request") {
		t.Errorf("recommend --help still says the budget covers every logged request:\n%s", recommendUsage)
	}
}
