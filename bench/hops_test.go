package main

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary be the bench's generator child, as the
// bench's own binary is (cachedGen runs os.Executable with genEnv set),
// so that the hops case's test generates its file the way the bench does.
func TestMain(m *testing.M) {
	if spec := os.Getenv(genEnv); spec != "" {
		if err := genChild(spec); err != nil {
			fmt.Fprintln(os.Stderr, "bench: generator:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// hopNameRE is an ordinary hop name: a service (a word, a number once
// the words run out) and an operation; no ids.
var hopNameRE = regexp.MustCompile(`^[a-z]+(-[0-9]+)?\.[A-Z][a-z]+$`)

// The hops case's logs have the hops asked for, all with ordinary names,
// every one called, the three latency families, transient failures and
// cut attempts retried, and a fixed seed.
func TestGenerateHops(t *testing.T) {
	const n = 40_000
	for _, hops := range []int{50, 1000} {
		attempts := map[string]int{}
		cut, fast, failedRoots, roots, maxAttempt := 0, 0, 0, 0, 0
		var first []genSpan
		got, err := generateHops(n, hops, func(s *genSpan, route string) error {
			if len(first) < 30 {
				first = append(first, *s)
			}
			if s.parent == 0 {
				roots++
				if s.failed {
					failedRoots++
				}
				if s.hop != "gateway" {
					t.Fatalf("root hop %q", s.hop)
				}
				return nil
			}
			attempts[s.hop]++
			if !hopNameRE.MatchString(s.hop) || !strings.HasPrefix(s.hop, s.service+".") {
				t.Fatalf("hop %q of service %q is not an ordinary name", s.hop, s.service)
			}
			if s.timeout {
				cut++
			}
			if s.code == 503 {
				fast++
			}
			maxAttempt = max(maxAttempt, s.attempt)
			return nil
		})
		if err != nil || got < n || got > n+40 {
			t.Fatalf("%d hops: generated %d spans (%v)", hops, got, err)
		}
		if len(attempts) != hops {
			t.Errorf("%d hops called, want %d", len(attempts), hops)
		}
		if cut == 0 || fast == 0 || maxAttempt != retries+1 || failedRoots == 0 || failedRoots > roots/20 {
			t.Errorf("%d hops: %d cut attempts, %d transient, max attempt %d, %d of %d requests failed", hops, cut, fast, maxAttempt, failedRoots, roots)
		}
		// Calls drawn uniformly: no hop far from its share.
		mean := float64(got-roots) / float64(hops)
		for h, a := range attempts {
			if float64(a) < mean/2 || float64(a) > mean*2 {
				t.Errorf("%s: %d attempts, mean %.0f", h, a, mean)
			}
		}
		var second []genSpan
		generateHops(n, hops, func(s *genSpan, _ string) error {
			if len(second) < 30 {
				second = append(second, *s)
			}
			return nil
		})
		if !slices.Equal(first, second) {
			t.Fatal("generation is not deterministic for a given n and hops")
		}
	}
	families := map[hopFamily]int{}
	for _, h := range genHops(rand.New(rand.NewPCG(1, 2)), 300) {
		families[h.family]++
	}
	if families[famLognormal] != 100 || families[famBimodal] != 100 || families[famPareto] != 100 {
		t.Errorf("families %v, want a third each", families)
	}
}

// quantileCont is DuckDB's quantile_cont: linear interpolation between
// the closest ranks, at (n−1)·p.
func quantileCont(sorted []float64, p float64) float64 {
	h := float64(len(sorted)-1) * p
	lo := math.Floor(h)
	hi := math.Ceil(h)
	return sorted[int(lo)] + (h-lo)*(sorted[int(hi)]-sorted[int(lo)])
}

// The hops case, tiny and without DuckDB (20k spans over 50 hops, two
// rounds; nothing timed is checked): it generates its file through the
// generator child, runs the real binary with the flags it times, and
// summarises. On the same file, tailscope's per-hop latency is
// quantile_cont's at the percentiles DuckDB's query asks for (so the two
// contenders compute the same numbers), and most call hops' timeouts are
// extrapolated from a fitted tail.
func TestHopsCase(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the tailscope binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "tailscope")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/tailscope/tailscope/cmd/tailscope").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	c, err := parseFlags([]string{"-hops-only", "-hops-n", "20000", "-hops-counts", "50", "-hops-runs", "2"})
	if err != nil {
		t.Fatal(err)
	}
	if c.cases != (cases{hops: true}) || !c.cases.duckDB() {
		t.Fatalf("-hops-only: cases %+v", c.cases)
	}
	logf := func(format string, a ...any) { t.Logf(format, a...) }
	gs, err := c.hops.groups(dir, tools{bin: bin, dir: dir}, false, logf)
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 1 || gs[0].hops != 50 || gs[0].spans < 20_000 || len(gs[0].duck) != 0 {
		t.Fatalf("groups %+v", gs)
	}
	warmUps := 0
	counted := func(format string, a ...any) {
		if strings.Contains(format, "warm-up") {
			warmUps++
		}
		logf(format, a...)
	}
	if err := runRounds("hops", gs, c.hops.runs, counted); err != nil {
		t.Fatal(err)
	}
	if len(gs[0].ts.m) != 2 {
		t.Fatalf("%d runs, want 2", len(gs[0].ts.m))
	}
	if warmUps != 1 {
		t.Fatalf("%d untimed warm-up runs before the rounds, want 1 (one contender)", warmUps)
	}
	out := summarize(&results{cases: c.cases, hopsRounds: c.hops.runs, hops: gs})
	for _, want := range []string{
		"| 50 | " + fmt.Sprint(gs[0].spans) + " | tailscope analyze | ",
		"- 50 hops: DuckDB not run",
		"- Analyze no slower than DuckDB at 1000 hops (and 50 measured): 50 hops: DuckDB not run; no verdict: -hops-counts lacks 1000",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}

	// The report on the same file, with the same flags but to a file.
	report := filepath.Join(dir, "report.json")
	cmd := slices.Clone(gs[0].ts.cmd)
	i := slices.Index(cmd, "-o")
	if i < 0 || cmd[i+1] != os.DevNull || !slices.Contains(cmd, "-q") || !slices.Contains(cmd, "json") {
		t.Fatalf("the timed command %q", cmd)
	}
	cmd[i+1] = report
	if out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%q: %v\n%s", cmd, err, out)
	}
	var rep struct {
		Hops []struct {
			Hop       string              `json:"hop"`
			Attempts  int                 `json:"attempts"`
			LatencyMs map[string]*float64 `json:"latency_ms"`
			Rec       struct {
				Extrapolated bool `json:"extrapolated"`
			} `json:"recommendation"`
		} `json:"hops"`
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	durs := map[string][]float64{}
	if _, err := generateHops(20_000, 50, func(s *genSpan, _ string) error {
		durs[s.hop] = append(durs[s.hop], float64(s.durNs)/1e6)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(rep.Hops) != 51 {
		t.Fatalf("%d hops in the report, want 51 (gateway and 50 calls)", len(rep.Hops))
	}
	extrapolated, compared := 0, 0
	for _, h := range rep.Hops {
		d := durs[h.Hop]
		slices.Sort(d)
		if h.Attempts != len(d) {
			t.Errorf("%s: %d attempts, %d generated", h.Hop, h.Attempts, len(d))
			continue
		}
		if h.Rec.Extrapolated {
			extrapolated++
		}
		for _, q := range []struct {
			key string
			p   float64
		}{{"p50", 0.5}, {"p90", 0.9}, {"p95", 0.95}, {"p99", 0.99}, {"p999", 0.999}, {"max", 1}} {
			p, ok := h.LatencyMs[q.key]
			if !ok || p == nil {
				continue // above a cut: unknown, so not reported
			}
			got := *p
			want := quantileCont(d, q.p)
			if math.Abs(got-want) > 1e-3*max(1, want) {
				t.Errorf("%s %s: tailscope %.4f ms, quantile_cont %.4f ms", h.Hop, q.key, got, want)
			}
			compared++
		}
	}
	if compared < 51*5 {
		t.Errorf("compared %d percentiles, want most of 51×6", compared)
	}
	if extrapolated < 50*2/3 {
		t.Errorf("%d of 50 call hops with an extrapolated timeout, want most", extrapolated)
	}
}

// The hops case's flags: on by default beside the other cases, alone with
// -hops-only (with the cardinality case too if both are asked), off with
// -hops-case=false; bad counts refused.
func TestParseHopsFlags(t *testing.T) {
	c, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !c.cases.hops || c.hops.n != 1_000_000 || fmt.Sprint(c.hops.hops) != "[1000 10000]" || c.hops.runs != minFlatRounds {
		t.Errorf("defaults: cases %+v, hops %+v", c.cases, c.hops)
	}
	if c, _ := parseFlags([]string{"-hops-case=false"}); c.cases.hops {
		t.Error("-hops-case=false still runs the hops case")
	}
	if c, _ := parseFlags([]string{"-hops-only", "-cardinality-only", "-hops-counts", "10000, 1000,1000"}); c.cases != (cases{card: true, hops: true}) || fmt.Sprint(c.hops.hops) != "[1000 10000]" {
		t.Errorf("-hops-only -cardinality-only: cases %+v, counts %v", c.cases, c.hops.hops)
	}
	if c, _ := parseFlags([]string{"-cases", "hops"}); c.cases != (cases{hops: true}) {
		t.Errorf("-cases hops: %+v", c.cases)
	}
	for _, bad := range [][]string{{"-hops-counts", "1k"}, {"-hops-counts", "0"}, {"-hops-n", "10"}, {"-hops-runs", "0"}} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("parseFlags(%q) accepted", bad)
		}
	}
}

// The hops target line says PASS only when every round at 1,000 hops has
// DuckDB at least as slow as tailscope, FAIL otherwise, no verdict from
// fewer than five rounds; other hop counts are measured without one.
func TestHopsTargetLine(t *testing.T) {
	pair := func(hops int, ratios ...float64) *group {
		g := pairOf(fmtJSONL, 1_000_000, ratios, 150, 160)
		g.hops = hops
		return g
	}
	for _, tc := range []struct {
		gs   []*group
		want string
	}{
		{[]*group{pair(1000, 1.2, 1.1, 1.0, 1.3, 1.05), pair(10000, 0.8, 0.7, 0.9, 0.8, 0.8)},
			"- Analyze no slower than DuckDB at 1000 hops (and 10000 measured): 1000 hops, 1000000 spans: DuckDB/tailscope wall 1.10× (1.00–1.30 over 5 rounds), CPU 1.10× (target ≥ 1.0× in every round: PASS); " +
				"10000 hops, 1000000 spans: DuckDB/tailscope wall 0.80× (0.70–0.90 over 5 rounds), CPU 0.80× (measured, no target)\n"},
		{[]*group{pair(1000, 1.2, 1.1, 0.95, 1.3, 1.05)}, "(target ≥ 1.0× in every round: FAIL (median 1.10×, lowest 0.95×: 0.05× short))"},
		{[]*group{pair(1000, 2, 2, 2)}, "no verdict, too few rounds (3, want at least 5)"},
		{[]*group{pair(10000, 2, 2, 2, 2, 2)}, "no verdict: -hops-counts lacks 1000"},
	} {
		if got := hopsTargetLine(tc.gs, true); !strings.Contains(got, tc.want) {
			t.Errorf("hopsTargetLine = %q; want it to contain %q", got, tc.want)
		}
	}
	if got := hopsTargetLine(nil, false); !strings.Contains(got, "not run") {
		t.Errorf("not run: %q", got)
	}
	r := &results{cases: cases{hops: true}, hopsRounds: 5, hops: []*group{pair(1000, 1.2, 1.1, 1.0, 1.3, 1.05)}}
	out := summarize(r)
	for _, want := range []string{
		"| 1000 | 1000004 | tailscope analyze | 1.000 | 1.00 1.00 1.00 1.00 1.00 | 1.00 | 150–150 |",
		"| 1000 | 1000004 | DuckDB quantile query | 1.100 | 1.20 1.10 1.00 1.30 1.05 | 1.10 | 160–160 |",
		"- 1000 hops: wall 1.10× (1.00–1.30 over 5 rounds), CPU 1.10× (1.00–1.30 over 5 rounds), peak RSS 1.07× (1.07–1.07 over 5 rounds) (tailscope at most 150 MB, DuckDB at least 160 MB)",
		"PASS",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if r.cpu() != 10650*time.Millisecond {
		t.Errorf("cpu %v: the hops case's runs not counted", r.cpu())
	}
}
