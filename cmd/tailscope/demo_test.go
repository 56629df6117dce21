// Tests that demo reproduces the source article, and analyze's exact p99 and censored ranges on the seed.

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"os"
	"sort"
	"strings"
	"testing"
)

// runJSON runs the command in-process and decodes its JSON output.
func runJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(args, strings.NewReader(""), &out, &errb); code != 0 && code != 3 {
		t.Fatalf("%v: exit %d: %s", args, code, errb.String())
	}
	if err := json.Unmarshal(out.Bytes(), v); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out.String())
	}
}

type checkJSON struct {
	Schema  string `json:"schema"`
	Results []struct {
		Policy struct {
			Name string `json:"name"`
		} `json:"policy"`
		Replay struct {
			Requests     int `json:"requests"`
			Succeeded    int `json:"succeeded"`
			Failed       int `json:"failed"`
			Undetermined int `json:"undetermined"`
			SuccessRate  struct {
				Low, High float64
			} `json:"success_rate"`
			LatencyMs struct {
				P50, P95, P99 float64
			} `json:"latency_ms"`
			FailureMs struct {
				Min, Max, Mean float64
			} `json:"failure_ms"`
			FailuresByHop map[string]int `json:"failures_by_hop"`
		} `json:"replay"`
	} `json:"results"`
}

// The demo reproduces the source article's table (docs/DESIGN.md §1).
func TestDemoReproducesArticle(t *testing.T) {
	var rep checkJSON
	runJSON(t, &rep, "demo", "--format", "json")
	if rep.Schema != "tailscope.check/v1" {
		t.Fatalf("schema %q", rep.Schema)
	}
	by := map[string]int{}
	for i, r := range rep.Results {
		by[r.Policy.Name] = i
	}
	want := map[string]int{"A": 181, "B": 181, "C": 200, "D": 181, "E": 170}
	for name, ok := range want {
		r := rep.Results[by[name]].Replay
		if r.Succeeded != ok || r.Requests != 200 || r.Undetermined != 0 {
			t.Errorf("%s: %d/%d ok (%d undetermined), want %d/200", name, r.Succeeded, r.Requests, r.Undetermined, ok)
		}
	}
	get := func(n string) int { return by[n] }
	d := rep.Results[get("D")].Replay
	if d.FailureMs.Min != 9000 || d.FailureMs.Max != 9000 {
		t.Errorf("D's failures at %v–%v ms, want all at exactly 9000", d.FailureMs.Min, d.FailureMs.Max)
	}
	a := rep.Results[get("A")].Replay
	if a.FailureMs.Min < 9000 || a.FailureMs.Max > 10500 {
		t.Errorf("A's failures at %v–%v ms, want within 9–10.5 s", a.FailureMs.Min, a.FailureMs.Max)
	}
	b := rep.Results[get("B")].Replay
	if b.FailureMs.Min < 3000 || b.FailureMs.Max > 4500 {
		t.Errorf("B's failures at %v–%v ms, want within 3–4.5 s", b.FailureMs.Min, b.FailureMs.Max)
	}
	e := rep.Results[get("E")].Replay
	if e.Failed != 30 || e.FailuresByHop["forward"] != 18 {
		t.Errorf("E: %d failures, %d at the first hop; want 30 and 18", e.Failed, e.FailuresByHop["forward"])
	}
	if a.FailureMs.Mean-b.FailureMs.Mean < 5500 {
		t.Errorf("A's mean time to failure %.0f ms is not 5.5 s above B's %.0f ms", a.FailureMs.Mean, b.FailureMs.Mean)
	}
	lo, hi := math.Inf(1), 0.0
	for _, r := range rep.Results {
		lo, hi = math.Min(lo, r.Replay.LatencyMs.P50), math.Max(hi, r.Replay.LatencyMs.P50)
	}
	if hi > lo*1.01 {
		t.Errorf("p50s range %.0f–%.0f ms: not within 1%% of each other", lo, hi)
	}
}

// A policy that waits longer than the timeout the logs were cut at cannot
// know whether the cut requests would have succeeded.
func TestCheckCensoredRange(t *testing.T) {
	var rep checkJSON
	runJSON(t, &rep, "check", "--policy", "../../samples/seed-chain/C.yaml", "--format", "json", "../../samples/seed-chain/recorded-under-A.jsonl")
	r := rep.Results[0].Replay
	if r.Undetermined != 19 || r.Succeeded != 181 || r.SuccessRate.Low != 0.905 || r.SuccessRate.High != 1 {
		t.Errorf("got %d ok, %d undetermined, success %v–%v; want 181, 19, 0.905–1", r.Succeeded, r.Undetermined, r.SuccessRate.Low, r.SuccessRate.High)
	}
	// Replaying A itself on what A logged is fully determined.
	runJSON(t, &rep, "check", "--policy", "../../samples/seed-chain/A.yaml", "--format", "json", "../../samples/seed-chain/recorded-under-A.jsonl")
	if r := rep.Results[0].Replay; r.Undetermined != 0 || r.Succeeded != 181 {
		t.Errorf("A on its own logs: %d ok, %d undetermined", r.Succeeded, r.Undetermined)
	}
}

// analyze's per-hop p99 is the exact linear-interpolation p99 of the
// file's durations, computed here independently.
func TestAnalyzeP99Exact(t *testing.T) {
	const path = "../../samples/seed-chain/spans.jsonl"
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	durs := map[string][]float64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var rec struct {
			Hop        string  `json:"hop"`
			DurationMs float64 `json:"duration_ms"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		durs[rec.Hop] = append(durs[rec.Hop], rec.DurationMs)
	}
	var rep struct {
		Schema string `json:"schema"`
		Hops   []struct {
			Hop       string `json:"hop"`
			Attempts  int    `json:"attempts"`
			LatencyMs struct {
				P50, P99 float64
			} `json:"latency_ms"`
		} `json:"hops"`
	}
	runJSON(t, &rep, "analyze", "--format", "json", path)
	if rep.Schema != "tailscope.report/v1" || len(rep.Hops) != 3 {
		t.Fatalf("schema %q, %d hops", rep.Schema, len(rep.Hops))
	}
	for _, h := range rep.Hops {
		xs := durs[h.Hop]
		sort.Float64s(xs)
		for _, c := range []struct {
			q   float64
			got float64
		}{{0.5, h.LatencyMs.P50}, {0.99, h.LatencyMs.P99}} {
			pos := float64(len(xs)-1) * c.q
			i := int(pos)
			want := xs[i] + (pos-float64(i))*(xs[i+1]-xs[i])
			if math.Abs(c.got-want) > 0.001 {
				t.Errorf("%s p%v = %v, exact %v", h.Hop, c.q*100, c.got, want)
			}
		}
	}
}
