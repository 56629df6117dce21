// Runs the real binary on every broken input of testdata/bad: no panic or hang, counts that add up, --strict.

package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/klauspost/compress/zstd"
)

// The corpus test runs the real binary on every broken input of
// testdata/bad (cases.txt says what each must give) and checks the rules
// that hold for every input: no panic, no hang, read = used + skipped by
// reason, --strict fails on any skip. Exit codes are those of the process,
// not of run().

// The binary is built once by TestMain in check_test.go (binPath).

const (
	badDir  = "../../testdata/bad"
	seedDir = "../../samples/seed-chain"
	// runLimit is how long one run may take before it counts as a hang;
	// the largest case (a 10 MB line) takes well under a second.
	runLimit = 60 * time.Second
)

// result is one run of the binary.
type result struct {
	code           int
	stdout, stderr string
}

// runIn runs the binary in dir with args, feeding stdin from a file when
// stdin is not "". It fails the test on a hang or a panic.
func runIn(t *testing.T, dir, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	if stdin != "" {
		if !filepath.IsAbs(stdin) {
			stdin = filepath.Join(dir, stdin)
		}
		f, err := os.Open(stdin)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.Stdin = f
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("tailscope %s: no answer within %s (hang?)", strings.Join(args, " "), runLimit)
	}
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("tailscope %s: %v", strings.Join(args, " "), err)
	}
	if strings.Contains(r.stderr, "panic:") || strings.Contains(r.stderr, "goroutine ") {
		t.Fatalf("tailscope %s panicked:\n%s", strings.Join(args, " "), r.stderr)
	}
	return r
}

// corpusCase is one line of cases.txt.
type corpusCase struct {
	name   string
	args   []string
	stdin  string
	exit   int
	expect []string
	line   int
}

func readCases(t *testing.T, path string) []corpusCase {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []corpusCase
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.Split(line, "|")
		if len(parts) != 4 {
			t.Fatalf("%s:%d: want NAME | ARGS | EXIT | EXPECT, got %d fields", path, n, len(parts))
		}
		c := corpusCase{name: strings.TrimSpace(parts[0]), line: n}
		words := strings.Fields(parts[1])
		if k := len(words); k >= 2 && words[k-2] == "<" {
			c.stdin, words = words[k-1], words[:k-2]
		}
		c.args = words
		if c.exit, err = strconv.Atoi(strings.TrimSpace(parts[2])); err != nil {
			t.Fatalf("%s:%d: exit %q: %v", path, n, parts[2], err)
		}
		for _, e := range strings.Split(parts[3], ";") {
			if e = strings.TrimSpace(e); e != "" {
				c.expect = append(c.expect, e)
			}
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// reportCounts is the part of the analyze and check JSON that reconciles
// what was read.
type reportCounts struct {
	Schema          string           `json:"schema"`
	Read            int64            `json:"read"`
	Spans           int64            `json:"spans"`
	Skipped         int64            `json:"skipped"`
	SkippedByReason map[string]int64 `json:"skipped_by_reason"`
	SkipExamples    []string         `json:"skip_examples"`
	Hops            []struct {
		Hop string `json:"hop"`
	} `json:"hops"`
	Warnings []struct {
		Code string `json:"code"`
	} `json:"warnings"`
}

func decodeCounts(t *testing.T, what, out string) reportCounts {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("%s: JSON report is not valid UTF-8", what)
	}
	var rc reportCounts
	if err := json.Unmarshal([]byte(out), &rc); err != nil {
		t.Fatalf("%s: report is not JSON: %v\n%.400s", what, err, out)
	}
	if rc.Read != rc.Spans+rc.Skipped {
		t.Errorf("%s: read %d != spans %d + skipped %d", what, rc.Read, rc.Spans, rc.Skipped)
	}
	var sum int64
	for _, n := range rc.SkippedByReason {
		sum += n
	}
	if sum != rc.Skipped {
		t.Errorf("%s: skipped %d but skipped_by_reason sums to %d: %v", what, rc.Skipped, sum, rc.SkippedByReason)
	}
	return rc
}

// expand replaces $GEN and $SEED in a corpus argument.
func expand(arg, gen string) string {
	seed, _ := filepath.Abs(seedDir)
	arg = strings.ReplaceAll(arg, "$GEN", gen)
	return strings.ReplaceAll(arg, "$SEED", seed)
}

func TestCorpus(t *testing.T) {
	gen := genFiles(t)
	cases := readCases(t, filepath.Join(badDir, "cases.txt"))
	if len(cases) < 20 {
		t.Fatalf("only %d cases in cases.txt", len(cases))
	}
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.name] {
			t.Fatalf("cases.txt:%d: case %q listed twice", c.line, c.name)
		}
		seen[c.name] = true
		t.Run(c.name, func(t *testing.T) { runCase(t, c, gen) })
	}
}

