// Tests of check: exit codes and every format.

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// binPath is the tailscope binary built once for the exit-code tests: exit
// codes are a contract with users' CI, so they are checked on the real
// binary, through the real os.Exit.
var binPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tailscope-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "tailscope")
	out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// runBin runs the built binary and returns its exit code, stdout, stderr.
func runBin(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run %v: %v", args, err)
	}
	return code, out.String(), errb.String()
}

const (
	seedSpans    = "../../samples/seed-chain/spans.jsonl"
	seedRecorded = "../../samples/seed-chain/recorded-under-A.jsonl"
)

func seedPolicy(name string) string { return "../../samples/seed-chain/" + name + ".yaml" }

func TestCheckExitCodes(t *testing.T) {
	cases := []struct {
		name   string
		args   []string
		code   int
		stdout []string // substrings
		stderr []string
	}{
		{"C passes", []string{"check", "--policy", seedPolicy("C"), seedSpans}, exitOK,
			[]string{"verdict: pass"}, nil},
		{"D has dead retries", []string{"check", "--policy", seedPolicy("D"), seedSpans}, exitViolation,
			[]string{"dead-retries", "verdict: fail"}, nil},
		{"E is below the tail", []string{"check", "--policy", seedPolicy("E"), seedSpans}, exitViolation,
			[]string{"timeout-below-tail"}, nil},
		{"A retries a persistent hop", []string{"check", "--policy", seedPolicy("A"), "--baseline", seedPolicy("A"), seedRecorded}, exitViolation,
			[]string{"retry-on-persistent"}, nil},
		{"C no worse than A", []string{"check", "--policy", seedPolicy("C"), "--baseline", seedPolicy("A"), "--no-worse", seedSpans}, exitOK,
			[]string{"gate pass no-worse-success", "verdict: pass"}, nil},
		{"E worse than A", []string{"check", "--policy", seedPolicy("E"), "--baseline", seedPolicy("A"), "--no-worse", seedSpans}, exitViolation,
			[]string{"gate FAIL no-worse-success"}, nil},
		{"min-success gate", []string{"check", "--policy", seedPolicy("B"), "--min-success", "95", seedSpans}, exitViolation,
			[]string{"gate FAIL min-success: want ≥ 95%, got 90.5%"}, nil},
		{"several policies, one fails", []string{"check", "--policy", seedPolicy("C"), "--policy", seedPolicy("D"), seedSpans}, exitViolation,
			[]string{"verdict: fail"}, nil},
		{"bad policy file", []string{"check", "--policy", "../../policy/testdata/bad/many.yaml", seedSpans}, exitError,
			nil, []string{"tailscope: bad policy file:\n../../policy/testdata/bad/many.yaml:1:9: budget: negative duration -5s\n",
				"../../policy/testdata/bad/many.yaml:13:10: hops.index: want a mapping with timeout, retries, backoff, budget_aware"}},
		{"bad baseline file", []string{"check", "--policy", seedPolicy("C"), "--baseline", "../../policy/testdata/bad/syntax.yaml", seedSpans}, exitError,
			nil, []string{"../../policy/testdata/bad/syntax.yaml:4: not valid YAML or JSON"}},
		{"missing policy file", []string{"check", "--policy", "nope.yaml", seedSpans}, exitError,
			nil, []string{"nope.yaml"}},
		{"missing input", []string{"check", "--policy", seedPolicy("C"), "no-such-spans.jsonl"}, exitError,
			nil, []string{"no-such-spans.jsonl"}},
		{"bad flag", []string{"check", "--policy", seedPolicy("C"), "--nope", seedSpans}, exitUsage,
			nil, []string{"unknown flag: --nope", "Run 'tailscope check --help'"}},
		{"no policy", []string{"check", seedSpans}, exitUsage,
			nil, []string{"no --policy given"}},
		{"no-worse without baseline", []string{"check", "--policy", seedPolicy("C"), "--no-worse", seedSpans}, exitUsage,
			nil, []string{"--no-worse needs --baseline"}},
		{"bad gate value", []string{"check", "--policy", seedPolicy("C"), "--max-p95", "fast", seedSpans}, exitUsage,
			nil, []string{"--max-p95"}},
		{"bad format", []string{"check", "--policy", seedPolicy("C"), "--format", "yaml", seedSpans}, exitUsage,
			nil, []string{"--format \"yaml\""}},
		{"no input", []string{"check", "--policy", seedPolicy("C")}, exitUsage,
			nil, []string{"no input"}},
		{"help", []string{"check", "--help"}, exitOK,
			[]string{"Exit codes"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runBin(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			for _, s := range tc.stdout {
				if !strings.Contains(stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout)
				}
			}
			for _, s := range tc.stderr {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr)
				}
			}
		})
	}
}

// TestCheckFormats: every format renders the same verdict, and the exit
// code does not depend on the format (CI posts the Markdown and still
// fails the job).
func TestCheckFormats(t *testing.T) {
	for _, f := range []string{"text", "json", "markdown", "html"} {
		code, stdout, stderr := runBin(t, "check", "--policy", seedPolicy("E"), "--baseline", seedPolicy("A"), "--no-worse", "--format", f, seedSpans)
		if code != exitViolation {
			t.Errorf("%s: exit %d, want %d; stderr: %s", f, code, exitViolation, stderr)
		}
		if len(stdout) == 0 {
			t.Errorf("%s: empty output", f)
		}
		if f == "json" {
			var doc struct {
				Schema  string `json:"schema"`
				Verdict string `json:"verdict"`
				Results []struct {
					Lint []struct {
						Code, Severity, Hop, Message string
					} `json:"lint"`
					Gates []struct {
						Name string `json:"name"`
						Pass bool   `json:"pass"`
					} `json:"gates"`
				} `json:"results"`
			}
			if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
				t.Fatalf("json: %v", err)
			}
			if doc.Schema != "tailscope.check/v1" || doc.Verdict != "fail" || len(doc.Results) != 1 || len(doc.Results[0].Lint) == 0 {
				t.Errorf("json: %+v", doc)
			}
		}
	}
	// -o writes the report to a file and keeps the exit code.
	out := filepath.Join(t.TempDir(), "check.md")
	code, stdout, _ := runBin(t, "check", "--policy", seedPolicy("D"), "--format", "markdown", "-o", out, seedSpans)
	if code != exitViolation || stdout != "" {
		t.Errorf("-o: exit %d, stdout %q", code, stdout)
	}
	if b, err := os.ReadFile(out); err != nil || !strings.Contains(string(b), "dead-retries") {
		t.Errorf("-o: %v; content:\n%s", err, b)
	}
}
