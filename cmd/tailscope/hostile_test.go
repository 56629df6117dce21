// Hostile shapes of the command line and of the files it names: an output that is an input, a log that shrinks
// while it is read, a combination of flags that would drop data silently.

package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// copySeed writes a copy of the seed logs (and policy A) into dir.
func copySeed(t *testing.T, dir string) {
	t.Helper()
	for _, n := range []string{"spans.jsonl", "A.yaml"} {
		b, err := os.ReadFile(filepath.Join(seedDir, n))
		must(t, err)
		must(t, os.WriteFile(filepath.Join(dir, n), b, 0o644))
	}
}

// `analyze in.jsonl -o in.jsonl` replaced the log with its report and
// exited 0. Every command that writes a file refuses (exit 2) an output
// that is one of the files it reads, however the two names reach it: the
// same name, a symbolic link, a hard link, a folder that holds it,
// /dev/stdin when "-" reads it, a policy or baseline it reads; and
// nothing is written. The control shows the same commands write a new
// file.
func TestOutputNeverReplacesAnInput(t *testing.T) {
	dir := t.TempDir()
	copySeed(t, dir)
	must(t, os.Symlink("spans.jsonl", filepath.Join(dir, "link.jsonl")))
	must(t, os.Link(filepath.Join(dir, "spans.jsonl"), filepath.Join(dir, "hard.jsonl")))
	must(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	must(t, os.Symlink("../spans.jsonl", filepath.Join(dir, "sub", "up.jsonl")))
	if r := runIn(t, dir, "", "summarize", "-q", "spans.jsonl", "-o", "part.tss"); r.code != 0 {
		t.Fatalf("summarize: exit %d: %s", r.code, r.stderr)
	}
	before := map[string]string{}
	for _, n := range []string{"spans.jsonl", "A.yaml", "part.tss"} {
		before[n] = readFile(t, filepath.Join(dir, n))
	}
	for _, c := range []struct {
		args  []string
		stdin string
	}{
		{args: []string{"analyze", "spans.jsonl", "-o", "spans.jsonl"}},
		{args: []string{"analyze", "spans.jsonl", "-o", "link.jsonl"}},
		{args: []string{"analyze", "link.jsonl", "-o", "hard.jsonl"}},
		{args: []string{"analyze", "--format", "json", "sub", "-o", "spans.jsonl"}},
		{args: []string{"analyze", "sp*.jsonl", "-o", "hard.jsonl"}},
		{args: []string{"analyze", "-", "-o", "/dev/stdin"}, stdin: "spans.jsonl"},
		{args: []string{"analyze", "part.tss", "-o", "part.tss"}},
		{args: []string{"analyze", "--policy-in-force", "A.yaml", "spans.jsonl", "-o", "A.yaml"}},
		{args: []string{"analyze", "--compare", "link.jsonl", "part.tss", "-o", "spans.jsonl"}},
		{args: []string{"convert", "spans.jsonl", "-o", "hard.jsonl"}},
		{args: []string{"convert", "--to", "jsonl", "spans.jsonl", "-o", "link.jsonl"}},
		{args: []string{"summarize", "spans.jsonl", "-o", "spans.jsonl"}},
		{args: []string{"summarize", "part.tss", "-o", "part.tss"}},
		{args: []string{"merge", "part.tss", "-o", "part.tss"}},
		{args: []string{"recommend", "spans.jsonl", "-o", "link.jsonl"}},
		{args: []string{"check", "--policy", "A.yaml", "spans.jsonl", "-o", "A.yaml"}},
		{args: []string{"check", "--policy", "A.yaml", "--baseline", "hard.jsonl", "spans.jsonl", "-o", "link.jsonl"}},
	} {
		r := runIn(t, dir, c.stdin, c.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "is an input") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 saying the output is an input", c.args, r.code, r.stderr)
		}
		for n, want := range before {
			if got := readFile(t, filepath.Join(dir, n)); got != want {
				t.Fatalf("%v changed %s", c.args, n)
			}
		}
	}
	// The control: the same commands write a file that is no input.
	for _, args := range [][]string{
		{"analyze", "-q", "spans.jsonl", "-o", "report.txt"},
		{"convert", "-q", "link.jsonl", "-o", "out.jsonl"},
		{"summarize", "-q", "sub", "-o", "other.tss"},
		{"merge", "part.tss", "-o", "all.tss"},
	} {
		if r := runIn(t, dir, "", args...); r.code != 0 {
			t.Errorf("%v: exit %d: %s", args, r.code, r.stderr)
		}
	}
}