func runCase(t *testing.T, c corpusCase, gen string) {
	args := make([]string, len(c.args))
	for i, a := range c.args {
		args[i] = expand(a, gen)
	}
	stdin := expand(c.stdin, gen)
	reportCmd := len(args) > 0 && (args[0] == "analyze" || args[0] == "check")
	full := args
	if reportCmd {
		full = append(append([]string(nil), args...), "--format", "json")
	}
	r := runIn(t, badDir, stdin, full...)
	if r.code != c.exit {
		t.Fatalf("cases.txt:%d: exit %d, want %d\nstderr: %s", c.line, r.code, c.exit, r.stderr)
	}
	var rc reportCounts
	haveReport := reportCmd && (r.code == exitOK || r.code == exitViolation)
	if haveReport {
		rc = decodeCounts(t, c.name, r.stdout)
	}
	reasons := map[string]int64{}
	for _, e := range c.expect {
		key, val, _ := strings.Cut(e, ":")
		switch {
		case key == "stderr":
			if !strings.Contains(r.stderr, val) {
				t.Errorf("cases.txt:%d: stderr lacks %q:\n%s", c.line, val, r.stderr)
			}
		case key == "hop" || key == "warning" || key == "reason" || strings.Contains(e, "="):
			if !haveReport {
				t.Fatalf("cases.txt:%d: %q needs a report, and the run gave none", c.line, e)
			}
			switch key {
			case "hop":
				found := false
				for _, h := range rc.Hops {
					found = found || h.Hop == val
				}
				if !found {
					t.Errorf("cases.txt:%d: no hop %q in %v", c.line, val, rc.Hops)
				}
			case "warning":
				found := false
				for _, w := range rc.Warnings {
					found = found || w.Code == val
				}
				if !found {
					t.Errorf("cases.txt:%d: no warning %q in %v", c.line, val, rc.Warnings)
				}
			case "reason":
				i := strings.LastIndex(val, "=")
				n, err := strconv.ParseInt(val[i+1:], 10, 64)
				if i < 0 || err != nil {
					t.Fatalf("cases.txt:%d: %q: want reason:TEXT=N", c.line, e)
				}
				reasons[val[:i]] = n
			default:
				k, v, _ := strings.Cut(e, "=")
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					t.Fatalf("cases.txt:%d: %q: want KEY=N", c.line, e)
				}
				got := map[string]int64{"read": rc.Read, "spans": rc.Spans, "skipped": rc.Skipped}
				if g, ok := got[k]; !ok {
					t.Fatalf("cases.txt:%d: unknown count %q", c.line, k)
				} else if g != n {
					t.Errorf("cases.txt:%d: %s = %d, want %d", c.line, k, g, n)
				}
			}
		default:
			t.Fatalf("cases.txt:%d: unknown check %q", c.line, e)
		}
	}
	if len(reasons) > 0 {
		for k, want := range reasons {
			if got := rc.SkippedByReason[k]; got != want {
				t.Errorf("cases.txt:%d: skipped_by_reason[%q] = %d, want %d (all: %v)", c.line, k, got, want, rc.SkippedByReason)
			}
		}
		for k, got := range rc.SkippedByReason {
			if _, listed := reasons[k]; !listed {
				t.Errorf("cases.txt:%d: unexpected skip reason %q (%d)", c.line, k, got)
			}
		}
	}
	if !haveReport {
		return
	}
	generalRules(t, c, args, stdin, rc)
}

// generalRules are checked on every case that gives a report: they are
// what makes a held-out input behave, not the case's own line.
func generalRules(t *testing.T, c corpusCase, args []string, stdin string, rc reportCounts) {
	// analyze and check read the same way and report the same counts.
	if args[0] == "analyze" {
		pol, _ := filepath.Abs(filepath.Join(seedDir, "A.yaml"))
		chk := append([]string{"check", "--policy", pol}, args[1:]...)
		r := runIn(t, badDir, stdin, append(chk, "--format", "json")...)
		if r.code != exitOK && r.code != exitViolation {
			t.Fatalf("check on the same input: exit %d: %s", r.code, r.stderr)
		}
		cc := decodeCounts(t, c.name+" (check)", r.stdout)
		if cc.Read != rc.Read || cc.Spans != rc.Spans || cc.Skipped != rc.Skipped || fmt.Sprint(cc.SkippedByReason) != fmt.Sprint(rc.SkippedByReason) {
			t.Errorf("check counts %d/%d/%d %v differ from analyze %d/%d/%d %v",
				cc.Read, cc.Spans, cc.Skipped, cc.SkippedByReason, rc.Read, rc.Spans, rc.Skipped, rc.SkippedByReason)
		}
		// Every human format renders the same input as valid text.
		for _, f := range []string{"text", "markdown", "html"} {
			r := runIn(t, badDir, stdin, append(append([]string(nil), args...), "--format", f)...)
			if r.code != exitOK {
				t.Errorf("--format %s: exit %d: %s", f, r.code, r.stderr)
			}
			if !utf8.ValidString(r.stdout) {
				t.Errorf("--format %s: output is not valid UTF-8", f)
			}
		}
	}
	// --strict turns any skip into exit 1 naming the first positions.
	r := runIn(t, badDir, stdin, append(append([]string(nil), args...), "--strict", "--format", "json")...)
	if rc.Skipped == 0 {
		if r.code != c.exit {
			t.Errorf("--strict with nothing skipped: exit %d, want %d: %s", r.code, c.exit, r.stderr)
		}
		return
	}
	if r.code != exitError {
		t.Fatalf("--strict with %d skipped: exit %d, want 1", rc.Skipped, r.code)
	}
	want := fmt.Sprintf("--strict: %d of %d records skipped", rc.Skipped, rc.Read)
	if !strings.Contains(r.stderr, want) {
		t.Errorf("--strict: stderr lacks %q:\n%s", want, r.stderr)
	}
	if len(rc.SkipExamples) == 0 || !strings.Contains(r.stderr, rc.SkipExamples[0]) {
		t.Errorf("--strict: stderr does not name the first skipped record %q:\n%s", rc.SkipExamples, r.stderr)
	}
	if r.stdout != "" {
		t.Errorf("--strict failure still wrote a report: %.200s", r.stdout)
	}
}

