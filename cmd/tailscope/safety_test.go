// Tests that a failed run keeps the previous output, that reports show no attribute values, and that --help states the limits.

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// listDir returns the names in dir, sorted, so that a test can see a
// temporary file left behind.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

// A failed run must leave the previous output file as it was and no
// temporary file beside it, whether it fails before rendering (bad input)
// or in the middle of writing (convert --strict meets a bad record after
// good ones were written).
func TestFailedRunKeepsPreviousOutput(t *testing.T) {
	seed := mustAbs(t, filepath.Join(seedDir, "spans.jsonl"))
	bad := mustAbs(t, filepath.Join(badDir, "jsonl"))
	cases := []struct {
		name, out string
		good, bad []string
	}{
		{"analyze, input error", "report.json",
			[]string{"analyze", "-q", "--format", "json", seed},
			[]string{"analyze", "--format", "json", filepath.Join(bad, "empty.jsonl")}},
		{"analyze, strict", "report.html",
			[]string{"analyze", "-q", "--format", "html", seed},
			[]string{"analyze", "--strict", "--format", "html", filepath.Join(bad, "durations.jsonl")}},
		{"check, bad policy", "check.md",
			[]string{"check", "-q", "--format", "markdown", "--policy", mustAbs(t, filepath.Join(seedDir, "C.yaml")), seed},
			[]string{"check", "--format", "markdown", "--policy", mustAbs(t, filepath.Join(badDir, "policy", "every-mistake.yaml")), seed}},
		{"recommend, unknown format", "policy.yaml",
			[]string{"recommend", "-q", seed},
			[]string{"recommend", filepath.Join(bad, "not-a-log.txt")}},
		// convert fails inside the write: the temporary file already holds
		// spans when --strict gives up.
		{"convert, strict mid-write", "spans.jsonl",
			[]string{"convert", "-q", seed},
			[]string{"convert", "--strict", seed, filepath.Join(bad, "durations.jsonl")}},
		{"convert parquet, strict mid-write", "spans.parquet",
			[]string{"convert", "-q", seed},
			[]string{"convert", "--strict", seed, filepath.Join(bad, "wrong-types.jsonl")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, c.out)
			r := runIn(t, dir, "", append(c.good, "-o", out)...)
			if r.code != exitOK && r.code != exitViolation {
				t.Fatalf("first run: exit %d: %s", r.code, r.stderr)
			}
			before, err := os.ReadFile(out)
			if err != nil || len(before) == 0 {
				t.Fatalf("first run wrote nothing: %v", err)
			}
			r = runIn(t, dir, "", append(c.bad, "-o", out)...)
			if r.code != exitError {
				t.Fatalf("failing run: exit %d, want 1: %s", r.code, r.stderr)
			}
			after, err := os.ReadFile(out)
			if err != nil {
				t.Fatalf("previous output gone: %v", err)
			}
			if string(after) != string(before) {
				t.Errorf("previous output changed (%d → %d bytes)", len(before), len(after))
			}
			if got := listDir(t, dir); len(got) != 1 || got[0] != c.out {
				t.Errorf("folder holds %v, want only %s (a temporary file left behind?)", got, c.out)
			}
		})
	}
}

// An output path that cannot be written is an error naming it, exit 1,
// and nothing is created.
func TestUnwritableOutput(t *testing.T) {
	seed := mustAbs(t, filepath.Join(seedDir, "spans.jsonl"))
	dir := t.TempDir()
	for _, out := range []string{filepath.Join(dir, "no", "such", "dir", "r.json"), dir} {
		r := runIn(t, dir, "", "analyze", "-q", "--format", "json", seed, "-o", out)
		if r.code != exitError || !strings.Contains(r.stderr, filepath.Base(out)) {
			t.Errorf("-o %s: exit %d, stderr %q; want 1 naming the path", out, r.code, r.stderr)
		}
	}
	if got := listDir(t, dir); len(got) != 0 {
		t.Errorf("failed runs left %v", got)
	}
}

