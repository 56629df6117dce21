// Command bench measures tailscope against DuckDB on the same span logs
// (docs/DESIGN.md §9, issue 8) and prints medians, ratios and peak RSS.
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
// included for both) and its peak RSS read from the kernel's rusage.
//
// With -ratio (default) it also runs tailscope on N/10 spans, to show that
// peak memory does not grow with the input.
//
// With -cardinality (default) it also measures hop names that carry ids
// (GET /users/12345): -card-n spans (1M) at each of -card-hops distinct
// hops (1k and 200k), analyze to JSON and to text and recommend, and the
// ratios between the largest and the smallest hop count.
// -cardinality-only runs just that (no DuckDB, no npm):
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
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"
)

func main() {
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

	bin := filepath.Join(c.dir, "tailscope")
	logf("building %s", bin)
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/tailscope").CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	if card.only {
		res, err := card.run(bin, c.dir, c.runs, logf)
		fmt.Fprint(stdout, res)
		return err
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
	nj, err := cachedGen(jsonl, c.n, writeJSONL)
	if err != nil {
		return err
	}
	np, err := cachedGen(pq, c.n, writeParquet)
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
		if _, err := cachedGen(small, c.n/10, writeJSONL); err != nil {
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
		{name: "tailscope analyze, JSONL", cmd: ts(jsonl)},
		{name: "DuckDB quantile query, JSONL", cmd: duck(qj)},
		{name: "DuckDB full-analysis SQL, JSONL", cmd: duck(fj)},
		{name: "tailscope analyze, Parquet", cmd: ts(pq)},
		{name: "DuckDB quantile query, Parquet", cmd: duck(qp)},
		{name: "DuckDB full-analysis SQL, Parquet", cmd: duck(fp)},
	}
	if c.ratio {
		contenders = append(contenders, contender{name: fmt.Sprintf("tailscope analyze, JSONL, %d spans", c.n/10), cmd: ts(small)})
	}
	otlp, err := otlpContenders(c, nj, logf, ts, duck, sql)
	if err != nil {
		return err
	}
	contenders = append(contenders, otlp...)
	// A warm-up pass puts the files in the page cache for everyone.
	for _, p := range []string{jsonl, pq} {
		if err := warm(p); err != nil {
			return err
		}
	}
	for r := 0; r < c.runs; r++ {
		for i := range contenders {
			k := &contenders[i]
			m, err := measure(k.cmd)
			if err != nil {
				return fmt.Errorf("%s: %v", k.name, err)
			}
			logf("run %d/%d %-45s %8.3fs  %6.0f MB", r+1, c.runs, k.name, m.wall.Seconds(), m.rssMB)
			k.m = append(k.m, m)
		}
	}
	res := summarize(c, nj, contenders)
	if card.on {
		cr, err := card.run(bin, c.dir, c.runs, logf)
		if err != nil {
			return err
		}
		res += cr
	}
	fmt.Fprint(stdout, res)
	if c.results != "" {
		return os.WriteFile(c.results, []byte(res), 0o644)
	}
	return nil
}

// cachedGen generates a file unless a previous run left one for the same n
// (the first line of a .n file beside it records the count).
func cachedGen(path string, n int, gen func(string, int) (int, error)) (int, error) {
	stamp := path + ".n"
	if b, err := os.ReadFile(stamp); err == nil {
		var want, got int
		if _, err := fmt.Sscanf(string(b), "%d %d", &want, &got); err == nil && want == n {
			if _, err := os.Stat(path); err == nil {
				return got, nil
			}
		}
	}
	got, err := gen(path, n)
	if err != nil {
		return 0, err
	}
	return got, os.WriteFile(stamp, []byte(fmt.Sprintf("%d %d\n", n, got)), 0o644)
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
	m    []measurement
}

type measurement struct {
	wall  time.Duration
	rssMB float64
}