// genFiles writes the cases too big or too binary to commit, and returns
// their folder ($GEN in cases.txt). Each is made by a general operation on
// a valid input — cut short, nested, padded — not written byte by byte.
func genFiles(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	seed, err := os.ReadFile(filepath.Join(seedDir, "spans.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(seed), "\n")
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	half := func(b []byte) []byte { return b[:len(b)/2] }

	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(seed)
	zw.Close()
	write("good.jsonl.gz", gz.Bytes())
	write("truncated.jsonl.gz", half(gz.Bytes()))
	write("garbage.gz", append([]byte{0x1f, 0x8b}, []byte("not deflate at all")...))
	enc, _ := zstd.NewWriter(nil)
	write("truncated.jsonl.zst", half(enc.EncodeAll(seed, nil)))
	enc.Close()

	// A 10 MB line between two good ones.
	long := `{"hop":"` + strings.Repeat("x", 10<<20) + `","duration_ms":1}` + "\n"
	write("long-line.jsonl", []byte(lines[0]+long+lines[1]))

	// 10,000 levels of nesting, in each JSON shape.
	deep := strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000)
	write("deep.jsonl", []byte(`{"hop":"x","duration_ms":1,"attributes":`+deep+"}\n"+lines[0]))
	arr := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	write("deep-otlp.json", []byte(`{"resourceSpans":`+arr+`}`))
	write("deep-zipkin.json", []byte(arr))
	write("deep-jaeger.json", []byte(`{"data":[{"traceID":"t","spans":[{"traceID":"t","spanID":"s","tags":`+arr+`}]}]}`))

	// A Zipkin span bigger than --max-record 64 KiB, then a good one.
	span := func(id, extra string) string {
		return `{"traceId":"aa","id":"` + id + `","name":"get","timestamp":1700000000000000,"duration":1500,"localEndpoint":{"serviceName":"s"}` + extra + `}`
	}
	write("huge-zipkin.json", []byte("["+span("01", `,"tags":{"big":"`+strings.Repeat("y", 100<<10)+`"}`)+",\n"+span("02", "")+"]"))

	// A CSV quoted field left open over a million lines (6 MB), with
	// escaped quotes on every line, closed at the end: linear work, or a
	// hang.
	write("csv-open-quote.csv", []byte("trace_id,hop,duration_ms\nt1,a,1\n\"t"+strings.Repeat("a\"\"b,1\n", 1<<20)+"end\",h,1\nt2,b,2\n"))

	// One trace whose spans form a single parent chain 50,000 deep:
	// recursion over the tree must not blow the stack, and a trace larger
	// than --sample-spans must still be reported.
	var chain strings.Builder
	for i := 0; i < 50000; i++ {
		parent := ""
		if i > 0 {
			parent = fmt.Sprintf(`"parent_id":"s%d",`, i-1)
		}
		fmt.Fprintf(&chain, `{"trace_id":"t","span_id":"s%d",%s"hop":"h%d","start":%d,"duration_ns":%d}`+"\n", i, parent, i%3, 1000+i, 2*(50000-i))
	}
	write("deep-chain.jsonl", []byte(chain.String()))

	// Parquet and Arrow files cut in half, made by convert from the seed.
	for _, ext := range []string{"parquet", "arrow"} {
		out := filepath.Join(dir, "good."+ext)
		if r := runIn(t, dir, "", "convert", "-q", filepath.Join(mustAbs(t, seedDir), "spans.jsonl"), "-o", out); r.code != 0 {
			t.Fatalf("convert to %s: exit %d: %s", ext, r.code, r.stderr)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		write("truncated."+ext, half(b))
	}
	if err := os.Mkdir(filepath.Join(dir, "empty-dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
