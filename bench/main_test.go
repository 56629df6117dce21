package main

import (
	"strings"
	"testing"
	"time"
)

func contenderOf(name string, wall float64, rssMB float64) contender {
	d := time.Duration(wall * float64(time.Second))
	return contender{name: name, m: []measurement{{wall: d, cpu: d, rssMB: rssMB}}}
}

// The summary finds each contender by name and says of each of the
// performance targets whether it is met, with the Tempo ratio reported beside them.
func TestSummarizeTargets(t *testing.T) {
	c := config{n: 10_000_000, runs: 1, ratio: true}
	ks := []contender{
		contenderOf(tsJSONL, 1.0, 100),
		contenderOf(dqJSONL, 1.4, 280), // 1.4× ≥ 1.3: met
		contenderOf(dfJSONL, 5.0, 2800),
		contenderOf(tsParquet, 1.0, 104),
		contenderOf(dqParquet, 0.9, 230), // 0.9× < 1.0: NOT met
		contenderOf(dfParquet, 3.5, 3100),
		contenderOf(smallName(c), 0.4, 60), // 100/60 > 1.5: NOT met
		contenderOf(otlpTS, 2.0, 120),
		contenderOf(otlpDuck, 12.0, 1100), // 6×: met
		contenderOf(tempoTS, 4.0, 130),
		contenderOf(tempoDuck, 3.0, 300), // 0.75×: reported
	}
	card := &cardResult{n: 1000, runs: 1, rows: []cardRow{
		{hops: 1000, ks: []contender{contenderOf("analyze, JSON", 1, 100)}},
		{hops: 200000, ks: []contender{contenderOf("analyze, JSON", 30, 1500)}}, // 30× and 15× of 200×: met
	}}
	out := summarize(c, c.n, ks, card)
	for _, want := range []string{
		"Parquet: tailscope full analysis vs DuckDB quantile query: 0.90× (target ≥ 1.0: NOT met)",
		"JSONL: tailscope full analysis vs DuckDB quantile query: 1.40× (target ≥ 1.3: met)",
		"vs DuckDB read_json + unnest quantile query: 6.00× (target ≥ 5.0: met)",
		"100 / 60 MB = 1.67× (target ≤ 1.5: NOT met)",
		"1000 → 200000 hops (200×), same spans: CPU time up to 30.00×, peak RSS up to 15.00× (target: at most the hop ratio: met)",
		"Tempo vParquet4 block: tailscope full analysis vs DuckDB read_parquet + unnest quantile query: 0.75× (no target set: reported)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	// A superlinear growth fails the cardinality target.
	card.rows[1].ks[0] = contenderOf("analyze, JSON", 250, 1500)
	if out := card.target(); !strings.Contains(out, "NOT met") {
		t.Errorf("250× the CPU over 200× the hops: %s", out)
	}
	// Cases not run say so instead of a verdict.
	out = summarize(config{n: 1000, runs: 1}, 1000, ks[:6], nil)
	for _, want := range []string{"Peak RSS at n / at n/10 spans: not run", "hop cardinality: not run", "OTLP JSON lines: tailscope full analysis vs DuckDB read_json + unnest quantile query: not run"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary without the optional cases lacks %q:\n%s", want, out)
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