// `convert --attributes -o x.parquet` wrote the spans without their
// attributes and said "wrote N spans". Asking for attributes in a format
// that cannot carry them is a usage error, however the format is named,
// and no file is written; the formats that carry them still do.
func TestConvertAttributesNeedAFormatThatCarriesThem(t *testing.T) {
	dir := t.TempDir()
	copySeed(t, dir)
	for _, args := range [][]string{
		{"convert", "--attributes", "spans.jsonl", "-o", "x.parquet"},
		{"convert", "--attributes", "spans.jsonl", "-o", "x.PQ"},
		{"convert", "--attributes", "--to", "parquet", "spans.jsonl", "-o", "x.jsonl"},
		{"convert", "--to", "parquet", "--attributes", "spans.jsonl"},
	} {
		r := runIn(t, dir, "", args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "--attributes") || strings.Contains(r.stderr, "wrote") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming --attributes", args, r.code, r.stderr)
		}
	}
	for _, n := range listDir(t, dir) {
		if n != "spans.jsonl" && n != "A.yaml" {
			t.Errorf("a refused convert left %s", n)
		}
	}
	for _, out := range []string{"x.jsonl", "x.arrow"} {
		if r := runIn(t, dir, "", "convert", "-q", "--attributes", "spans.jsonl", "-o", out); r.code != 0 {
			t.Errorf("--attributes -o %s: exit %d: %s", out, r.code, r.stderr)
		}
	}
}

// Distinct hops are bounded by --max-hops: one more is an error (exit 1)
// naming the flag, never a crash or a report on the hops that came first;
// the flag raises it. Limits of 0 or less are usage errors, not "the
// default" or "none".
func TestMaxHopsAndLimitFlags(t *testing.T) {
	dir := t.TempDir()
	copySeed(t, dir)
	var b strings.Builder
	for i := range 30 {
		fmt.Fprintf(&b, `{"trace_id":"t%d","span_id":"s%d","hop":"GET /users/%d","start":%d,"duration_ms":%d,"status":"ok"}`+"\n", i, i, 100+i, 1700000000000000000+int64(i)*1e9, 10+i)
	}
	must(t, os.WriteFile(filepath.Join(dir, "ids.jsonl"), []byte(b.String()), 0o644))
	for _, cmd := range []string{"analyze", "summarize"} {
		args := []string{cmd, "--max-hops", "29", "ids.jsonl"}
		if cmd == "summarize" {
			args = append(args, "-o", "x.tss")
		}
		r := runIn(t, dir, "", args...)
		if r.code != exitError || !strings.Contains(r.stderr, "--max-hops") || !strings.Contains(r.stderr, "29") {
			t.Errorf("%v: exit %d, stderr %q; want exit 1 naming --max-hops 29", args, r.code, r.stderr)
		}
	}
	if r := runIn(t, dir, "", "analyze", "-q", "--max-hops", "30", "ids.jsonl"); r.code != exitOK {
		t.Errorf("--max-hops 30 on 30 hops: exit %d: %s", r.code, r.stderr)
	}
	for _, flag := range []string{"--max-hops", "--sample-spans", "--max-record"} {
		for _, v := range []string{"0", "-1", "-5"} {
			r := runIn(t, dir, "", "analyze", flag, v, "spans.jsonl")
			if r.code != exitUsage || !strings.Contains(r.stderr, flag) {
				t.Errorf("%s %s: exit %d, stderr %q; want exit 2 naming the flag", flag, v, r.code, r.stderr)
			}
		}
	}
}

