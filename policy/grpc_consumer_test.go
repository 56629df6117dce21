package policy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// grpcAccepts gives cfg to grpc-go as a channel's default service config:
// grpc.NewClient parses it with the library's own parser and refuses a
// config it cannot use.
func grpcAccepts(cfg string) error {
	cc, err := grpc.NewClient("passthrough:///unused", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(cfg))
	if err != nil {
		return err
	}
	return cc.Close()
}

// GRPCChannelsAccepted checks every channel's service config of an
// emitted gRPC document with grpc-go's parser; it returns the channels.
func grpcChannelsAccepted(t *testing.T, out string) map[string]json.RawMessage {
	t.Helper()
	var chans map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &chans); err != nil {
		t.Fatalf("not a JSON object of channels: %v\n%s", err, out)
	}
	for ch, cfg := range chans {
		if err := grpcAccepts(string(cfg)); err != nil {
			t.Errorf("channel %q: grpc-go refuses its service config: %v\n%s", ch, err, cfg)
		}
	}
	return chans
}

// TestGRPCAcceptedByGRPCGo: every channel's config of a policy with
// timeouts, retries with backoff, hedges and retry budgets, and a whole
// service's default method config, is accepted by grpc-go; and grpc-go
// does refuse a broken one (the check can fail).
func TestGRPCAcceptedByGRPCGo(t *testing.T) {
	p := emitPolicy()
	eps := emitEndpoints(p)
	eps = append(eps, Endpoint{Hop: "plain", Caller: "web", Service: "rank"}) // a whole service
	out, _ := GRPC(p, eps, GRPCOptions{})
	chans := grpcChannelsAccepted(t, out)
	if len(chans) != 2 {
		t.Errorf("channels %v, want web → backend and web → rank", chans)
	}
	var rank grpcConfig
	if err := json.Unmarshal(chans["web → rank"], &rank); err != nil || len(rank.MethodConfig) != 1 || len(rank.MethodConfig[0].Name) != 1 || rank.MethodConfig[0].Name[0] != (grpcName{}) {
		t.Errorf("a whole service is not the channel's default method config: %s", chans["web → rank"])
	}
	for _, bad := range []string{
		`{"methodConfig":[{"name":[{"service":"a.B","method":"C"}],"timeout":"soon"}]}`,
		`{"methodConfig":[{"name":[{"service":"a.B"}],"retryPolicy":{"maxAttempts":1,"initialBackoff":"1s","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}]}`,
	} {
		if grpcAccepts(bad) == nil {
			t.Errorf("grpc-go accepted a broken config: %s", bad)
		}
	}
}

// TestGRPCOddNames: services and callers named like YAML booleans and
// nulls, and one with a bidi override, keep their names in the channel
// key (the override escaped as \u202e), and grpc-go accepts every config.
func TestGRPCOddNames(t *testing.T) {
	names := oddNames()
	p := &Policy{Default: Hop{Timeout: time.Second}, Hops: map[string]Hop{}}
	var eps []Endpoint
	for i, n := range names {
		hop := "hop" + string(rune('a'+i))
		p.Hops[hop] = Hop{Timeout: time.Duration(i+1) * 100 * time.Millisecond}
		eps = append(eps, Endpoint{Hop: hop, Caller: n, Service: n, GRPCService: "pkg.S", GRPCMethod: "M"})
	}
	out, _ := GRPC(p, eps, GRPCOptions{})
	if strings.ContainsRune(out, '\u202e') || !strings.Contains(out, `\u202e`) {
		t.Errorf("the bidi override is not escaped:\n%s", out)
	}
	chans := grpcChannelsAccepted(t, out)
	for i, n := range names {
		cfg, ok := chans[n+" → "+n]
		if !ok {
			t.Errorf("%q: no channel in %v", n, out)
			continue
		}
		want := GRPCDuration(time.Duration(i+1) * 100 * time.Millisecond)
		if !strings.Contains(string(cfg), `"timeout": "`+want+`"`) {
			t.Errorf("%q: %s, want timeout %s", n, cfg, want)
		}
	}
}

// oddNames are names that YAML 1.1 or 1.2 reads as something else than a
// string, and one with a bidi override: every emitted format must keep
// them as they are.
func oddNames() []string {
	return []string{"True", "NULL", "yes", "~", "on", "0x1F", "1e3", "pay\u202eyap"}
}

// oddService is the called service of odd name n in the odd-name tests:
// n itself when it is a valid host name, else one made of its bytes (a
// config routes no service that is not: see TestInvalidHostNotRouted).
func oddService(n string) string {
	if ValidHost(n, false) {
		return n
	}
	return fmt.Sprintf("svc-%x", n)
}
