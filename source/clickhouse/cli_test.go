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
// read: analyze of a ClickHouse window prints the file's hops, requests
// and policy, recommend writes the file's policy, --hops is applied, and
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
		a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
		if code, _, stderr := cli(t, bin, nil, append([]string{"analyze", file, "-f", "json", "-o", a, "-q"}, extra...)...); code != 0 {
			t.Fatalf("analyze FILE: exit %d: %s", code, stderr)
		}
		code, _, stderr := cli(t, bin, env, append(append([]string{"analyze", url, "-f", "json", "-o", b}, win...), extra...)...)
		if code != 0 {
			t.Fatalf("analyze URL: exit %d: %s", code, stderr)
		}
		if !strings.Contains(stderr, "read "+url) || strings.Contains(stderr, key) {
			t.Errorf("stderr: %s", stderr)
		}
		ra, rb := read(a), read(b)
		if !bytes.Equal(ra.Hops, rb.Hops) || !bytes.Equal(ra.Requests, rb.Requests) || !bytes.Equal(ra.RecommendedPolicy, rb.RecommendedPolicy) {
			t.Errorf("%v: the reports differ", extra)
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
