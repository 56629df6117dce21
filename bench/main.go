// Command bench measures tailscope against DuckDB on the same span logs
// (docs/DESIGN.md §9) and prints, per pair, the ratio of their wall times
// round by round with its spread, peak RSS, and the performance targets.
//
//	go run ./bench                                  # every case, the full sizes
//	go run ./bench -cases flat                      # the flat files only
//	go run ./bench -cases otlp,tempo,cardinality    # the nested formats, hop cardinality
//	go run ./bench -hops-only                       # 1M spans over 1k and 10k hops vs DuckDB
//	go run ./bench -sizes 100000,1000000 -n 1000000 # smaller, quicker
//
// It generates spans of a realistic shape (a gateway calling eleven hops,
// lognormal bodies, an 8% tail of 8–11 s on one slow hop cut at a 3 s
// timeout and retried twice, transient 503s), builds the tailscope
// binary, installs @duckdb/node-api from npm into the work folder, and
// times each file with tailscope analyze (full analysis, JSON report to
// /dev/null) and with DuckDB (2 threads, the machine's cores). The cases
// (-cases):
//
//   - flat: flat JSON lines and flat Parquet at every size of -sizes
//     (100k, 1M, 2M and 10M spans), against DuckDB's per-hop quantile_cont
//     query and, with -full-sql, DuckDB running SQL that does what
//     tailscope does (per-hop quantiles, time-to-success, failure
//     histogram, retry yield, request outcomes); -runs rounds (5);
//   - otlp, tempo: -n spans (10M) as OTLP JSON lines (the collector's file
//     exporter) and as a Grafana Tempo vParquet4 block, against DuckDB
//     unnesting the same nesting (otlp.go, tempo.go); -nested-runs rounds
//     (3: DuckDB's OTLP query alone takes minutes at 10M);
//   - cardinality: hop names that carry ids (GET /users/12345), -card-n
//     spans (1M) at each of -card-hops distinct hops (1k and 200k),
//     analyze to JSON and to text and recommend, and the ratios between
//     the largest and the smallest hop count; -nested-runs rounds.
//     -cardinality=false leaves it out, -cardinality-only runs it alone
//     (no DuckDB, no npm);
//   - hops: -hops-n spans (1M) as flat JSON lines over each of
//     -hops-counts (1k and 10k) ordinary hop names ("orders-3.List"; a
//     third lognormal, a third bimodal, a third Pareto-tailed, so that
//     most hops' timeouts come from a fitted tail), against DuckDB's
//     per-hop quantile query; -hops-runs rounds (5), alternating as the
//     flat case's; the target: analyze no slower than DuckDB at 1k hops
//     (hops.go). -hops-case=false leaves it out, -hops-only runs it alone.
//
// In each round tailscope and DuckDB run back to back on each file,
// tailscope first in one round and last in the next (see group.order);
// each process is timed from start to exit (start-up included for both),
// its peak RSS read from the kernel's rusage, and before each run its
// input is read through, untimed, so that every run starts with the file
// in the page cache (see measureWarm). A pair's ratio is DuckDB's wall
// time over tailscope's in the same round; the summary gives its median
// over the rounds with the lowest and the highest, and a target is met
// only if the lowest clears it.
//
// The summary starts with the machine's state: CPU model and count, the
// Go and DuckDB versions, the load averages at the start, before the
// timed runs and after them, and the CPU time the timed runs' processes
// did not spend (other work on the machine); it ends with the
// performance targets (see targetLines), each met or not met, or "too
// few rounds for a verdict".
//
// The benchmark is a tool, not a test: it needs node, npm and the network
// once, and minutes of machine time. Nothing else in the repository uses
// it.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

