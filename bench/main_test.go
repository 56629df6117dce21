package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

func contenderOf(name string, wall float64, rssMB float64) contender {
	d := time.Duration(wall * float64(time.Second))
	return contender{name: name, m: []measurement{{wall: d, cpu: d, rssMB: rssMB}}}
}

// roundsOf is a contender measured in len(walls) rounds, with the same
// peak RSS in each unless rss gives one per round.
func roundsOf(name string, walls []float64, rss ...float64) contender {
	k := contender{name: name}
	for i, w := range walls {
		d := time.Duration(w * float64(time.Second))
		r := rss[0]
		if len(rss) == len(walls) {
			r = rss[i]
		}
		k.m = append(k.m, measurement{wall: d, cpu: d, rssMB: r})
	}
	return k
}

// pairOf is a group of tailscope and DuckDB's quantile query, tailscope
// taking 1 s in every round and DuckDB ratios[r] s in round r.
func pairOf(format string, size int, ratios []float64, tsRSS, duckRSS float64) *group {
	ones := make([]float64, len(ratios))
	for i := range ones {
		ones[i] = 1
	}
	minRounds := minFlatRounds
	if format == fmtOTLP || format == fmtTempo {
		minRounds = minNestedRounds
	}
	return &group{format: format, size: size, spans: size + 4, minRounds: minRounds,
		ts: roundsOf(tsName, ones, tsRSS), duck: []contender{roundsOf(dqName, ratios, duckRSS)}}
}

// The ratio of a pair is taken round by round, not as a ratio of medians.
func TestRatioOf(t *testing.T) {
	ts := roundsOf(tsName, []float64{1, 2, 1, 1, 1}, 100)
	duck := roundsOf(dqName, []float64{1.5, 2.2, 1.4, 1.3, 1.6}, 300)
	s, ok := ratioOf(&duck, &ts)
	if !ok {
		t.Fatal("no ratio")
	}
	// Per round: 1.5, 1.1, 1.4, 1.3, 1.6. The ratio of the medians would be 1.5.
	want := spread{median: 1.4, lo: 1.1, hi: 1.6, rounds: 5}
	if fmt.Sprint(s) != fmt.Sprint(want) || s.String() != "1.40× (1.10–1.60 over 5 rounds)" {
		t.Errorf("ratioOf = %+v %q; want %+v", s, s, want)
	}
	if _, ok := ratioOf(&contender{}, &ts); ok {
		t.Error("a ratio from a contender that never ran")
	}
}

func TestVerdict(t *testing.T) {
	for _, tc := range []struct {
		name      string
		s         spread
		want      float64
		minRounds int
		verdict   string
	}{
		{"every round clears", spread{median: 1.42, lo: 1.31, hi: 1.55, rounds: 5}, 1.3, 5, "met"},
		{"the lowest round on the target", spread{median: 1.4, lo: 1.3, hi: 1.5, rounds: 5}, 1.3, 5, "met"},
		{"the median clears, the lowest round does not", spread{median: 1.4, lo: 1.2, hi: 1.6, rounds: 5}, 1.3, 5, "not met (median 1.40×, lowest 1.20×: 0.10× short)"},
		{"the median misses", spread{median: 1.25, lo: 1.1, hi: 1.3, rounds: 5}, 1.3, 5, "not met (median 1.25×, lowest 1.10×: 0.20× short)"},
		{"four rounds of five", spread{median: 2, lo: 2, hi: 2, rounds: 4}, 1.3, 5, "too few rounds for a verdict (4, want at least 5)"},
		{"three rounds of a nested case", spread{median: 17, lo: 15, hi: 18, rounds: 3}, 5, 3, "met"},
	} {
		if got := verdict(tc.s, tc.want, tc.minRounds); got != tc.verdict {
			t.Errorf("%s: verdict = %q; want %q", tc.name, got, tc.verdict)
		}
	}
}

// Sizes below 1M spans (and above 10M) carry no target; the nested
// formats have theirs or none.
func TestSpeedTarget(t *testing.T) {
	for _, tc := range []struct {
		format string
		size   int
		want   float64
	}{
		{fmtJSONL, 100_000, 0},
		{fmtJSONL, 999_999, 0},
		{fmtJSONL, 1_000_000, 1.3},
		{fmtJSONL, 10_000_000, 1.3},
		{fmtParquet, 2_000_000, 1.2},
		{fmtParquet, 20_000_000, 0},
		{fmtOTLP, 10_000, 5},
		{fmtTempo, 10_000_000, 0},
	} {
		got, why := speedTarget(&group{format: tc.format, size: tc.size})
		if got != tc.want || (got == 0) != (why != "") {
			t.Errorf("speedTarget(%s, %d) = %v, %q; want %v", tc.format, tc.size, got, why, tc.want)
		}
	}
}