// credentialLog writes logs whose failed attempts carry credentials in
// their attributes (so attribution reports them), and one bad record
// that quotes one.
func credentialLog(t *testing.T, path string) {
	t.Helper()
	var b strings.Builder
	for i := range 2000 {
		bad := i%20 == 0
		pod, extra, d, status := []string{"pod-a", "pod-c"}[i%2], "", 50+i%40, "ok"
		if bad {
			pod, d, status = "pod-b", 900+i%7, "error"
			extra = `,"http.request.header.authorization":"Bearer SECRET-bearer","url.full":"https://x/items?access_token=SECRET-q&page=1","password":"SECRET-pw","Cookie":"sid=SECRET-cookie","api_key":"SECRET-key","note":"Authorization: Bearer SECRET-hdr"`
		}
		fmt.Fprintf(&b, `{"trace_id":"t%d","span_id":"s%d","hop":"api","start":%d,"duration_ms":%d,"status":%q,"attributes":{"k8s.pod.name":%q%s}}`+"\n",
			i, i, 1700000000000000000+int64(i)*1e9, d, status, pod, extra)
	}
	b.WriteString(`{"trace_id":"x","span_id":"y","hop":"api","start":1700000000000000000,"duration_ms":"password=SECRET-detail","status":"ok"}` + "\n")
	must(t, os.WriteFile(path, []byte(b.String()), 0o644))
}

// Credential-like attribute values (Authorization: Bearer …, api_key,
// password, cookie, access_token= in a URL) were printed verbatim by
// attribution in every report format and kept in summaries. None of them
// shows in any format, in check's report, on stderr, in a summary file
// or in the report on a summary; the keys show as key=[redacted] and an
// instance attribute (k8s.pod.name) stays visible.
func TestNoCredentialInReportsOrSummaries(t *testing.T) {
	dir := t.TempDir()
	copySeed(t, dir)
	credentialLog(t, filepath.Join(dir, "cred.jsonl"))
	if r := runIn(t, dir, "", "summarize", "-q", "cred.jsonl", "-o", "cred.tss"); r.code != 0 {
		t.Fatalf("summarize: exit %d: %s", r.code, r.stderr)
	}
	if s := readFile(t, filepath.Join(dir, "cred.tss")); strings.Contains(s, "SECRET") || !strings.Contains(s, "pod-b") {
		t.Errorf("the summary holds a credential, or not the instance attribute: %q", s[max(0, strings.Index(s, "SECRET")-60):])
	}
	var runs [][]string
	for _, in := range []string{"cred.jsonl", "cred.tss"} {
		for _, f := range []string{"text", "markdown", "html", "json"} {
			runs = append(runs, []string{"analyze", "--format", f, in}, []string{"check", "--policy", "A.yaml", "--format", f, in})
		}
	}
	for _, args := range runs {
		r := runIn(t, dir, "", args...)
		if r.code != exitOK && r.code != exitViolation {
			t.Fatalf("%v: exit %d: %s", args, r.code, r.stderr)
		}
		all := r.stdout + r.stderr
		if i := strings.Index(all, "SECRET"); i >= 0 {
			t.Errorf("%v prints a credential: …%s…", args, all[max(0, i-80):min(len(all), i+40)])
		}
		if args[0] == "analyze" && args[2] == "json" {
			for _, want := range []string{`"pod-b"`, `"password"`, `"[redacted]"`, `access_token=[redacted]`} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("%v: the report does not show %s (the attribution the test relies on)", args, want)
				}
			}
		}
	}
}

