package summary_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/pipeline"
	"github.com/tailscope/tailscope/quantile"
	"github.com/tailscope/tailscope/summary"
)

// genOptions shape generated flat JSON-lines logs.
type genOptions struct {
	traces int
	// dbAttempts is how many attempts each trace makes on the db hop at
	// most (retries after 503s and timeouts).
	dbAttempts int
	// loose adds spans without a trace id; bad adds unreadable lines.
	loose, bad bool
}

// generate writes logs of o as lines: a gateway root per trace calling
// auth and db (db retried after 503s and 300 ms timeouts, some marked as
// timeouts and some not), long-tailed latencies.
func generate(seed uint64, o genOptions) []string {
	r := rand.New(rand.NewPCG(seed, 99))
	var lines []string
	t0 := int64(1772445600) * 1e9
	lognorm := func(median float64, sigma float64) int64 {
		return int64(median * math.Exp(sigma*r.NormFloat64()))
	}
	for i := range o.traces {
		tid := fmt.Sprintf("%016x%04d", r.Uint64(), i%10000)
		start := t0 + int64(i)*3e6
		at := start
		var kids []string
		d := lognorm(2e6, 0.5)
		// auth carries an attribute with too many values to keep (its key
		// is dropped), db the pod that served it (one pod is slow).
		kids = append(kids, fmt.Sprintf(`{"trace_id":"%s","span_id":"%s-a","parent_id":"%s-r","hop":"auth","kind":"client","start":%d,"duration_ns":%d,"status":"ok","user":"u%d"}`, tid, tid, tid, at, d, r.IntN(500)))
		at += d
		for k := 1; k <= o.dbAttempts; k++ {
			pod := r.IntN(6)
			d := lognorm(20e6, 0.8)
			if pod == 0 {
				d *= 3
			}
			status, extra := "ok", ""
			switch u := r.Float64(); {
			case d > 300e6:
				d = 300e6 + int64(r.IntN(400_000))
				status = "error"
				if u < 0.5 {
					extra = `,"timeout":true`
				}
			case u < 0.06:
				status, extra = "error", `,"code":503`
			}
			kids = append(kids, fmt.Sprintf(`{"trace_id":"%s","span_id":"%s-d%d","parent_id":"%s-r","hop":"db","kind":"client","start":%d,"duration_ns":%d,"status":"%s","attempt":%d%s,"k8s.pod.name":"db-%d","zone":"z%d"}`, tid, tid, k, tid, at, d, status, k, extra, pod, pod%2))
			at += d
			if status == "ok" {
				break
			}
		}
		lines = append(lines, fmt.Sprintf(`{"trace_id":"%s","span_id":"%s-r","hop":"gateway","kind":"server","start":%d,"duration_ns":%d,"status":"ok"}`, tid, tid, start, at-start+1000))
		lines = append(lines, kids...)
		if o.loose && r.IntN(50) == 0 {
			lines = append(lines, fmt.Sprintf(`{"hop":"cron","start":%d,"duration_ns":%d,"status":"ok"}`, start, lognorm(5e6, 1)))
		}
		if o.bad && r.IntN(40) == 0 {
			lines = append(lines, `{"trace_id":"x","hop":"db","duration_ns":-5}`, `{"trace_id":"y","hop":"db","start":5,"duration_ns":"soon"}`)
		}
	}
	return lines
}