// Each round runs a group's contenders back to back, tailscope first in
// even rounds and last in odd ones, the quantile query always next to it.
func TestGroupOrder(t *testing.T) {
	g := &group{ts: contender{name: tsName}, duck: []contender{{name: dqName}, {name: dfName}}}
	for r, want := range []string{"tailscope analyze, DuckDB quantile query, DuckDB full-analysis SQL", "DuckDB full-analysis SQL, DuckDB quantile query, tailscope analyze", "tailscope analyze, DuckDB quantile query, DuckDB full-analysis SQL"} {
		var names []string
		for _, k := range g.order(r) {
			names = append(names, k.name)
		}
		if got := strings.Join(names, ", "); got != want {
			t.Errorf("round %d: %s; want %s", r, got, want)
		}
	}
}

// The summary says of each performance target whether it is met, from
// the whole spread of the rounds' ratios, with the sizes below 1M and
// Tempo reported without a target.
func TestSummarizeTargets(t *testing.T) {
	r := &results{cases: cases{flat: true, otlp: true, tempo: true, card: true}, flatRounds: 5, nestedRounds: 3,
		flat: []*group{
			pairOf(fmtJSONL, 100_000, []float64{1.1, 1.2, 1.0, 1.1, 1.1}, 60, 150),
			pairOf(fmtParquet, 100_000, []float64{1.1, 1.2, 1.0, 1.1, 1.1}, 60, 150),
			pairOf(fmtJSONL, 1_000_000, []float64{1.4, 1.5, 1.2, 1.45, 1.35}, 100, 280), // median clears 1.3, one round does not
			pairOf(fmtParquet, 1_000_000, []float64{1.3, 1.25, 1.4, 1.21, 1.5}, 104, 230),
		},
		nested: []*group{
			pairOf(fmtOTLP, 1_000_000, []float64{15, 18, 17}, 120, 1100),
			pairOf(fmtTempo, 1_000_000, []float64{0.7, 0.75, 0.8}, 130, 300),
		},
		card: &cardResult{n: 1000, runs: 1, rows: []cardRow{
			{hops: 1000, ks: []contender{contenderOf("analyze, JSON", 1, 100)}},
			{hops: 200000, ks: []contender{contenderOf("analyze, JSON", 30, 1500)}}, // 30× and 15× of 200×: met
		}},
	}
	out := summarize(r)
	for _, want := range []string{
		"- JSONL, 100000 spans: tailscope full analysis vs DuckDB quantile query: 1.10× (1.00–1.20 over 5 rounds) (no target outside 1M–10M spans: reported)",
		"- JSONL, 1000000 spans: tailscope full analysis vs DuckDB quantile query: 1.40× (1.20–1.50 over 5 rounds) (target ≥ 1.3× in every round: not met (median 1.40×, lowest 1.20×: 0.10× short))",
		"- Parquet, 1000000 spans: tailscope full analysis vs DuckDB quantile query: 1.30× (1.21–1.50 over 5 rounds) (target ≥ 1.2× in every round: met)",
		"- OTLP JSON lines, 1000000 spans: tailscope full analysis vs DuckDB quantile query: 17.00× (15.00–18.00 over 3 rounds) (target ≥ 5.0× in every round: met)",
		"(tailscope's largest peak against DuckDB's smallest): met (closest Parquet, 1000000 spans: 104 MB against 230 MB)",
		"- Peak RSS at 1000000 spans / at 100000 spans (JSONL, tailscope's largest peak over its smallest): 100 / 60 MB = 1.67× (target ≤ 1.5: not met)",
		"1000 → 200000 hops (200×), same spans: CPU time up to 30.00×, peak RSS up to 15.00× (target: at most the hop ratio: met)",
		"- Tempo vParquet4 block, 1000000 spans: tailscope full analysis vs DuckDB quantile query: 0.75× (0.70–0.80 over 3 rounds) (no target set: reported)",
		"| JSONL | 1000004 | DuckDB quantile query | 1.400 | 1.40 1.50 1.20 1.45 1.35 | 1.40 | 280–280 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if m := regexp.MustCompile(`(?i)(issue|session)s? \d`).FindString(out); m != "" {
		t.Errorf("summary names %q:\n%s", m, out)
	}

	// Peak RSS is checked round by round: tailscope's median below
	// DuckDB's, but its largest peak above DuckDB's smallest, is not met.
	g := r.flat[3]
	g.ts = roundsOf(tsName, []float64{1, 1, 1, 1, 1}, 100, 100, 240, 100, 100)
	g.duck[0] = roundsOf(dqName, []float64{1.3, 1.3, 1.3, 1.3, 1.3}, 300, 230, 300, 300, 300)
	if got, want := rssLine(r.flat), "not met (Parquet, 1000000 spans: 240 MB against 230 MB)"; !strings.Contains(got, want) {
		t.Errorf("rssLine = %q; want it to contain %q", got, want)
	}

	// A superlinear growth fails the cardinality target.
	r.card.rows[1].ks[0] = contenderOf("analyze, JSON", 250, 1500)
	if out := r.card.target(); !strings.Contains(out, "not met") {
		t.Errorf("250× the CPU over 200× the hops: %s", out)
	}
}