func main() {
	if spec := os.Getenv(genEnv); spec != "" {
		if err := genChild(spec); err != nil {
			fmt.Fprintln(os.Stderr, "bench: generator:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type config struct {
	sizes      []int // the flat case's span counts, ascending
	n          int   // the nested cases' span count
	runs       int   // rounds of the flat case
	nestedRuns int   // rounds of the nested and cardinality cases
	cases      cases
	fullSQL    bool
	ratio      bool
	wide       bool // the flat case also times the Parquet file with extra columns
	dir        string
	duckDir    string
	threads    int
	keep       bool
	results    string
	card       *cardinalityCase
	hops       *hopsCase
}

// cases are the cases a run measures (-cases).
type cases struct{ flat, otlp, tempo, card, hops bool }

// duckDB says whether any case runs DuckDB (all but cardinality do).
func (c cases) duckDB() bool { return c.flat || c.otlp || c.tempo || c.hops }

func parseFlags(args []string) (config, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var c config
	var sizes, names string
	fs.StringVar(&sizes, "sizes", "100000,1000000,2000000,10000000", "span counts of the flat case, comma-separated")
	fs.IntVar(&c.n, "n", 10_000_000, "spans of the OTLP and Tempo cases")
	fs.IntVar(&c.runs, "runs", minFlatRounds, fmt.Sprintf("rounds of the flat case (fewer than %d give no verdict)", minFlatRounds))
	fs.IntVar(&c.nestedRuns, "nested-runs", minNestedRounds, fmt.Sprintf("rounds of the OTLP, Tempo and cardinality cases (fewer than %d give no verdict)", minNestedRounds))
	fs.StringVar(&names, "cases", "flat,otlp,tempo,cardinality,hops", "cases to run, comma-separated")
	fs.BoolVar(&c.fullSQL, "full-sql", true, "also time DuckDB's full-analysis SQL on the flat files (informational: no target)")
	fs.BoolVar(&c.wide, "wide", true, fmt.Sprintf("the flat case also times, at every size, flat Parquet with %d extra columns no span field takes (flattened attributes)", wideExtra))
	fs.BoolVar(&c.ratio, "ratio", true, "also run tailscope on a tenth of the largest flat size, when -sizes lacks it, to compare peak RSS")
	fs.StringVar(&c.dir, "dir", "", "work folder for data and binaries (default: a temporary folder, removed after)")
	fs.StringVar(&c.duckDir, "duckdb-dir", "", "folder where @duckdb/node-api is (or gets) installed (default: under the work folder)")
	fs.IntVar(&c.threads, "threads", 2, "DuckDB threads")
	fs.BoolVar(&c.keep, "keep", false, "keep the work folder")
	fs.StringVar(&c.results, "results", "", "write the summary to this file")
	c.card = registerCardinality(fs)
	c.hops = registerHops(fs)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if err := c.hops.parse(); err != nil {
		return c, err
	}
	var err error
	if c.sizes, err = parseSizes(sizes); err != nil {
		return c, err
	}
	if c.cases, err = parseCases(names); err != nil {
		return c, err
	}
	if c.card.only || c.hops.only {
		c.cases = cases{card: c.card.only, hops: c.hops.only}
	}
	c.cases.card = c.cases.card && c.card.on
	c.cases.hops = c.cases.hops && c.hops.on
	if c.n < 1000 || c.runs < 1 || c.nestedRuns < 1 {
		return c, errors.New("want -n ≥ 1000, -runs ≥ 1 and -nested-runs ≥ 1")
	}
	return c, nil
}

// parseSizes reads -sizes: span counts of at least 1000, returned ascending.
func parseSizes(s string) ([]int, error) {
	var sizes []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1000 {
			return nil, fmt.Errorf("-sizes %q: want span counts of at least 1000, like 100000,1000000", s)
		}
		if !slices.Contains(sizes, n) {
			sizes = append(sizes, n)
		}
	}
	slices.Sort(sizes)
	return sizes, nil
}

func parseCases(s string) (cases, error) {
	var c cases
	for _, f := range strings.Split(s, ",") {
		switch strings.TrimSpace(f) {
		case "flat":
			c.flat = true
		case "otlp":
			c.otlp = true
		case "tempo":
			c.tempo = true
		case "cardinality":
			c.card = true
		case "hops":
			c.hops = true
		default:
			return c, fmt.Errorf("-cases %q: want some of flat,otlp,tempo,cardinality,hops", s)
		}
	}
	return c, nil
}

func run(args []string, stdout, stderr io.Writer) error {
	c, err := parseFlags(args)
	if err != nil {
		return err
	}
	if c.dir == "" {
		d, err := os.MkdirTemp("", "tailscope-bench-*")
		if err != nil {
			return err
		}
		c.dir = d
		if !c.keep {
			defer os.RemoveAll(d)
		}
	}
	if c.duckDir == "" {
		c.duckDir = filepath.Join(c.dir, "duckdb")
	}
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, "bench: "+format+"\n", a...) }
	start := readMachineState()
	t := tools{bin: filepath.Join(c.dir, "tailscope"), dir: c.dir, threads: c.threads}
	logf("building %s", t.bin)
	if out, err := exec.Command("go", "build", "-o", t.bin, "./cmd/tailscope").CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	res, err := prepare(c, &t, logf)
	if err != nil {
		return err
	}
	threads, vers := 0, versions("")
	if c.cases.duckDB() {
		threads, vers = c.threads, versions(c.duckDir)
	}
	before := readMachineState()
	if err := measureAll(c, t, res, logf); err != nil {
		return err
	}
	after := readMachineState()
	out := machineLines(threads, vers, start, before, after, res.cpu()) + summarize(res)
	fmt.Fprint(stdout, out)
	return writeResults(c.results, out)
}

