package check

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/policy"
)

// TestJSONContract checks that tailscope.check/v1 has every key docs/DESIGN.md §8
// lists, with the values of the run.
func TestJSONContract(t *testing.T) {
	l := analyse(readSpans(t, filepath.Join(seedDir, "spans.jsonl")), nil)
	pa := loadPolicy(t, filepath.Join(seedDir, "A.yaml"))
	pd := loadPolicy(t, filepath.Join(seedDir, "D.yaml"))
	rep := Run(l.rep, l.reqs, []*policy.Policy{pd}, Options{Baseline: pa,
		Gates: Gates{MinSuccess: 0.9, MaxP95: 5e9, NoWorse: true, Tolerance: 0.05}})
	data, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte(`{"schema":"tailscope.check/v1"`)) {
		t.Fatalf("does not start with the schema: %.60s", data)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	has := func(where string, m any, keys ...string) map[string]any {
		t.Helper()
		mm, ok := m.(map[string]any)
		if !ok {
			t.Fatalf("%s: not an object: %v", where, m)
		}
		for _, k := range keys {
			if _, ok := mm[k]; !ok {
				t.Errorf("%s: missing %q (has %s)", where, k, keysOf(mm))
			}
		}
		return mm
	}
	has("report", doc, "schema", "results", "verdict", "warnings")
	if doc["verdict"] != Fail {
		t.Errorf("verdict %v, want fail (D has dead retries)", doc["verdict"])
	}
	results := doc["results"].([]any)
	if len(results) != 1 {
		t.Fatalf("want 1 result, got %d", len(results))
	}
	res := has("results[0]", results[0], "policy", "lint", "replay", "gates", "verdict")
	pol := has("policy", res["policy"], "path", "content")
	if pol["path"] != pd.Path {
		t.Errorf("policy path %v, want %s", pol["path"], pd.Path)
	}
	content := has("policy.content", pol["content"], "budget_ms", "default", "hops")
	if content["budget_ms"] != float64(9000) {
		t.Errorf("budget_ms %v, want 9000", content["budget_ms"])
	}
	lint := res["lint"].([]any)
	if len(lint) == 0 {
		t.Fatalf("D: no lint findings")
	}
	for i, f := range lint {
		has("lint["+string(rune('0'+i%10))+"]", f, "code", "severity", "hop", "message")
	}
	rp := has("replay", res["replay"], "requests", "succeeded", "failed", "undetermined", "success_rate", "latency_ms",
		"failure_ms", "failure_landing", "failures_by_hop", "retry_ms")
	has("replay.success_rate", rp["success_rate"], "low", "high")
	has("replay.latency_ms", rp["latency_ms"], "p50", "p95", "p99")
	has("replay.failure_ms", rp["failure_ms"], "min", "max", "mean")
	has("replay.retry_ms", rp["retry_ms"], "spent", "wasted")
	for _, b := range rp["failure_landing"].([]any) {
		has("failure_landing[]", b, "from_ms", "to_ms", "count")
	}
	if rp["requests"] != float64(len(l.reqs)) {
		t.Errorf("replay.requests %v, want %d", rp["requests"], len(l.reqs))
	}
	gates := res["gates"].([]any)
	var names []string
	for _, g := range gates {
		gm := has("gates[]", g, "name", "want", "got", "pass")
		names = append(names, gm["name"].(string))
	}
	sort.Strings(names)
	want := "max-p95 min-success no-worse-p95 no-worse-p99 no-worse-success"
	if strings.Join(names, " ") != want {
		t.Errorf("gates %v, want %s", names, want)
	}
}

func keysOf(m map[string]any) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}
