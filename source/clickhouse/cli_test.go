package clickhouse_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tailscope/tailscope/ingest"
)

// buildCLI builds cmd/tailscope into a temporary folder.
func buildCLI(t *testing.T) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the CLI with")
	}
	bin := filepath.Join(t.TempDir(), "tailscope")
	cmd := exec.Command(gobin, "build", "-o", bin, "./cmd/tailscope")
	cmd.Dir = repo()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// cli runs the binary with env added, returning its exit code and output.
func cli(t *testing.T, bin string, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, stdout.String(), stderr.String()
}

// TestCLI: through the binary, the flags and the environment reach the
// read: analyze of a ClickHouse window, pulled and computed on the
// server, prints the file's hops, requests and policy, recommend writes
// the file's policy, --hops is applied (pushed down too), and
// a refused password is exit 1 with a message that does not show it.
func TestCLI(t *testing.T) {
	const key = "k3y-" + "not-printed"
	e := startEngine(t, key)
	bin := buildCLI(t)
	fx := fixtures[0]
	otlp := otlpLines(asOTLP(spansOf(t, fx.path, fx.opt), fx.service))
	dir := t.TempDir()
	file := filepath.Join(dir, "seed.otlp.jsonl")
	if err := os.WriteFile(file, otlp, 0o666); err != nil {
		t.Fatal(err)
	}
	e.createExporterTable(t, "otel", "seed")
	e.load(t, "otel", "seed", otlp)
	since, until := window(spansOf(t, file, fx.opt))
	win := []string{"--since", since.UTC().Format(time.RFC3339Nano), "--until", until.UTC().Format(time.RFC3339Nano)}
	url := "clickhouse://" + e.host + "/otel?table=seed"
	env := []string{"CLICKHOUSE_USER=default", "CLICKHOUSE_PASSWORD=" + key}
	type report struct {
		Hops, Requests, RecommendedPolicy json.RawMessage
	}
	read := func(path string) report {
		var r struct {
			Hops              json.RawMessage `json:"hops"`
			Requests          json.RawMessage `json:"requests"`
			RecommendedPolicy json.RawMessage `json:"recommended_policy"`
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		return report{r.Hops, r.Requests, r.RecommendedPolicy}
	}
	for _, extra := range [][]string{nil, {"--hops", "^chain (forward|generate)"}} {
		for _, mode := range []string{"pull", "auto"} {
			a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
			if code, _, stderr := cli(t, bin, nil, append([]string{"analyze", file, "-f", "json", "-o", a, "-q"}, extra...)...); code != 0 {
				t.Fatalf("analyze FILE: exit %d: %s", code, stderr)
			}
			code, _, stderr := cli(t, bin, env, append(append([]string{"analyze", url, "-f", "json", "-o", b, "--clickhouse-mode", mode}, win...), extra...)...)
			if code != 0 {
				t.Fatalf("analyze URL: exit %d: %s", code, stderr)
			}
			said := "tailscope: read " + url // pulled
			if mode == "auto" {
				said = "tailscope: computed on the server " + url
			}
			if !strings.Contains(stderr, said) || strings.Contains(stderr, key) {
				t.Errorf("%s: stderr: %s", mode, stderr)
			}
			ra, rb := read(a), read(b)
			if !bytes.Equal(ra.Hops, rb.Hops) || !bytes.Equal(ra.Requests, rb.Requests) || !bytes.Equal(ra.RecommendedPolicy, rb.RecommendedPolicy) {
				t.Errorf("%v, %s: the reports differ", extra, mode)
			}
		}
	}
	pa, pb := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	if code, _, stderr := cli(t, bin, nil, "recommend", file, "-o", pa, "-q"); code != 0 {
		t.Fatalf("recommend FILE: exit %d: %s", code, stderr)
	}
	if code, _, stderr := cli(t, bin, env, append([]string{"recommend", url, "-o", pb, "-q"}, win...)...); code != 0 {
		t.Fatalf("recommend URL: exit %d: %s", code, stderr)
	}
	ya, _ := os.ReadFile(pa)
	yb, _ := os.ReadFile(pb)
	// The first line names the input.
	if !bytes.HasPrefix(yb, []byte("# Recommended by tailscope from "+url+" (")) {
		t.Errorf("the policy's first line: %.120s", yb)
	}
	_, ya, _ = bytes.Cut(ya, []byte("\n"))
	_, yb, _ = bytes.Cut(yb, []byte("\n"))
	if len(ya) == 0 || !bytes.Equal(ya, yb) {
		t.Errorf("the policies differ:\n%s\n---\n%s", ya, yb)
	}
	code, stdout, stderr := cli(t, bin, []string{"CLICKHOUSE_PASSWORD=wrong-" + key}, append([]string{"analyze", url}, win...)...)
	if code != 1 || !strings.Contains(stderr, "AUTHENTICATION_FAILED") || strings.Contains(stdout+stderr, key) {
		t.Errorf("a refused password: exit %d\n%s%s", code, stdout, stderr)
	}
}

// TestCLIPushdown: through the binary, analyze, recommend, check and
// summarize of a ClickHouse window compute it on the server (stderr says
// so, with the bytes over the wire, and so does the report's note) and
// print what they print for the OTLP file of the same spans: every field
// of every hop (attempts, failures, percentiles, classes, attribution),
// the requests, the recommended policy, check's verdicts and replays, and
// the summary's report. --clickhouse-mode pull pulls (the same numbers);
// a read the push-down cannot compute exactly (--hop-by service) is
// pulled with a note saying why, and is an error under
// --clickhouse-mode pushdown.
func TestCLIPushdown(t *testing.T) {
	e := startEngine(t, "")
	bin := buildCLI(t)
	dir := t.TempDir()
	otlp := attrSpans(3000, 5, false)
	file := filepath.Join(dir, "attrs.otlp.jsonl")
	if err := os.WriteFile(file, otlp, 0o666); err != nil {
		t.Fatal(err)
	}
	e.createExporterTable(t, "otel", "cli_attrs")
	e.load(t, "otel", "cli_attrs", otlp)
	since, until := window(spansOf(t, file, ingest.Options{}))
	win := []string{"--since", since.UTC().Format(time.RFC3339Nano), "--until", until.UTC().Format(time.RFC3339Nano)}
	url := "clickhouse://" + e.host + "/otel?table=cli_attrs"
	type report struct {
		Hops, Requests, RecommendedPolicy json.RawMessage
		Notes                             []string
		// Rest is the whole report but its inputs and notes (which name
		// the input and say how it was read).
		Rest string
	}
	read := func(path string) report {
		var r struct {
			Hops              json.RawMessage `json:"hops"`
			Requests          json.RawMessage `json:"requests"`
			RecommendedPolicy json.RawMessage `json:"recommended_policy"`
			Notes             []string        `json:"notes"`
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return report{r.Hops, r.Requests, r.RecommendedPolicy, r.Notes, checkJSON(t, path)}
	}
	const pushed = "tailscope: computed on the server " // the stderr line
	same := func(what string, a, b report) {
		t.Helper()
		for _, x := range []struct {
			name string
			a, b json.RawMessage
		}{{"hops", a.Hops, b.Hops}, {"requests", a.Requests, b.Requests}, {"recommended policy", a.RecommendedPolicy, b.RecommendedPolicy}} {
			if len(x.a) < 3 || !bytes.Equal(x.a, x.b) {
				t.Errorf("%s: the %s differ:\n%s", what, x.name, firstDiff(string(x.a), string(x.b)))
			}
		}
		if a.Rest != b.Rest {
			t.Errorf("%s: the reports differ:\n%s", what, firstDiff(a.Rest, b.Rest))
		}
	}
	fileJSON := filepath.Join(dir, "file.json")
	if code, _, stderr := cli(t, bin, nil, "analyze", file, "-f", "json", "-o", fileJSON, "-q"); code != 0 {
		t.Fatalf("analyze FILE: exit %d: %s", code, stderr)
	}
	want := read(fileJSON)
	if !strings.Contains(string(want.Hops), `"attribution"`) {
		t.Fatalf("the file's report has no attribution to compare")
	}
	for _, mode := range []string{"auto", "pushdown", "pull"} {
		out := filepath.Join(dir, mode+".json")
		code, _, stderr := cli(t, bin, nil, append([]string{"analyze", url, "-f", "json", "-o", out, "--clickhouse-mode", mode}, win...)...)
		if code != 0 {
			t.Fatalf("analyze URL, %s: exit %d: %s", mode, code, stderr)
		}
		got := read(out)
		same("analyze, "+mode, want, got)
		note := strings.Join(got.Notes, "\n")
		if mode == "pull" {
			if strings.Contains(stderr, pushed) || !strings.Contains(stderr, "read "+url) {
				t.Errorf("analyze, pull: stderr:\n%s", stderr)
			}
			continue
		}
		if !strings.Contains(stderr, pushed+url+": 3000 spans aggregated") || !strings.Contains(stderr, "over the wire") || strings.Contains(stderr, "read "+url) {
			t.Errorf("analyze, %s: stderr does not say the window was computed on the server:\n%s", mode, stderr)
		}
		if !strings.Contains(note, "computed on the server (push-down) from 3000 spans") || !strings.Contains(note, "over the wire") {
			t.Errorf("analyze, %s: the report's notes: %q", mode, got.Notes)
		}
		t.Logf("%s: %s", mode, strings.TrimSpace(stderr))
	}
	// recommend: the same policy file but its first line (which names
	// the input).
	pa, pb := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	if code, _, stderr := cli(t, bin, nil, "recommend", file, "-o", pa, "-q"); code != 0 {
		t.Fatalf("recommend FILE: exit %d: %s", code, stderr)
	}
	code, _, stderr := cli(t, bin, nil, append([]string{"recommend", url, "-o", pb}, win...)...)
	if code != 0 || !strings.Contains(stderr, pushed+url) {
		t.Fatalf("recommend URL: exit %d: %s", code, stderr)
	}
	ya, _ := os.ReadFile(pa)
	yb, _ := os.ReadFile(pb)
	_, ya, _ = bytes.Cut(ya, []byte("\n"))
	_, yb, _ = bytes.Cut(yb, []byte("\n"))
	if len(ya) == 0 || !bytes.Equal(ya, yb) {
		t.Errorf("recommend: the policies differ:\n%s", firstDiff(string(ya), string(yb)))
	}
	// check: the recommended policy and the seed's E, side by side.
	tight := repo("samples", "seed-chain", "E.yaml")
	ca, cb := filepath.Join(dir, "check-a.json"), filepath.Join(dir, "check-b.json")
	codeA, _, errA := cli(t, bin, nil, "check", "--policy", pa, "--policy", tight, file, "-f", "json", "-o", ca, "-q")
	codeB, _, errB := cli(t, bin, nil, append([]string{"check", "--policy", pa, "--policy", tight, url, "-f", "json", "-o", cb}, win...)...)
	if codeA != codeB || codeA != 0 && codeA != 3 || !strings.Contains(errB, pushed+url) {
		t.Fatalf("check: exit %d from the file, %d from ClickHouse: %s%s", codeA, codeB, errA, errB)
	}
	ja, jb := checkJSON(t, ca), checkJSON(t, cb)
	if ja != jb {
		t.Errorf("check: the reports differ:\n%s", firstDiff(ja, jb))
	}
	// summarize: the summary's report is the file's summary's.
	sa, sb := filepath.Join(dir, "a.tss"), filepath.Join(dir, "b.tss")
	if code, _, stderr := cli(t, bin, nil, "summarize", file, "-o", sa, "-q"); code != 0 {
		t.Fatalf("summarize FILE: exit %d: %s", code, stderr)
	}
	code, _, stderr = cli(t, bin, nil, append([]string{"summarize", url, "-o", sb}, win...)...)
	if code != 0 || !strings.Contains(stderr, pushed+url) {
		t.Fatalf("summarize URL: exit %d: %s", code, stderr)
	}
	ra, rb := filepath.Join(dir, "sa.json"), filepath.Join(dir, "sb.json")
	for _, x := range [][2]string{{sa, ra}, {sb, rb}} {
		if code, _, stderr := cli(t, bin, nil, "analyze", x[0], "-f", "json", "-o", x[1], "-q"); code != 0 {
			t.Fatalf("analyze %s: exit %d: %s", x[0], code, stderr)
		}
	}
	same("summarize", read(ra), read(rb))
	// A read the push-down cannot compute exactly: pulled, with a note;
	// an error under --clickhouse-mode pushdown.
	fa, fb := filepath.Join(dir, "svc-a.json"), filepath.Join(dir, "svc-b.json")
	if code, _, stderr := cli(t, bin, nil, "analyze", file, "--hop-by", "service", "-f", "json", "-o", fa, "-q"); code != 0 {
		t.Fatalf("analyze FILE --hop-by service: exit %d: %s", code, stderr)
	}
	code, _, stderr = cli(t, bin, nil, append([]string{"analyze", url, "--hop-by", "service", "-f", "json", "-o", fb}, win...)...)
	if code != 0 || !strings.Contains(stderr, "tailscope: note: "+url+": not computed on the server (only the default hop") || !strings.Contains(stderr, "read "+url) || strings.Contains(stderr, pushed) {
		t.Errorf("analyze URL --hop-by service: exit %d: %s", code, stderr)
	}
	same("--hop-by service, pulled", read(fa), read(fb))
	code, _, stderr = cli(t, bin, nil, append([]string{"analyze", url, "--hop-by", "service", "--clickhouse-mode", "pushdown"}, win...)...)
	if code != 1 || !strings.Contains(stderr, "cannot be computed on the server: only the default hop") {
		t.Errorf("--clickhouse-mode pushdown --hop-by service: exit %d: %s", code, stderr)
	}
}

// checkJSON is check's JSON report without what names the input.
func checkJSON(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"inputs", "notes", "input", "files"} {
		delete(m, k)
	}
	out, _ := json.MarshalIndent(m, "", " ")
	return string(out)
}
