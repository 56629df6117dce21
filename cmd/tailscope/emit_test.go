// Tests of recommend --emit on the real exports: every config names
// endpoints (caller, called service, method or route), never hop labels,
// carries the policy's numbers, and its consumer's own parser accepts it.

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tailscope/tailscope/policy"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
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
		t.Skipf("real export not present: %v", err)
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