// Fewer rounds than a case's minimum give the numbers and no verdict.
func TestSummarizeTooFewRounds(t *testing.T) {
	r := &results{cases: cases{flat: true}, flatRounds: 3, flat: []*group{
		pairOf(fmtJSONL, 1_000_000, []float64{2, 2, 2}, 100, 300),
		pairOf(fmtJSONL, 10_000_000, []float64{2, 2, 2}, 100, 300),
	}}
	out := summarize(r)
	for _, want := range []string{
		"- JSONL, 1000000 spans: tailscope full analysis vs DuckDB quantile query: 2.00× (2.00–2.00 over 3 rounds) (target ≥ 1.3× in every round: too few rounds for a verdict (3, want at least 5))",
		"closest JSONL, 1000000 spans: 100 MB against 300 MB (too few rounds for a verdict)",
		"100 / 100 MB = 1.00× (target ≤ 1.5: too few rounds for a verdict)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, ": met") {
		t.Errorf("a verdict from 3 rounds:\n%s", out)
	}
}

// Cases not run say so instead of a verdict.
func TestSummarizeNotRun(t *testing.T) {
	out := summarize(&results{cases: cases{flat: true}, flatRounds: 5, flat: []*group{pairOf(fmtJSONL, 1_000_000, []float64{2, 2, 2, 2, 2}, 100, 300)}})
	for _, want := range []string{
		"OTLP JSON lines: not run",
		"Peak RSS at the largest flat size / at a tenth of it: not run",
		"hop cardinality: not run",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary without the optional cases lacks %q:\n%s", want, out)
		}
	}
	out = summarize(&results{cases: cases{otlp: true}, nestedRounds: 3, nested: []*group{pairOf(fmtOTLP, 1_000_000, []float64{6, 6, 6}, 100, 300)}})
	if !strings.Contains(out, "DuckDB's quantile query: not run (-cases)") {
		t.Errorf("summary without the flat case:\n%s", out)
	}
}

func TestParseFlags(t *testing.T) {
	c, err := parseFlags([]string{"-sizes", "2000000, 100000,100000", "-cases", "flat,tempo", "-cardinality=false"})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(c.sizes) != "[100000 2000000]" || c.cases != (cases{flat: true, tempo: true}) || c.runs != 5 || c.nestedRuns != 3 || !c.fullSQL {
		t.Errorf("parseFlags: sizes %v, cases %+v, runs %d/%d, full SQL %v", c.sizes, c.cases, c.runs, c.nestedRuns, c.fullSQL)
	}
	if c, _ := parseFlags([]string{"-cases", "flat", "-cardinality-only"}); c.cases != (cases{card: true}) {
		t.Errorf("-cardinality-only: cases %+v", c.cases)
	}
	for _, bad := range [][]string{{"-sizes", "10"}, {"-sizes", "1M"}, {"-cases", "flat,json"}, {"-runs", "0"}} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("parseFlags(%q) accepted", bad)
		}
	}
}

func TestParseCPULine(t *testing.T) {
	for _, tc := range []struct {
		line string
		want cpuTimes
		ok   bool
	}{
		{"cpu  4705 150 1120 16250 520 0 23 7 0 0", cpuTimes{4705, 150, 1120, 16250, 520, 0, 23, 7}, true},
		{"cpu  10 0 5 100", cpuTimes{user: 10, system: 5, idle: 100}, true}, // an old kernel: no iowait, irq, steal
		{"cpu0 1 2 3 4 5", cpuTimes{}, false},
		{"cpu  1 x 3 4", cpuTimes{}, false},
		{"", cpuTimes{}, false},
	} {
		got, ok := parseCPULine(tc.line)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseCPULine(%q) = %+v, %v; want %+v, %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}

// The CPU line accounts the busy time the measured processes and the
// bench did not spend to other work.
func TestCPUShare(t *testing.T) {
	t0 := time.Now()
	a := machineState{at: t0, cpuKnown: true, cpu: cpuTimes{user: 1000, system: 100, idle: 5000}}
	// 10 s on 2 CPUs = 2000 ticks: 1500 user, 300 system, 200 idle;
	// the measured processes 12 s, the bench 1 s: others 18 − 13 = 5 s.
	b := machineState{at: t0.Add(10 * time.Second), cpuKnown: true, self: time.Second,
		cpu: cpuTimes{user: 2500, system: 400, idle: 5200}}
	got := cpuShare(a, b, 12*time.Second)
	for _, want := range []string{"user 75.0%", "system 15.0%", "idle 10.0%", "the measured processes used 12.0 s of CPU, the bench itself 1.0 s, everything else 5.0 s (0.50 CPUs on average)"} {
		if !strings.Contains(got, want) {
			t.Errorf("cpuShare lacks %q: %s", want, got)
		}
	}
	if got := cpuShare(machineState{}, b, 0); !strings.Contains(got, "unknown") {
		t.Errorf("without /proc/stat: %s", got)
	}
}