// measure runs one process to completion: wall time from start to exit
// and its peak resident set (ru_maxrss, which Linux gives in KiB).
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
	return measurement{wall: wall, rssMB: float64(ru.Maxrss) * 1024 / 1e6}, nil
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

func summarize(c config, n int, ks []contender) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Machine: %s, %d CPUs (GOMAXPROCS %d), %s; %s; DuckDB threads %d\n", cpuModel(), runtime.NumCPU(), runtime.GOMAXPROCS(0), memTotal(), runtime.Version(), c.threads)
	fmt.Fprintf(&b, "Data: %d spans, %d runs each, alternating; median wall time (process start to exit) and median peak RSS\n\n", n, c.runs)
	fmt.Fprintf(&b, "| contender | median s | runs (s) | peak RSS MB |\n|---|---:|---|---:|\n")
	for i := range ks {
		w, r := ks[i].medians()
		var runs []string
		for _, m := range ks[i].m {
			runs = append(runs, fmt.Sprintf("%.2f", m.wall.Seconds()))
		}
		fmt.Fprintf(&b, "| %s | %.3f | %s | %.0f |\n", ks[i].name, w, strings.Join(runs, " "), r)
	}
	tsJ, _ := ks[0].medians()
	dqJ, _ := ks[1].medians()
	dfJ, _ := ks[2].medians()
	tsP, _ := ks[3].medians()
	dqP, _ := ks[4].medians()
	dfP, _ := ks[5].medians()
	maxRSS := func(idx ...int) float64 {
		m := 0.0
		for _, i := range idx {
			_, r := ks[i].medians()
			m = max(m, r)
		}
		return m
	}
	_, rssTS := ks[0].medians()
	_, rssTSP := ks[3].medians()
	duckMin := min(maxRSS(1), maxRSS(2), maxRSS(4), maxRSS(5))
	check := func(ok bool) string {
		if ok {
			return "met"
		}
		return "NOT met"
	}
	fmt.Fprintf(&b, "\nRatios (DuckDB time / tailscope time; above 1 means tailscope is faster):\n\n")
	fmt.Fprintf(&b, "- JSONL: tailscope full analysis vs DuckDB quantile query: %.2f× (target > 1: %s)\n", dqJ/tsJ, check(dqJ/tsJ > 1))
	fmt.Fprintf(&b, "- JSONL: vs DuckDB full-analysis SQL: %.2f×\n", dfJ/tsJ)
	fmt.Fprintf(&b, "- Parquet: tailscope full analysis vs DuckDB quantile query: %.2f× (target ≥ 0.5: %s)\n", dqP/tsP, check(dqP/tsP >= 0.5))
	fmt.Fprintf(&b, "- Parquet: vs DuckDB full-analysis SQL: %.2f× (target > 1: %s)\n", dfP/tsP, check(dfP/tsP > 1))
	fmt.Fprintf(&b, "- Peak RSS: tailscope %.0f MB (JSONL), %.0f MB (Parquet); smallest DuckDB peak %.0f MB (target: not above DuckDB's: %s)\n",
		rssTS, rssTSP, duckMin, check(max(rssTS, rssTSP) <= duckMin))
	if c.ratio && len(ks) > 6 {
		_, rssSmall := ks[6].medians()
		fmt.Fprintf(&b, "- Peak RSS at %d spans / at %d spans: %.0f / %.0f MB = %.2f× (target ≤ 1.5: %s)\n",
			n, c.n/10, rssTS, rssSmall, rssTS/rssSmall, check(rssTS/rssSmall <= 1.5))
	}
	b.WriteString(otlpRatios(ks))
	return b.String()
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

func memTotal() string {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "memory unknown"
	}
	var kb int64
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "MemTotal:") {
			fmt.Sscanf(strings.TrimPrefix(l, "MemTotal:"), "%d", &kb)
		}
	}
	return fmt.Sprintf("%.0f GB RAM", float64(kb)/1e6)
}
