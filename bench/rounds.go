package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// group is one input file timed with tailscope and the DuckDB queries that
// read it, back to back in every round (see runRounds). duck[0] is the
// query the targets compare tailscope with; a group without DuckDB (the
// peak-RSS-growth run) is tailscope alone.
type group struct {
	format    string // fmtJSONL, fmtParquet, fmtWide, fmtOTLP or fmtTempo
	size      int    // the spans asked for (-sizes or -n)
	spans     int    // the spans generated: a little more, to finish the last trace
	hops      int    // the distinct hops generated (the hops case), or 0
	minRounds int    // fewer rounds than this give numbers but no verdict
	ts        contender
	duck      []contender
}

// The formats, as the summary names them.
const (
	fmtJSONL   = "JSONL"
	fmtParquet = "Parquet"
	// fmtWide is flat Parquet with extra columns (widepq.go).
	fmtWide  = "Parquet, 7 extra columns"
	fmtOTLP  = "OTLP JSON lines"
	fmtTempo = "Tempo vParquet4 block"
)

// The fewest rounds a verdict is drawn from. Five for the flat files,
// whose ratios are close to their targets, so that a pair's spread says
// something; three for the nested formats, whose DuckDB query takes
// minutes at 10M spans (and whose target is met or missed by a wide
// margin).
const (
	minFlatRounds   = 5
	minNestedRounds = 3
)

func (g *group) label() string {
	if g.hops > 0 {
		return fmt.Sprintf("%s, %d spans, %d hops", g.format, g.size, g.hops)
	}
	return fmt.Sprintf("%s, %d spans", g.format, g.size)
}

// order is the group's contenders in the order round r runs them:
// tailscope first in even rounds and last in odd ones, the DuckDB queries
// reversed with it so that the quantile query always runs next to
// tailscope. Neither side thus always gets the state the other leaves
// behind (a warm cache, a CPU clocked up or throttled).
func (g *group) order(r int) []*contender {
	ks := []*contender{&g.ts}
	for i := range g.duck {
		ks = append(ks, &g.duck[i])
	}
	if r%2 == 1 {
		slices.Reverse(ks)
	}
	return ks
}

// runRounds times every group's contenders, rounds times, each run after
// its input was read through (measureWarm), after one untimed run of each
// (warmUp).
func runRounds(what string, gs []*group, rounds int, logf func(string, ...any)) error {
	if rounds > 0 {
		if err := warmUp(what, gs, logf); err != nil {
			return err
		}
	}
	for r := 0; r < rounds; r++ {
		for _, g := range gs {
			for _, k := range g.order(r) {
				m, err := measureWarm(k.cmd, k.in)
				if err != nil {
					return fmt.Errorf("%s, %s: %v", g.label(), k.name, err)
				}
				logf("%s round %d/%d %-32s %-38s %8.3fs %6.0f MB", what, r+1, rounds, g.label(), k.name, m.wall.Seconds(), m.rssMB)
				k.m = append(k.m, m)
			}
		}
	}
	return nil
}

// warmUp runs every group's contenders once, untimed, before the rounds.
// The first run of a bench comes after the builds and the data's
// generation, and on this machine memory that went unused for a while is
// handed back to the host (DAMON's reclaim, free page reporting): whatever
// runs first pays to have its memory backed again. Measured on the
// 1,000-hop file, tailscope first in round 1 took 0.79–0.80 s against
// 0.52–0.70 s in the later rounds of the same bench (its system time 0.46 s
// against 0.05–0.14 s alone in a row), which put that round's ratio below
// every other; DuckDB, second in round 1, never paid it. One untimed run
// of each, as hyperfine's --warmup does, starts the rounds alike.
func warmUp(what string, gs []*group, logf func(string, ...any)) error {
	for _, g := range gs {
		for _, k := range g.order(0) {
			m, err := measureWarm(k.cmd, k.in)
			if err != nil {
				return fmt.Errorf("%s, %s: %v", g.label(), k.name, err)
			}
			logf("%s warm-up %-32s %-38s %8.3fs (untimed)", what, g.label(), k.name, m.wall.Seconds())
		}
	}
	return nil
}

// spread is a ratio measured in several rounds: the median of the
// per-round ratios, the lowest and the highest.
type spread struct {
	median, lo, hi float64
	rounds         int
}

// ratioOf is DuckDB's wall time over tailscope's, round by round: the
// ratio of round r compares the two runs of that round, which ran back to
// back on the same state of the machine, so that a slow moment slows both
// sides of one ratio instead of one side of the median.
func ratioOf(duck, ts *contender) (spread, bool) {
	return ratioBy(duck, ts, func(m measurement) float64 { return m.wall.Seconds() })
}

// ratioBy is ratioOf of another measure of a run (CPU time, peak RSS):
// DuckDB's over tailscope's, round by round.
func ratioBy(duck, ts *contender, of func(measurement) float64) (spread, bool) {
	n := min(len(duck.m), len(ts.m))
	var rs []float64
	for r := 0; r < n; r++ {
		if t := of(ts.m[r]); t > 0 {
			rs = append(rs, of(duck.m[r])/t)
		}
	}
	if len(rs) == 0 {
		return spread{}, false
	}
	return spread{median: median(rs), lo: slices.Min(rs), hi: slices.Max(rs), rounds: len(rs)}, true
}

func (s spread) String() string {
	rounds := "rounds"
	if s.rounds == 1 {
		rounds = "round"
	}
	return fmt.Sprintf("%.2f× (%.2f–%.2f over %d %s)", s.median, s.lo, s.hi, s.rounds, rounds)
}

// verdict says whether a ratio clears want: met only if every round's
// ratio does (the lowest), no verdict from fewer than minRounds rounds.
func verdict(s spread, want float64, minRounds int) string {
	switch {
	case s.rounds < minRounds:
		return fmt.Sprintf("too few rounds for a verdict (%d, want at least %d)", s.rounds, minRounds)
	case s.lo >= want:
		return "met"
	}
	return fmt.Sprintf("not met (median %.2f×, lowest %.2f×: %.2f× short)", s.median, s.lo, want-s.lo)
}

// tools are what the groups run: the tailscope binary built for the run,
// and Node running DuckDB on a SQL file written into the work folder.
type tools struct {
	bin, script, dir string
	threads          int
}

// The contenders' names; a group's format and size say on what.
const (
	tsName        = "tailscope analyze"
	dqName        = "DuckDB quantile query"
	dfName        = "DuckDB full-analysis SQL"
	otlpDuckName  = "DuckDB read_json + unnest quantile query"
	tempoDuckName = "DuckDB read_parquet + unnest quantile query"
)

// analyze is tailscope's full analysis of path, its JSON report discarded.
func (t tools) analyze(path string) contender {
	return contender{name: tsName, cmd: []string{t.bin, "analyze", "--format", "json", "-o", os.DevNull, "-q", path}, in: path}
}

// query writes a SQL file (file.sql in the work folder) and is DuckDB
// running it; in is the data file it reads.
func (t tools) query(name, file, sql, in string) (contender, error) {
	p := filepath.Join(t.dir, file+".sql")
	if err := os.WriteFile(p, []byte(sql), 0o644); err != nil {
		return contender{}, err
	}
	return contender{name: name, cmd: []string{"node", t.script, p, fmt.Sprint(t.threads)}, in: in}, nil
}
