// Command bench measures tailscope against DuckDB on the same span logs
// (docs/DESIGN.md §9) and prints medians, ratios and peak RSS.
//
//	go run ./bench              # 10M spans (the DESIGN's bar)
//	go run ./bench -n 1000000   # smaller, quicker
//
// It generates N spans of a realistic shape (a gateway calling eleven
// hops, lognormal bodies, an 8% tail of 8–11 s on one slow hop cut at a 3 s
// timeout and retried twice, transient 503s) as flat JSON lines and as
// Parquet, builds the tailscope binary, installs @duckdb/node-api from npm
// into a temporary folder, and runs, alternating, each contender -runs
// times: tailscope analyze (full analysis, JSON report to /dev/null);
// DuckDB's per-hop quantile_cont query; and DuckDB running SQL that does
// what tailscope does (per-hop quantiles, time-to-success, failure
// histogram, retry yield, request outcomes). DuckDB gets 2 threads, the
// machine's cores. Each process is timed from start to exit (start-up
// included for both) and its peak RSS read from the kernel's rusage;
// before each run its input file is read through, untimed, so that every
// run starts with the file in the page cache (see measureWarm).
//
// With -ratio (default) it also runs tailscope on N/10 spans, to show that
// peak memory does not grow with the input.
//
// It also writes the same spans as OTLP JSON lines (the collector's file
// exporter) and as a Grafana Tempo vParquet4 block, and times tailscope on
// each against DuckDB unnesting the same nesting (otlp.go, tempo.go).
//
// With -cardinality (default) it also measures hop names that carry ids
// (GET /users/12345): -card-n spans (1M) at each of -card-hops distinct
// hops (1k and 200k), analyze to JSON and to text and recommend, and the
// ratios between the largest and the smallest hop count.
//
// The summary starts with the machine's state: CPU model and count, the
// Go and DuckDB versions, the load averages at the start, before the
// timed runs and after them, and the CPU time the timed runs' processes
// did not spend (other work on the machine); it ends with the
// performance targets (tailscope's full analysis at least 1.0× DuckDB's
// quantile query on Parquet, 1.3× on JSON lines, 5× on OTLP JSON lines;
// peak RSS at n spans at most 1.5× that at n/10; cost linear in hop
// cardinality), each met or NOT met.
//
// -cardinality-only runs just the cardinality case (no DuckDB, no npm):
//
//	go run ./bench -cardinality-only -runs 1
//
// The benchmark is a tool, not a test: it needs node, npm and the network
// once, and minutes of machine time. Nothing else in the repository uses
// it.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
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
	n       int
	runs    int
	dir     string
	duckDir string
	threads int
	ratio   bool
	keep    bool
	results string
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var c config
	fs.IntVar(&c.n, "n", 10_000_000, "number of spans to generate")
	fs.IntVar(&c.runs, "runs", 3, "runs of each contender (alternating)")
	fs.StringVar(&c.dir, "dir", "", "work folder for data and binaries (default: a temporary folder, removed after)")
	fs.StringVar(&c.duckDir, "duckdb-dir", "", "folder where @duckdb/node-api is (or gets) installed (default: under the work folder)")
	fs.IntVar(&c.threads, "threads", 2, "DuckDB threads")
	fs.BoolVar(&c.ratio, "ratio", true, "also run tailscope on n/10 spans to compare peak RSS")
	fs.BoolVar(&c.keep, "keep", false, "keep the work folder")
	fs.StringVar(&c.results, "results", "", "write a Markdown table of the results to this file")
	card := registerCardinality(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if c.n < 1000 || c.runs < 1 {
		return errors.New("want -n ≥ 1000 and -runs ≥ 1")
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

	bin := filepath.Join(c.dir, "tailscope")
	logf("building %s", bin)
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/tailscope").CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	if card.only {
		before := readMachineState()
		cr, err := card.run(bin, c.dir, c.runs, logf)
		if err != nil {
			return err
		}
		after := readMachineState()
		res := machineLines(0, versions(""), start, before, after, cr.cpu()) + cr.String() + "\nTargets:\n\n" + cr.target()
		fmt.Fprint(stdout, res)
		return writeResults(c.results, res)
	}
	if err := installDuckDB(c.duckDir, logf); err != nil {
		return err
	}
	script := filepath.Join(c.duckDir, "query.mjs")
	if err := os.WriteFile(script, []byte(nodeScript), 0o644); err != nil {
		return err
	}

	jsonl := filepath.Join(c.dir, "spans.jsonl")
	pq := filepath.Join(c.dir, "spans.parquet")
	t := time.Now()
	nj, err := cachedGen(jsonl, c.n, "jsonl")
	if err != nil {
		return err
	}
	np, err := cachedGen(pq, c.n, "parquet")
	if err != nil {
		return err
	}
	if nj != np {
		return fmt.Errorf("generated %d JSON lines but %d Parquet rows", nj, np)
	}
	logf("generated %d spans in %s (%s JSONL, %s Parquet)", nj, time.Since(t).Round(time.Millisecond), size(jsonl), size(pq))

	var small string
	if c.ratio {
		small = filepath.Join(c.dir, "spans-small.jsonl")
		if _, err := cachedGen(small, c.n/10, "jsonl"); err != nil {
			return err
		}
	}

	sql := func(name, q string) (string, error) {
		p := filepath.Join(c.dir, name+".sql")
		return p, os.WriteFile(p, []byte(q), 0o644)
	}
	jsonSrc := fmt.Sprintf("read_ndjson('%s', columns=%s)", jsonl, jsonColumns)
	pqSrc := fmt.Sprintf("read_parquet('%s')", pq)
	qj, _ := sql("quantile-jsonl", quantileSQL(jsonSrc, "duration_ms"))
	qp, _ := sql("quantile-parquet", quantileSQL(pqSrc, "duration_ns / 1e6"))
	fj, _ := sql("full-jsonl", fullSQL(jsonSrc, "duration_ms"))
	fp, err := sql("full-parquet", fullSQL(pqSrc, "duration_ns / 1e6"))
	if err != nil {
		return err
	}
	ts := func(path string) []string {
		return []string{bin, "analyze", "--format", "json", "-o", os.DevNull, "-q", path}
	}
	duck := func(file string) []string {
		return []string{"node", script, file, fmt.Sprint(c.threads)}
	}
	contenders := []contender{
		{name: tsJSONL, cmd: ts(jsonl), in: jsonl},
		{name: dqJSONL, cmd: duck(qj), in: jsonl},
		{name: dfJSONL, cmd: duck(fj), in: jsonl},
		{name: tsParquet, cmd: ts(pq), in: pq},
		{name: dqParquet, cmd: duck(qp), in: pq},
		{name: dfParquet, cmd: duck(fp), in: pq},
	}
	if c.ratio {
		contenders = append(contenders, contender{name: smallName(c), cmd: ts(small), in: small})
	}
	otlp, err := otlpContenders(c, nj, logf, ts, duck, sql)
	if err != nil {
		return err
	}
	contenders = append(contenders, otlp...)
	tempo, err := tempoContenders(c, nj, logf, ts, duck, sql)
	if err != nil {
		return err
	}
	contenders = append(contenders, tempo...)
	vers := versions(c.duckDir)
	before := readMachineState()
	for r := 0; r < c.runs; r++ {
		for i := range contenders {
			k := &contenders[i]
			m, err := measureWarm(k.cmd, k.in)
			if err != nil {
				return fmt.Errorf("%s: %v", k.name, err)
			}
			logf("run %d/%d %-45s %8.3fs  %6.0f MB", r+1, c.runs, k.name, m.wall.Seconds(), m.rssMB)
			k.m = append(k.m, m)
		}
	}
	var cr *cardResult
	if card.on {
		if cr, err = card.run(bin, c.dir, c.runs, logf); err != nil {
			return err
		}
	}
	after := readMachineState()
	var ours time.Duration
	for _, k := range contenders {
		for _, m := range k.m {
			ours += m.cpu
		}
	}
	if cr != nil {
		ours += cr.cpu()
	}
	res := machineLines(c.threads, vers, start, before, after, ours) + summarize(c, nj, contenders, cr)
	fmt.Fprint(stdout, res)
	return writeResults(c.results, res)
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
// or ids:HOPS (the cardinality case's logs over about HOPS hops).
func generator(kind string) (func(path string, n int) (int, error), error) {
	switch kind {
	case "jsonl":
		return writeJSONL, nil
	case "parquet":
		return writeParquet, nil
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

func warm(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(io.Discard, f)
	return err
}

func size(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return "?"
	}
	return fmt.Sprintf("%.0f MB", float64(fi.Size())/1e6)
}

type contender struct {
	name string
	cmd  []string
	in   string // the input file, read through before each run (see measureWarm)
	m    []measurement
}

type measurement struct {
	wall  time.Duration
	cpu   time.Duration // user + system
	rssMB float64
}

// measure runs one process to completion: wall time from start to exit,
// its CPU time (user + system, its children's included: Node's threads
// are its own) and its peak resident set (ru_maxrss, which Linux gives in
// KiB).
func measure(argv []string) (measurement, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	var errb bytes.Buffer
	cmd.Stdout = io.Discard
	cmd.Stderr = &errb
	t := time.Now()
	err := cmd.Run()
	wall := time.Since(t)
	if err != nil {
		return measurement{}, fmt.Errorf("%v\n%s", err, tail(errb.String(), 2000))
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return measurement{}, errors.New("no rusage on this platform")
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return measurement{wall: wall, cpu: cpu, rssMB: float64(ru.Maxrss) * 1024 / 1e6}, nil
}

// measureWarm is measure after reading the input file through, untimed,
// so that every run starts with the file in the page cache. One warm-up
// at the start is not enough: this machine's kernel reclaims pages that
// went unread for a while (DAMON), so after minutes of other contenders
// the first run of a round read part of its file from disk (a JSON-lines
// run took 2.9, 5.6 and 4.0 s in one bench, the contender after it, on
// the pages it had just brought back, 3.6–4.3 s).
func measureWarm(argv []string, in string) (measurement, error) {
	if in != "" {
		if err := warm(in); err != nil {
			return measurement{}, err
		}
	}
	return measure(argv)
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func (k *contender) medians() (wall, rss float64) {
	var w, r []float64
	for _, m := range k.m {
		w = append(w, m.wall.Seconds())
		r = append(r, m.rssMB)
	}
	return median(w), median(r)
}

func (k *contender) medianCPU() float64 {
	var c []float64
	for _, m := range k.m {
		c = append(c, m.cpu.Seconds())
	}
	return median(c)
}

// The contenders' names, by which the summary finds them.
const (
	tsJSONL   = "tailscope analyze, JSONL"
	dqJSONL   = "DuckDB quantile query, JSONL"
	dfJSONL   = "DuckDB full-analysis SQL, JSONL"
	tsParquet = "tailscope analyze, Parquet"
	dqParquet = "DuckDB quantile query, Parquet"
	dfParquet = "DuckDB full-analysis SQL, Parquet"
)

func smallName(c config) string { return fmt.Sprintf("tailscope analyze, JSONL, %d spans", c.n/10) }

// summarize is the results after the machine's lines: the table of
// contenders, the cardinality case's, every ratio, and the performance targets.
func summarize(c config, n int, ks []contender, cr *cardResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Data: %d spans, %d runs each, alternating; median wall time (process start to exit), median CPU time (user + system) and median peak RSS\n\n", n, c.runs)
	fmt.Fprintf(&b, "| contender | median s | runs (s) | CPU s | peak RSS MB |\n|---|---:|---|---:|---:|\n")
	for i := range ks {
		w, r := ks[i].medians()
		var runs []string
		for _, m := range ks[i].m {
			runs = append(runs, fmt.Sprintf("%.2f", m.wall.Seconds()))
		}
		fmt.Fprintf(&b, "| %s | %.3f | %s | %.2f | %.0f |\n", ks[i].name, w, strings.Join(runs, " "), ks[i].medianCPU(), r)
	}
	if cr != nil {
		b.WriteString(cr.String())
	}
	// med is a contender's median wall time and peak RSS; ok is false when
	// it was not run.
	med := func(name string) (wall, rss float64, ok bool) {
		for i := range ks {
			if ks[i].name == name && len(ks[i].m) > 0 {
				w, r := ks[i].medians()
				return w, r, true
			}
		}
		return 0, 0, false
	}
	// ratio is DuckDB's median time over tailscope's.
	ratio := func(duck, ts string) (float64, bool) {
		d, _, ok1 := med(duck)
		t, _, ok2 := med(ts)
		return d / t, ok1 && ok2 && t > 0
	}
	check := func(ok bool) string {
		if ok {
			return "met"
		}
		return "NOT met"
	}

	fmt.Fprintf(&b, "\nRatios (DuckDB time / tailscope time; above 1 means tailscope is faster):\n\n")
	line := func(what, duck, ts string) {
		if r, ok := ratio(duck, ts); ok {
			fmt.Fprintf(&b, "- %s: %.2f×\n", what, r)
		}
	}
	line("JSONL: tailscope full analysis vs DuckDB quantile query", dqJSONL, tsJSONL)
	line("JSONL: vs DuckDB full-analysis SQL", dfJSONL, tsJSONL)
	line("Parquet: tailscope full analysis vs DuckDB quantile query", dqParquet, tsParquet)
	line("Parquet: vs DuckDB full-analysis SQL", dfParquet, tsParquet)
	line("OTLP JSON lines: tailscope full analysis vs DuckDB read_json + unnest quantile query", otlpDuck, otlpTS)
	line("Tempo vParquet4 block: tailscope full analysis vs DuckDB read_parquet + unnest quantile query", tempoDuck, tempoTS)
	var duckMin, tsMax float64
	for i := range ks {
		_, r := ks[i].medians()
		switch {
		case strings.HasPrefix(ks[i].name, "DuckDB") && (duckMin == 0 || r < duckMin):
			duckMin = r
		case strings.HasPrefix(ks[i].name, "tailscope") && r > tsMax:
			tsMax = r
		}
	}
	fmt.Fprintf(&b, "- Peak RSS: tailscope at most %.0f MB, DuckDB at least %.0f MB\n", tsMax, duckMin)

	fmt.Fprintf(&b, "\nTargets:\n\n")
	target := func(what, duck, ts string, want float64) {
		if r, ok := ratio(duck, ts); ok {
			fmt.Fprintf(&b, "- %s: %.2f× (target ≥ %.1f: %s)\n", what, r, want, check(r >= want))
		} else {
			fmt.Fprintf(&b, "- %s: not run\n", what)
		}
	}
	target("Parquet: tailscope full analysis vs DuckDB quantile query", dqParquet, tsParquet, 1.0)
	target("JSONL: tailscope full analysis vs DuckDB quantile query", dqJSONL, tsJSONL, 1.3)
	target("OTLP JSON lines: tailscope full analysis vs DuckDB read_json + unnest quantile query", otlpDuck, otlpTS, 5)
	_, big, ok1 := med(tsJSONL)
	_, small, ok2 := med(smallName(c))
	if ok1 && ok2 {
		fmt.Fprintf(&b, "- Peak RSS at %d spans / at %d spans (JSONL): %.0f / %.0f MB = %.2f× (target ≤ 1.5: %s)\n",
			n, c.n/10, big, small, big/small, check(big/small <= 1.5))
	} else {
		fmt.Fprintf(&b, "- Peak RSS at n / at n/10 spans: not run (-ratio=false)\n")
	}
	if cr != nil {
		b.WriteString(cr.target())
	} else {
		fmt.Fprintf(&b, "- Cost linear in hop cardinality: not run (-cardinality=false)\n")
	}
	if r, ok := ratio(tempoDuck, tempoTS); ok {
		fmt.Fprintf(&b, "- Tempo vParquet4 block: tailscope full analysis vs DuckDB read_parquet + unnest quantile query: %.2f× (no target set: reported)\n", r)
	}
	return b.String()
}