// hopAttempts is every hop's attempts in an analyze JSON report.
func hopAttempts(t *testing.T, dir string, args ...string) (map[string]int, string) {
	t.Helper()
	r := runIn(t, dir, "", append([]string{"analyze", "--format", "json"}, args...)...)
	if r.code != 0 {
		t.Fatalf("%v: exit %d: %s", args, r.code, r.stderr)
	}
	var rep struct {
		Hops []struct {
			Hop      string `json:"hop"`
			Attempts int    `json:"attempts"`
		} `json:"hops"`
		Warnings []struct{ Code, Message string } `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, h := range rep.Hops {
		out[h.Hop] = h.Attempts
	}
	var dup string
	for _, w := range rep.Warnings {
		if w.Code == "duplicate-span-id" {
			dup = w.Message
		}
	}
	return out, r.stderr + dup
}

// Duplicate span ids across files gave 100 attempts by default and 200
// with --sample-spans 20, and a file read twice doubled every hop while
// the warning said "the first copy was kept". One rule now: the same
// file, however many names reach it (twice, a symbolic or hard link, a
// folder holding it, a summary named twice), is read once, with a note;
// copies in different files count in the per-hop figures whatever the
// sample, and the warning says so.
func TestDuplicatesOneRule(t *testing.T) {
	dir := t.TempDir()
	copySeed(t, dir)
	must(t, os.Mkdir(filepath.Join(dir, "d"), 0o755))
	seed := readFile(t, filepath.Join(dir, "spans.jsonl"))
	must(t, os.WriteFile(filepath.Join(dir, "d", "copy.jsonl"), []byte(seed), 0o644))
	must(t, os.Symlink("spans.jsonl", filepath.Join(dir, "link.jsonl")))
	must(t, os.Link(filepath.Join(dir, "spans.jsonl"), filepath.Join(dir, "d", "hard.jsonl")))
	if r := runIn(t, dir, "", "summarize", "-q", "spans.jsonl", "-o", "s.tss"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	once, _ := hopAttempts(t, dir, "spans.jsonl")
	for _, args := range [][]string{
		{"spans.jsonl", "spans.jsonl"},
		{"spans.jsonl", "link.jsonl"},
		{"link.jsonl", "d/hard.jsonl"},
		{"--sample-spans", "20", "spans.jsonl", "./spans.jsonl"},
		{"s.tss", "s.tss"},
		{"s.tss", filepath.Join(dir, "s.tss")},
	} {
		got, notes := hopAttempts(t, dir, args...)
		if fmt.Sprint(got) != fmt.Sprint(once) {
			t.Errorf("%v: attempts %v, want those of one read %v", args, got, once)
		}
		if !strings.Contains(notes, "read once") {
			t.Errorf("%v: no note that a file was read once: %q", args, notes)
		}
	}
	// Copies in two files: the same counts whatever the sample, and the
	// warning says what they are.
	var first map[string]int
	for _, sample := range []string{"100000", "20", "7"} {
		got, warning := hopAttempts(t, dir, "--sample-spans", sample, "spans.jsonl", "d/copy.jsonl")
		if first == nil {
			first = got
			for h, n := range once {
				if got[h] != 2*n {
					t.Errorf("copies: hop %s has %d attempts, want every copy counted: %d", h, got[h], 2*n)
				}
			}
		} else if fmt.Sprint(got) != fmt.Sprint(first) {
			t.Errorf("--sample-spans %s: attempts %v, want %v as with the default", sample, got, first)
		}
		if !strings.Contains(warning, "count every copy") {
			t.Errorf("--sample-spans %s: warning %q does not say the copies are counted", sample, warning)
		}
	}
	r := runIn(t, dir, "", "merge", "s.tss", "s.tss", "-o", "m.tss")
	if r.code != 0 || !strings.Contains(r.stderr, "read once") {
		t.Errorf("merge of one summary twice: exit %d, stderr %q", r.code, r.stderr)
	}
	if got, _ := hopAttempts(t, dir, "m.tss"); fmt.Sprint(got) != fmt.Sprint(once) {
		t.Errorf("merge of one summary twice: %v, want %v", got, once)
	}
	if r := runIn(t, dir, "", "merge", "-q", "s.tss", "s.tss", "-o", "q.tss"); r.code != 0 || r.stderr != "" {
		t.Errorf("merge -q: exit %d, stderr %q", r.code, r.stderr)
	}
}

// Summaries made with different --hop-by merged silently into a mixed
// report, and --since, --hops and the other filters given with a summary
// were ignored without a word. Summaries of different hop definitions
// refuse to merge (merge, analyze, summarize, and beside logs read with
// other options), as does reading a summary with a --hop-by it was not
// made with; filters with a summary input give a note (stderr and the
// report) that they applied to the logs only.
func TestSummaryOptionsRecorded(t *testing.T) {
	dir := t.TempDir()
	copySeed(t, dir)
	for _, c := range [][]string{
		{"summarize", "-q", "spans.jsonl", "-o", "hop.tss"},
		{"summarize", "-q", "--hop-by", "hop", "spans.jsonl", "-o", "hop2.tss"},
		{"summarize", "-q", "--map", "hop=trace_id", "spans.jsonl", "-o", "mapped.tss"},
	} {
		if r := runIn(t, dir, "", c...); r.code != 0 {
			t.Fatalf("%v: exit %d: %s", c, r.code, r.stderr)
		}
	}
	for _, args := range [][]string{
		{"merge", "hop.tss", "mapped.tss", "-o", "x.tss"},
		{"merge", "mapped.tss", "hop.tss", "-o", "x.tss"},
		{"merge", "hop.tss", "hop2.tss", "-o", "x.tss"},
		{"analyze", "hop.tss", "mapped.tss"},
		{"summarize", "hop2.tss", "mapped.tss", "-o", "x.tss"},
		{"analyze", "--map", "hop=trace_id", "hop.tss", "spans.jsonl"},
		{"analyze", "--hop-by", "hop", "hop.tss"},
	} {
		r := runIn(t, dir, "", args...)
		if r.code != exitError || !strings.Contains(r.stderr, "--hop-by") || !strings.Contains(r.stderr, "not the same things") {
			t.Errorf("%v: exit %d, stderr %q; want exit 1 naming the definitions", args, r.code, r.stderr)
		}
	}
	for _, args := range [][]string{
		{"merge", "hop.tss", "hop.tss", "-o", "same.tss"},
		{"analyze", "-q", "hop.tss", "spans.jsonl"},
		{"analyze", "-q", "--hop-by", "hop", "hop2.tss"},
		{"analyze", "-q", "--map", "hop=trace_id", "mapped.tss"},
	} {
		if r := runIn(t, dir, "", args...); r.code != 0 {
			t.Errorf("%v: exit %d: %s", args, r.code, r.stderr)
		}
	}
	for _, f := range [][]string{{"--since", "2020-01-01T00:00:00Z"}, {"--until", "2100-01-01T00:00:00Z"}, {"--hops", "forward"}, {"--exclude-hops", "x"}, {"--exclude-window", "2020-01-01T00:00:00Z/2020-01-02T00:00:00Z"}} {
		r := runIn(t, dir, "", append([]string{"analyze", "--format", "json"}, append(f, "hop.tss")...)...)
		if r.code != 0 || !strings.Contains(r.stderr, f[0]) || !strings.Contains(r.stderr, "not to the summaries") || !strings.Contains(r.stdout, "not to the summaries") {
			t.Errorf("%v with a summary: exit %d, stderr %q; want a note in stderr and the report", f, r.code, r.stderr)
		}
	}
}

// Parquet and Arrow readers trimmed names: " lead" and "trail " came
// back as "lead" and "trail" after a convert round trip. Names are data:
// hop, service and span name come back byte for byte from every format
// convert writes, whichever names the hop.
func TestNamesKeepTheirSpaces(t *testing.T) {
	dir := t.TempDir()
	names := []string{" lead", "trail ", "  both  ", "\ttab", "plain"}
	var b strings.Builder
	for i, n := range names {
		for j := range 3 {
			fmt.Fprintf(&b, `{"trace_id":"t%d%d","span_id":"s","hop":%q,"service":%q,"name":%q,"start":%d,"duration_ms":%d,"status":"ok"}`+"\n",
				i, j, n, "svc"+n, n+"op", 1700000000000000000+int64(i*3+j)*1e9, 10+j)
		}
	}
	must(t, os.WriteFile(filepath.Join(dir, "names.jsonl"), []byte(b.String()), 0o644))
	hops := func(args ...string) string {
		got, _ := hopAttempts(t, dir, args...)
		var out []string
		for h := range got {
			out = append(out, fmt.Sprintf("%q", h))
		}
		sort.Strings(out)
		return strings.Join(out, " ")
	}
	for _, hopBy := range []string{"hop", "service", "name", "service+name"} {
		want := hops("--hop-by", hopBy, "names.jsonl")
		for _, ext := range []string{"parquet", "arrow", "jsonl"} {
			out := "rt-" + strings.ReplaceAll(hopBy, "+", "") + "." + ext
			if r := runIn(t, dir, "", "convert", "-q", "names.jsonl", "-o", out); r.code != 0 {
				t.Fatalf("convert to %s: %s", ext, r.stderr)
			}
			if got := hops("--hop-by", hopBy, out); got != want {
				t.Errorf("--hop-by %s through %s: hops %s, want %s", hopBy, ext, got, want)
			}
		}
	}
}

// A gate of zero was no gate: check --max-p95 0s passed with a p95 of
// 10 s. A zero (in any unit) is a usage error naming the flag; the
// smallest positive gate gates.
func TestZeroGateIsUsageError(t *testing.T) {
	dir := t.TempDir()
	copySeed(t, dir)
	for _, flag := range []string{"--max-p95", "--max-p99", "--max-failure-time"} {
		for _, v := range []string{"0", "0s", "0ms", "0h0m0s"} {
			r := runIn(t, dir, "", "check", "--policy", "A.yaml", flag, v, "spans.jsonl")
			if r.code != exitUsage || !strings.Contains(r.stderr, flag) {
				t.Errorf("%s %s: exit %d, stderr %q; want exit 2 naming the flag", flag, v, r.code, r.stderr)
			}
		}
		if r := runIn(t, dir, "", "check", "-q", "--policy", "A.yaml", flag, "1ns", "spans.jsonl"); r.code != exitViolation {
			t.Errorf("%s 1ns: exit %d, want 3 (the gate fails): %s", flag, r.code, r.stderr)
		}
	}
}

// --map trace_id=TraceId on logs whose key is TraceID read 4,166
// "requests" instead of 59 without a word. A mapped key that no record of
// a file has is a note naming the file, the field and the key, in every
// flat format; an error under --strict; no note when the key is there.
func TestMapKeyNoRecordHas(t *testing.T) {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "m.csv"), []byte("TraceID,SpanID,hop,duration_ms\nt1,a,h,5\nt1,b,h,6\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "m.jsonl"), []byte(`{"TraceID":"t1","SpanID":"a","hop":"h","duration_ms":5}`+"\n"+`{"TraceID":"t1","SpanID":"b","hop":"h","duration_ms":6}`+"\n"), 0o644))
	if r := runIn(t, dir, "", "convert", "-q", "--map", "trace_id=TraceID,span_id=SpanID", "m.jsonl", "-o", "m.parquet"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	for _, f := range []string{"m.csv", "m.jsonl", "m.parquet"} {
		wrong := "trace_id=TraceId"
		if f == "m.parquet" {
			wrong = "trace_id=TraceID" // the parquet file has the canonical names
		}
		r := runIn(t, dir, "", "analyze", "--map", wrong, f)
		if r.code != 0 || !strings.Contains(r.stderr, f+": --map "+wrong) || !strings.Contains(r.stderr, "no record has the key") {
			t.Errorf("%s --map %s: exit %d, stderr %q; want a note naming the key", f, wrong, r.code, r.stderr)
		}
		if r := runIn(t, dir, "", "analyze", "--strict", "--map", wrong, f); r.code != exitError || !strings.Contains(r.stderr, "--strict") {
			t.Errorf("%s --strict: exit %d, stderr %q; want exit 1", f, r.code, r.stderr)
		}
	}
	for _, c := range [][]string{{"--map", "trace_id=TraceID", "m.csv"}, {"--map", "trace_id=TraceID", "m.jsonl"}, {"m.parquet"}} {
		r := runIn(t, dir, "", append([]string{"analyze", "--strict"}, c...)...)
		if r.code != 0 || strings.Contains(r.stderr, "no record has") || !strings.Contains(r.stdout, "in 1 request") {
			t.Errorf("%v: exit %d, stderr %q; want one request and no note", c, r.code, r.stderr)
		}
	}
}

// The smaller ones: a summary on stdin, gzipped or in a directory said
// "unknown format"; a leap second was refused; an end before the start,
// or one that disagrees with the duration, was used without a note; a
// CSV header naming a column twice took the last one; two policies of one
// base name shared a CONFIG label.
func TestSmallerHostileShapes(t *testing.T) {
	dir := t.TempDir()
	copySeed(t, dir)
	if r := runIn(t, dir, "", "summarize", "-q", "spans.jsonl", "-o", "s.tss"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	tss := readFile(t, filepath.Join(dir, "s.tss"))
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(tss))
	zw.Close()
	must(t, os.WriteFile(filepath.Join(dir, "s.tss.gz"), gz.Bytes(), 0o644))
	must(t, os.Mkdir(filepath.Join(dir, "d"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "d", "s.tss"), []byte(tss), 0o644))
	for _, c := range []struct{ stdin, arg string }{{"s.tss", "-"}, {"", "s.tss.gz"}, {"", "d"}} {
		r := runIn(t, dir, c.stdin, "analyze", c.arg)
		if r.code != exitError || !strings.Contains(r.stderr, "tailscope summary") || strings.Contains(r.stderr, "unknown format") {
			t.Errorf("a summary as %q: exit %d, stderr %q; want exit 1 saying it is a summary", c.arg, r.code, r.stderr)
		}
	}

	lines := `{"trace_id":"t","span_id":"a","hop":"h","start":"2016-12-31T23:59:60.5Z","duration_ms":5}
{"trace_id":"u","span_id":"b","hop":"h","start":1700000000000000000,"end":1699999999000000000,"duration_ms":5}
{"trace_id":"v","span_id":"c","hop":"h","start":1700000000000000000,"end":1700000009000000000,"duration_ms":5}
{"trace_id":"w","span_id":"d","hop":"h","start":1700000000000000000,"end":1700000000005000000,"duration_ms":5}
`
	must(t, os.WriteFile(filepath.Join(dir, "t.jsonl"), []byte(lines), 0o644))
	r := runIn(t, dir, "", "convert", "--to", "jsonl", "t.jsonl")
	if r.code != 0 || !strings.Contains(r.stdout, `"start":1483228800500000000`) {
		t.Errorf("leap second: exit %d, %s %s; want the span kept, at 2017-01-01T00:00:00.5Z", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "wrote 4 spans") || !strings.Contains(r.stderr, "read 4, skipped 0") {
		t.Errorf("leap second: %s", r.stderr)
	}
	r = runIn(t, dir, "", "analyze", "--format", "json", "t.jsonl")
	if r.code != 0 || !strings.Contains(r.stderr, "end ×2") || !strings.Contains(r.stdout, "before start") {
		t.Errorf("end before start or disagreeing with the duration: exit %d, stderr %q; want a note counting both", r.code, r.stderr)
	}

	must(t, os.WriteFile(filepath.Join(dir, "dup.csv"), []byte("trace_id,span_id,hop,duration_ms,hop\nt,s,a,5,b\n"), 0o644))
	if r := runIn(t, dir, "", "analyze", "dup.csv"); r.code != exitError || !strings.Contains(r.stderr, `"hop" twice`) {
		t.Errorf("duplicate CSV header: exit %d, stderr %q", r.code, r.stderr)
	}

	for _, d := range []string{"p1", "p2"} {
		must(t, os.Mkdir(filepath.Join(dir, d), 0o755))
	}
	must(t, os.WriteFile(filepath.Join(dir, "p1", "pol.yaml"), []byte(readFile(t, filepath.Join(seedDir, "A.yaml"))), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "p2", "pol.yaml"), []byte(readFile(t, filepath.Join(seedDir, "C.yaml"))), 0o644))
	r = runIn(t, dir, "", "check", "--format", "json", "--policy", "p1/pol.yaml", "--policy", "p2/pol.yaml", "--policy", "p2/pol.yaml", "spans.jsonl")
	var cr struct {
		Policies []struct {
			Policy struct {
				Name string `json:"name"`
			} `json:"policy"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &cr); err != nil {
		t.Fatalf("check: exit %d: %v: %s", r.code, err, r.stderr)
	}
	seen := map[string]bool{}
	for _, p := range cr.Policies {
		if seen[p.Policy.Name] || p.Policy.Name == "" {
			t.Errorf("two policies labelled %q", p.Policy.Name)
		}
		seen[p.Policy.Name] = true
	}
	if len(seen) != 3 {
		t.Errorf("labels %v, want three", seen)
	}
}