// prepare installs DuckDB when a case needs it and generates every
// case's files (all before the timed runs, which then run back to back).
func prepare(c config, t *tools, logf func(string, ...any)) (*results, error) {
	res := &results{cases: c.cases, flatRounds: c.runs, nestedRounds: c.nestedRuns, hopsRounds: c.hops.runs}
	if !c.cases.duckDB() {
		return res, nil
	}
	if err := installDuckDB(c.duckDir, logf); err != nil {
		return nil, err
	}
	t.script = filepath.Join(c.duckDir, "query.mjs")
	if err := os.WriteFile(t.script, []byte(nodeScript), 0o644); err != nil {
		return nil, err
	}
	var err error
	if c.cases.flat {
		if res.flat, err = flatGroups(c, *t, logf); err != nil {
			return nil, err
		}
	}
	for _, k := range []struct {
		on  bool
		gen func(config, tools, func(string, ...any)) (*group, error)
	}{{c.cases.otlp, otlpGroup}, {c.cases.tempo, tempoGroup}} {
		if !k.on {
			continue
		}
		g, err := k.gen(c, *t, logf)
		if err != nil {
			return nil, err
		}
		if len(res.nested) > 0 && res.nested[0].spans != g.spans {
			return nil, fmt.Errorf("generated %d spans as %s but %d as %s", g.spans, g.format, res.nested[0].spans, res.nested[0].format)
		}
		res.nested = append(res.nested, g)
	}
	if c.cases.hops {
		if res.hops, err = c.hops.groups(c.dir, *t, true, logf); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// measureAll runs the timed rounds: the flat case's, then the nested
// cases', then the cardinality case, then the hops case's.
func measureAll(c config, t tools, res *results, logf func(string, ...any)) error {
	if err := runRounds("flat", res.flat, c.runs, logf); err != nil {
		return err
	}
	if err := runRounds("nested", res.nested, c.nestedRuns, logf); err != nil {
		return err
	}
	if c.cases.card {
		cr, err := c.card.run(t.bin, c.dir, c.nestedRuns, logf)
		if err != nil {
			return err
		}
		res.card = cr
	}
	return runRounds("hops", res.hops, c.hops.runs, logf)
}

func writeResults(path, res string) error {
	if path == "" {
		return nil
	}
	return os.WriteFile(path, []byte(res), 0o644)
}

// cachedGen generates a file unless a previous run left one for the same n
// (the first line of a .n file beside it records the count). The file is
// written by a child process (the bench run again with $TAILSCOPE_BENCH_GEN
// set, see genChild), so that the bench's own memory stays small: on Linux
// a process os/exec starts inherits its parent's peak RSS as the floor of
// its own ru_maxrss (the child runs on the parent's memory until exec), and
// writing a Tempo block takes 200 MB.
func cachedGen(path string, n int, kind string) (int, error) {
	stamp := path + ".n"
	if b, err := os.ReadFile(stamp); err == nil {
		var want, got int
		if _, err := fmt.Sscanf(string(b), "%d %d", &want, &got); err == nil && want == n {
			if _, err := os.Stat(path); err == nil {
				return got, nil
			}
		}
	}
	if _, err := generator(kind); err != nil {
		return 0, err
	}
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d %s", genEnv, kind, n, path))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("generating %s: %v", path, err)
	}
	var got int
	if _, err := fmt.Sscanf(string(out), "%d", &got); err != nil {
		return 0, fmt.Errorf("generating %s: the generator said %q", path, out)
	}
	return got, os.WriteFile(stamp, []byte(fmt.Sprintf("%d %d\n", n, got)), 0o644)
}

// genEnv names the variable that makes the bench a generator: "KIND N PATH".
const genEnv = "TAILSCOPE_BENCH_GEN"

// generator is the writer of a kind of file: jsonl, parquet, otlp, tempo,
// ids:HOPS (the cardinality case's logs over about HOPS hops) or
// hops:HOPS (the hops case's, over HOPS ordinary hop names).
func generator(kind string) (func(path string, n int) (int, error), error) {
	switch kind {
	case "jsonl":
		return writeJSONL, nil
	case "parquet":
		return writeParquet, nil
	case "parquet-wide":
		return writeWideParquet, nil
	case "otlp":
		return writeOTLP, nil
	case "tempo":
		return writeTempo, nil
	}
	if h, ok := strings.CutPrefix(kind, "ids:"); ok {
		if hops, err := strconv.Atoi(h); err == nil && hops > 0 {
			return func(path string, n int) (int, error) { return writeCardinalityJSONL(path, n, hops) }, nil
		}
	}
	if h, ok := strings.CutPrefix(kind, "hops:"); ok {
		if hops, err := strconv.Atoi(h); err == nil && hops > 0 {
			return func(path string, n int) (int, error) { return writeHopsJSONL(path, n, hops) }, nil
		}
	}
	return nil, fmt.Errorf("no generator for %q", kind)
}

// genChild is the bench as a generator: it writes one file as spec
// ("KIND N PATH") says and prints the number of spans written.
func genChild(spec string) error {
	f := strings.SplitN(spec, " ", 3)
	if len(f) != 3 {
		return fmt.Errorf("%s=%q: want KIND N PATH", genEnv, spec)
	}
	n, err := strconv.Atoi(f[1])
	if err != nil {
		return fmt.Errorf("%s=%q: %v", genEnv, spec, err)
	}
	gen, err := generator(f[0])
	if err != nil {
		return err
	}
	got, err := gen(f[2], n)
	if err != nil {
		return err
	}
	fmt.Println(got)
	return nil
}

func installDuckDB(dir string, logf func(string, ...any)) error {
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@duckdb", "node-api")); err == nil {
		return nil
	}
	logf("npm install --prefix %s @duckdb/node-api", dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cmd := exec.Command("npm", "install", "--no-audit", "--no-fund", "--prefix", dir, "@duckdb/node-api")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("npm install @duckdb/node-api: %v\n%s", err, out)
	}
	return nil
}

func fileSize(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return "?"
	}
	return fmt.Sprintf("%.0f MB", float64(fi.Size())/1e6)
}
