package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tailscope/tailscope/source/sourcetest"
)

var fetchT0 = time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)

// writeOTLP writes traces as one OTLP JSON document, what an export of the
// same store would hold.
func writeOTLP(t *testing.T, traces []*sourcetest.Trace) string {
	t.Helper()
	var rs []any
	for _, tr := range traces {
		rs = append(rs, sourcetest.ResourceSpans(tr, false)...)
	}
	data, err := json.Marshal(map[string]any{"resourceSpans": rs})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "export.json")
	if err := os.WriteFile(path, data, 0o666); err != nil {
		t.Fatal(err)
	}
	return path
}

// runOK runs the command and fails the test unless it exits 0.
func runOK(t *testing.T, args ...string) (stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(args, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("%v: exit %d\n%s", args, code, errb.String())
	}
	return out.String(), errb.String()
}

// reportWithoutInputs is a JSON report with the inputs (which name the
// file or URL read) left out.
func reportWithoutInputs(t *testing.T, js string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(js), &m); err != nil {
		t.Fatalf("%v\n%s", err, js)
	}
	if _, ok := m["inputs"]; !ok {
		t.Fatalf("report has no inputs: keys %v", reflect.ValueOf(m).MapKeys())
	}
	delete(m, "inputs")
	return m
}

// TestSourceURL: a source URL is read wherever a path is: analyze gives
// the report of the same traces exported to a file, recommend the same
// policy, pull saves a file that analyses to the same report again, and
// summarize and convert take the URL too.
func TestSourceURL(t *testing.T) {
	traces := sourcetest.Gen(21, 250, fetchT0, 10*time.Minute)
	srv := sourcetest.Jaeger(t, traces, true) // base64 ids, as generic protojson writes them
	url := "jaeger://" + strings.TrimPrefix(srv.URL, "http://")
	file := writeOTLP(t, traces)
	window := []string{"--since", "2026-03-04T10:00:00Z", "--until", "2026-03-04T10:10:00Z"}
	fetch := append([]string{"--fetch-slice", "2m", "--fetch-limit", "20"}, window...)

	fromFile, _ := runOK(t, append([]string{"analyze", "-q", "--format", "json", file}, window...)...)
	fromURL, stderr := runOK(t, append([]string{"analyze", "--format", "json", url}, fetch...)...)
	if !reflect.DeepEqual(reportWithoutInputs(t, fromURL), reportWithoutInputs(t, fromFile)) {
		t.Errorf("analyze of the URL differs from analyze of the export\nURL:  %.2000s\nfile: %.2000s", fromURL, fromFile)
	}
	if !strings.Contains(stderr, "tailscope: fetched "+url+": 250 traces") {
		t.Errorf("stderr %q: want the fetch's closing line", stderr)
	}
	if !strings.Contains(fromURL, `"file": "`+url+`"`) {
		t.Errorf("the report's inputs do not name the URL:\n%.600s", fromURL)
	}

	polFile, _ := runOK(t, append([]string{"recommend", "-q", file}, window...)...)
	polURL, _ := runOK(t, append([]string{"recommend", "-q", url}, fetch...)...)
	if strip := func(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, url, "X"), file, "X") }; strip(polURL) != strip(polFile) {
		t.Errorf("recommend of the URL differs:\n%s\nfrom the export's:\n%s", polURL, polFile)
	}

	pol := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(pol, []byte(polFile), 0o666); err != nil {
		t.Fatal(err)
	}
	checkFile, _ := runOK(t, append([]string{"check", "-q", "--format", "json", "--policy", pol, file}, window...)...)
	checkURL, _ := runOK(t, append([]string{"check", "-q", "--format", "json", "--policy", pol, url}, fetch...)...)
	if strip := func(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, url, "X"), file, "X") }; strip(checkURL) != strip(checkFile) {
		t.Errorf("check of the URL differs:\n%.2000s\nfrom the export's:\n%.2000s", checkURL, checkFile)
	}

	dir := t.TempDir()
	_, stderr = runOK(t, append([]string{"pull", url, "-o", dir}, fetch...)...)
	saved, _ := filepath.Glob(filepath.Join(dir, "jaeger-127.0.0.1_*-20260304T100000Z-20260304T101000Z.jsonl"))
	if len(saved) != 1 || !strings.Contains(stderr, "saved 250 traces") {
		t.Fatalf("pull saved %v, said %q; want one file of 250 traces", saved, stderr)
	}
	fromSaved, _ := runOK(t, append([]string{"analyze", "-q", "--format", "json", saved[0]}, window...)...)
	if !reflect.DeepEqual(reportWithoutInputs(t, fromSaved), reportWithoutInputs(t, fromFile)) {
		t.Errorf("analyze of the pulled file differs from analyze of the export")
	}

	out := filepath.Join(t.TempDir(), "spans.jsonl")
	_, stderr = runOK(t, append([]string{"convert", url, "-o", out}, fetch...)...)
	if !strings.Contains(stderr, "wrote 750 spans") {
		t.Errorf("convert of the URL: %q, want 750 spans written", stderr)
	}
	sum := filepath.Join(t.TempDir(), "w.tss")
	runOK(t, append([]string{"summarize", "-q", url, "-o", sum}, fetch...)...)
	fromSum, _ := runOK(t, "analyze", "-q", "--format", "json", sum)
	if !reflect.DeepEqual(reportWithoutInputs(t, fromSum), reportWithoutInputs(t, fromFile)) {
		t.Errorf("analyze of the URL's summary differs from analyze of the export")
	}
}