// secretInputs writes one small input per format whose attributes, tags,
// events, logs and status messages hold values marked SECRET. None of them
// is a field tailscope reads (except by --hop-by attr:KEY), so no report
// may show them.
func secretInputs(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	add := func(name, body string) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		files[name] = p
	}
	var b strings.Builder
	for i := 0; i < 40; i++ {
		status := "ok"
		if i%5 == 0 {
			status = "error"
		}
		fmt.Fprintf(&b, `{"trace_id":"t%d","span_id":"s%d","hop":"api","start":%d,"duration_ms":%d,"status":%q,"user.email":"SECRET-flat-email-%d","message":"SECRET-flat-msg","attributes":{"http.url":"https://x/?token=SECRET-flat-token","db.statement":"SELECT SECRET-flat-sql"}}`+"\n",
			i, i, 1700000000000000000+int64(i)*1e9, 100+i*7, status, i%3)
	}
	add("flat.jsonl", b.String())

	b.Reset()
	b.WriteString(`{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}},{"key":"host.name","value":{"stringValue":"SECRET-otlp-host"}}]},"scopeSpans":[{"spans":[`)
	for i := 0; i < 40; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		code := 1
		if i%5 == 0 {
			code = 2
		}
		start := int64(1700000000000000000) + int64(i)*1e9
		fmt.Fprintf(&b, `{"traceId":"%032x","spanId":"%016x","name":"op","kind":2,"startTimeUnixNano":"%d","endTimeUnixNano":"%d","attributes":[{"key":"enduser.id","value":{"stringValue":"SECRET-otlp-user"}}],"events":[{"name":"exception","attributes":[{"key":"exception.message","value":{"stringValue":"SECRET-otlp-exception"}}]}],"status":{"code":%d,"message":"SECRET-otlp-status"}}`,
			i+1, i+1, start, start+int64(100+i*7)*1e6, code)
	}
	b.WriteString(`]}]}]}`)
	add("otlp.json", b.String())

	b.Reset()
	b.WriteString(`{"data":[`)
	for i := 0; i < 40; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		errTag := ""
		if i%5 == 0 {
			errTag = `,{"key":"error","type":"bool","value":true}`
		}
		fmt.Fprintf(&b, `{"traceID":"j%d","spans":[{"traceID":"j%d","spanID":"x%d","operationName":"jop","startTime":%d,"duration":%d,"processID":"p1","tags":[{"key":"user","type":"string","value":"SECRET-jaeger-tag"}%s],"logs":[{"timestamp":1,"fields":[{"key":"event","type":"string","value":"SECRET-jaeger-log"}]}]}],"processes":{"p1":{"serviceName":"jsvc","tags":[{"key":"ip","type":"string","value":"SECRET-jaeger-process"}]}}}`,
			i, i, i, 1700000000000000+int64(i)*1e6, (100+i*7)*1000, errTag)
	}
	b.WriteString(`]}`)
	add("jaeger.json", b.String())

	b.Reset()
	b.WriteString("[")
	for i := 0; i < 40; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		errTag := ""
		if i%5 == 0 {
			errTag = `,"error":"SECRET-zipkin-error"`
		}
		fmt.Fprintf(&b, `{"traceId":"%016x","id":"%016x","name":"get","kind":"CLIENT","timestamp":%d,"duration":%d,"localEndpoint":{"serviceName":"zsvc","ipv4":"10.0.0.1"},"tags":{"http.url":"https://x/?SECRET-zipkin-url"%s},"annotations":[{"timestamp":1,"value":"SECRET-zipkin-annotation"}]}`,
			i+1, i+1, 1700000000000000+int64(i)*1e6, (100+i*7)*1000, errTag)
	}
	b.WriteString("]")
	add("zipkin.json", b.String())

	b.Reset()
	b.WriteString("trace_id,span_id,hop,start,duration_ms,status,user_email\n")
	for i := 0; i < 40; i++ {
		status := "ok"
		if i%5 == 0 {
			status = "error"
		}
		fmt.Fprintf(&b, "c%d,s%d,csvhop,%d,%d,%s,SECRET-csv-email\n", i, i, 1700000000000000000+int64(i)*1e9, 100+i*7, status)
	}
	add("spans.csv", b.String())
	return files
}

// Reports never show attribute values the user did not ask for: every
// command and format on inputs full of them prints none. Asking for one
// (--hop-by attr:KEY) shows it, which proves the check can see a leak.
func TestNoAttributeValuesInReports(t *testing.T) {
	dir := t.TempDir()
	files := secretInputs(t, dir)
	pol := mustAbs(t, filepath.Join(seedDir, "A.yaml"))
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		path := files[name]
		runs := [][]string{}
		for _, f := range []string{"text", "json", "markdown", "html"} {
			runs = append(runs, []string{"analyze", "--format", f, path})
			runs = append(runs, []string{"check", "--policy", pol, "--format", f, path})
		}
		runs = append(runs, []string{"recommend", path}, []string{"recommend", "--emit", "envoy", path}, []string{"recommend", "--emit", "grpc", path},
			[]string{"convert", "--to", "jsonl", path})
		for _, args := range runs {
			r := runIn(t, dir, "", args...)
			if r.code != exitOK && r.code != exitViolation {
				t.Fatalf("%s: %v: exit %d: %s", name, args, r.code, r.stderr)
			}
			if i := strings.Index(r.stdout+r.stderr, "SECRET"); i >= 0 {
				all := r.stdout + r.stderr
				t.Errorf("%s: %v prints an attribute value: …%s…", name, args, all[max(0, i-80):min(len(all), i+60)])
			}
		}
	}
	// The control: asked for, the value shows.
	for name, key := range map[string]string{"flat.jsonl": "user.email", "otlp.json": "enduser.id", "jaeger.json": "user", "zipkin.json": "http.url"} {
		r := runIn(t, dir, "", "analyze", "--format", "json", "--hop-by", "attr:"+key, files[name])
		if r.code != exitOK || !strings.Contains(r.stdout, "SECRET") {
			t.Errorf("%s: --hop-by attr:%s does not show the value it asks for (exit %d): %s", name, key, r.code, r.stderr)
		}
	}
}

// The limits that protect the machine are stated in every reading
// command's --help.
func TestHelpStatesLimits(t *testing.T) {
	for _, cmd := range []string{"analyze", "check", "recommend", "convert"} {
		r := runIn(t, ".", "", cmd, "--help")
		if r.code != exitOK {
			t.Fatalf("%s --help: exit %d", cmd, r.code)
		}
		if !strings.Contains(r.stdout, "--max-record") || !strings.Contains(r.stdout, "protects memory") {
			t.Errorf("%s --help does not state the record size limit:\n%s", cmd, r.stdout)
		}
	}
}