// writeChunks writes lines to n files cut at random places (a trace may
// span files), named so that their name order is the lines' order.
func writeChunks(t testing.TB, dir string, r *rand.Rand, lines []string, n int) []string {
	cuts := []int{0, len(lines)}
	for len(cuts) < n+1 {
		c := 1 + r.IntN(len(lines)-1)
		if !slices.Contains(cuts, c) {
			cuts = append(cuts, c)
		}
	}
	slices.Sort(cuts)
	var files []string
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("chunk-%03d.jsonl", i))
		if err := os.WriteFile(p, []byte(strings.Join(lines[cuts[i]:cuts[i+1]], "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	return files
}

// reportJSON is the JSON report on paths read whole.
func reportJSON(t testing.TB, paths []string, sampleSpans int) []byte {
	t.Helper()
	l, err := pipeline.Read(paths, pipeline.Options{SampleSpans: sampleSpans})
	if err != nil {
		t.Fatal(err)
	}
	return marshal(t, l.Report(analyze.Options{}))
}

func marshal(t testing.TB, rep *analyze.Report) []byte {
	b, err := json.MarshalIndent(rep, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// shardedJSON splits files at random among k shards (each read in any
// order), summarises each, round-trips
// every summary through its encoding, merges them in a random order and
// shape, and returns the JSON report on the merge.
func shardedJSON(t testing.TB, r *rand.Rand, files []string, k, sampleSpans int) []byte {
	t.Helper()
	shards := make([][]string, k)
	for i, f := range files {
		// Every shard gets a file; the rest go anywhere.
		s := i
		if i >= k {
			s = r.IntN(k)
		}
		shards[s] = append(shards[s], f)
	}
	var parts []*summary.Summary
	for _, sh := range shards {
		// A machine may read its share in any order; one summary alone
		// lists its files as read, so only merges are canonical.
		if k > 1 {
			r.Shuffle(len(sh), func(i, j int) { sh[i], sh[j] = sh[j], sh[i] })
		} else {
			slices.Sort(sh)
		}
		s, err := pipeline.Summarize(sh, pipeline.Options{SampleSpans: sampleSpans})
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, roundTrip(t, s))
	}
	for len(parts) > 1 {
		i, j := r.IntN(len(parts)), r.IntN(len(parts)-1)
		if j >= i {
			j++
		}
		m, err := summary.Merge(parts[i], parts[j])
		if err != nil {
			t.Fatal(err)
		}
		m = roundTrip(t, m)
		parts[i] = m
		parts = slices.Delete(parts, j, j+1)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "all.tss")
	if err := os.WriteFile(p, summary.Encode(parts[0]), 0o644); err != nil {
		t.Fatal(err)
	}
	// Through the same path as the command: pipeline.Read sniffs the summary.
	return reportJSON(t, []string{p}, sampleSpans)
}

func roundTrip(t testing.TB, s *summary.Summary) *summary.Summary {
	t.Helper()
	b := summary.Encode(s)
	d, err := summary.Decode(b)
	if err != nil {
		t.Fatalf("decoding a summary just encoded: %v", err)
	}
	if b2 := summary.Encode(d); !bytes.Equal(b, b2) {
		t.Fatal("a decoded summary encodes differently")
	}
	return d
}

// The report on the merge of summaries of any split of the input, merged
// in any order, is the report on the input read whole, to the byte: in
// exact mode (everything kept), with a sampled trace set, and past the
// exact range of a hop (sketches).
func TestMergeEqualsWhole(t *testing.T) {
	cases := []struct {
		name        string
		gen         genOptions
		files       int
		sampleSpans int
		runs        int
		sampled     bool
		sketched    bool
	}{
		{"exact", genOptions{traces: 1500, dbAttempts: 3, loose: true, bad: true}, 12, analyze.DefaultSampleSpans, 6, false, false},
		{"sampled", genOptions{traces: 4000, dbAttempts: 3, bad: true}, 10, 1500, 6, true, false},
		{"sketched", genOptions{traces: quantile.ExactLimit + 2000, dbAttempts: 3}, 8, 3000, 2, true, true},
	}
	if testing.Short() {
		cases = cases[:2]
	}
	for ci, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(ci), 7))
			dir := t.TempDir()
			files := writeChunks(t, dir, r, generate(uint64(ci)+1, c.gen), c.files)
			whole := reportJSON(t, files, c.sampleSpans)
			var rep analyze.Report
			if err := json.Unmarshal(whole, &rep); err != nil {
				t.Fatal(err)
			}
			// The per-hop state beyond the digests is in the report, so
			// that the comparison covers it.
			for _, field := range []string{`"attribution"`, `"examples"`, `"k8s.pod.name"`} {
				if !bytes.Contains(whole, []byte(field)) {
					t.Fatalf("the report has no %s", field)
				}
			}
			if c.gen.bad && rep.Skipped == 0 {
				t.Fatal("no line was skipped")
			}
			if (rep.Sample != nil) != c.sampled {
				t.Fatalf("sampled: %v, want %v", rep.Sample != nil, c.sampled)
			}
			if c.sketched {
				db := -1
				for i, h := range rep.Hops {
					if h.Hop == "db" {
						db = i
					}
				}
				if db < 0 || rep.Hops[db].Attempts <= quantile.ExactLimit {
					t.Fatalf("db has not more than %d attempts", quantile.ExactLimit)
				}
			}
			for run := range c.runs {
				k := 1 + r.IntN(len(files))
				got := shardedJSON(t, r, files, k, c.sampleSpans)
				if !bytes.Equal(got, whole) {
					t.Fatalf("run %d, %d shards: the merged report differs from the whole:\n%s", run, k, firstDiff(whole, got))
				}
			}
		})
	}
}

// The repository's own fixtures, in every format the reader sniffs: a
// split of the files (and of the JSON-lines samples into chunks) merges
// to the report on all of them.
func TestMergeFixtures(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(3, 3))
	files := []string{
		"../testdata/real/jaeger/ui-trace.json",
		"../testdata/real/otel-proto/trace.json",
		"../testdata/real/zipkin/messaging-kafka.json",
		"../testdata/real/zipkin/smartthings-oauth-authorization.json",
	}
	for _, s := range []string{"../samples/seed-chain/spans.jsonl", "../samples/seed-chain/recorded-under-A.jsonl"} {
		b, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		sub := filepath.Join(dir, filepath.Base(s))
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		files = append(files, writeChunks(t, sub, r, lines, 5)...)
	}
	slices.Sort(files)
	whole := reportJSON(t, files, analyze.DefaultSampleSpans)
	for run := range 8 {
		k := 1 + r.IntN(len(files))
		if got := shardedJSON(t, r, files, k, analyze.DefaultSampleSpans); !bytes.Equal(got, whole) {
			t.Fatalf("run %d, %d shards: the merged report differs from the whole:\n%s", run, k, firstDiff(whole, got))
		}
	}
}

// firstDiff shows where two reports part.
func firstDiff(a, b []byte) string {
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			lo := max(0, i-3)
			return fmt.Sprintf("line %d:\nwhole:  %s\nmerged: %s\ncontext:\n%s", i+1, al[i], bl[i], strings.Join(al[lo:i+1], "\n"))
		}
	}
	return fmt.Sprintf("lengths %d and %d lines", len(al), len(bl))
}