// TestSourceSampledNote: a slice that stays full at the floor is named in
// the report's notes.
func TestSourceSampledNote(t *testing.T) {
	traces := sourcetest.Gen(22, 40, fetchT0, 400*time.Millisecond)
	srv := sourcetest.Zipkin(t, traces)
	url := "zipkin://" + strings.TrimPrefix(srv.URL, "http://")
	js, stderr := runOK(t, "analyze", "--format", "json", url, "--since", "2026-03-04T10:00:00Z", "--until", "2026-03-04T10:00:02Z", "--fetch-limit", "10", "--fetch-min-slice", "1s")
	want := "the store returned its first 10 traces for 2026-03-04 10:00:00–10:00:01 UTC; numbers for that slice rest on a sample"
	if !strings.Contains(js, want) || !strings.Contains(stderr, want) {
		t.Errorf("want the note %q in the report and on stderr\nstderr: %s\nreport: %.1500s", want, stderr, js)
	}
}

// TestSourceErrors: exit codes and messages of a fetch that fails, and
// the token never shown.
func TestSourceErrors(t *testing.T) {
	traces := sourcetest.Gen(23, 30, fetchT0, time.Minute)
	srv := sourcetest.Zipkin(t, traces)
	srv.Auth = "Bearer tok-3x4mpl3"
	url := "zipkin://" + strings.TrimPrefix(srv.URL, "http://")
	window := []string{"--since", "2026-03-04T10:00:00Z", "--until", "2026-03-04T10:01:00Z"}

	var out, errb bytes.Buffer
	code := run(append([]string{"analyze", url, "--token", "wrong-3x4mpl3"}, window...), strings.NewReader(""), &out, &errb)
	if code != exitError || !strings.Contains(errb.String(), "HTTP 401 Unauthorized") || !strings.Contains(errb.String(), srv.URL+"/api/v2/traces") || strings.Contains(errb.String(), "3x4mpl3") {
		t.Errorf("wrong token: exit %d, stderr %q; want 1, the URL and 401, no token", code, errb.String())
	}

	t.Setenv("TAILSCOPE_TOKEN", "tok-3x4mpl3")
	js, stderr := runOK(t, append([]string{"analyze", "--format", "json", url}, window...)...)
	if strings.Contains(js+stderr, "3x4mpl3") {
		t.Errorf("the token is printed")
	}

	srv.Close()
	out.Reset()
	errb.Reset()
	code = run(append([]string{"analyze", url, "--fetch-retries", "0"}, window...), strings.NewReader(""), &out, &errb)
	if want := "tailscope: " + url + ": GET " + srv.URL + "/api/v2/traces?"; code != exitError || !strings.HasPrefix(errb.String(), want) || !strings.Contains(errb.String(), "refused") {
		t.Errorf("down server: exit %d, stderr %q; want 1 and a message starting %q", code, errb.String(), want)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"analyze", "jager://x"}, `unknown scheme "jager"`},
		{[]string{"analyze", "zipkin://x", "--header", "NoColon"}, "--header: want 'Name: value'"},
		{[]string{"pull", "zipkin://x"}, "say where to save: -o DIR"},
		{[]string{"pull", "traces.json", "-o", "d"}, "is not a source URL"},
	} {
		out.Reset()
		errb.Reset()
		code := run(c.args, strings.NewReader(""), &out, &errb)
		if code == 0 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want an error containing %q", c.args, code, errb.String(), c.want)
		}
	}
}
