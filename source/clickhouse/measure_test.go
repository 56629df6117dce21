package clickhouse_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/pipeline"
	"github.com/tailscope/tailscope/recommend"
	"github.com/tailscope/tailscope/source/clickhouse"
	"github.com/tailscope/tailscope/span"
)

// cpu is the test process's user+system CPU so far.
func cpu() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestMeasurePushdown (TAILSCOPE_CH_MEASURE=N: N generated spans, gen.sql)
// times three ways to a report of the same window: the push-down
// (Pushdown, FromState, the analysis), the pull path (every span through
// the readers), and exporting the window to Parquet over the same HTTP
// interface and analysing the file. It logs wall time, tailscope's own
// CPU and the bytes over the wire; the numbers are in docs/clickhouse.md.
func TestMeasurePushdown(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("TAILSCOPE_CH_MEASURE"))
	if n <= 0 {
		t.Skip("set TAILSCOPE_CH_MEASURE=N to measure on N generated spans")
	}
	e := startEngine(t, "")
	start := time.Now()
	e.generate(t, "otel", "m", n)
	t.Logf("%d spans generated in %v", n, time.Since(start))
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	since, until := t0, t0.Add(24*time.Hour)
	url := "clickhouse://" + e.host + "/otel?table=m"
	e.exec(t, "SELECT count(), sum(Duration), max(length(TraceId)) FROM otel.m") // the table read once: every way starts warm
	rounds, _ := strconv.Atoi(os.Getenv("TAILSCOPE_CH_ROUNDS"))
	for round := range max(rounds, 1) {
		t.Logf("round %d", round+1)
		for _, compress := range []string{"0", "1"} {
			u := url + "&compress=" + compress
			// Push-down.
			w0, c0 := time.Now(), cpu()
			p, err := clickhouse.Pushdown(context.Background(), u, clickhouse.Options{Since: since, Until: until}, ingest.Options{}, 0)
			if err != nil {
				t.Fatal(err)
			}
			acc, err := analyze.FromState(p.State)
			if err != nil {
				t.Fatal(err)
			}
			reqs, probs := span.Assemble(acc.Spans())
			recommend.RunAccum(acc, reqs, probs, analyze.Options{})
			t.Logf("compress=%s push-down: %v wall, %v tailscope CPU, %d bytes over the wire (%d spans pulled for the sample and first spans)",
				compress, time.Since(w0).Round(10*time.Millisecond), (cpu() - c0).Round(10*time.Millisecond), p.Bytes, p.Sampled)
			// Pull.
			var wire int64
			w0, c0 = time.Now(), cpu()
			l, err := pipeline.Read([]string{u}, pipeline.Options{Ingest: ingest.Options{Remote: clickhouse.Remote{Options: clickhouse.Options{Since: since, Until: until,
				Progress: func(p clickhouse.Progress) { wire = p.Bytes }}}}})
			if err != nil {
				t.Fatal(err)
			}
			l.Recommend(analyze.Options{})
			t.Logf("compress=%s pull: %v wall, %v tailscope CPU, %d bytes over the wire", compress, time.Since(w0).Round(10*time.Millisecond), (cpu() - c0).Round(10*time.Millisecond), wire)
		}
		// Export to Parquet, then analyse the file.
		w0, c0 := time.Now(), cpu()
		q := "SELECT TraceId AS trace_id, SpanId AS span_id, ParentSpanId AS parent_id, ServiceName AS service, SpanName AS name, lower(SpanKind) AS kind, " +
			"toUnixTimestamp64Nano(Timestamp) AS start_ns, toInt64(Duration) AS duration_ns, lower(StatusCode) AS status, " +
			"SpanAttributes['http.response.status_code'] AS code, SpanAttributes['zone'] AS zone, ResourceAttributes['k8s.pod.name'] AS pod " +
			"FROM otel.m WHERE Timestamp >= fromUnixTimestamp64Nano(toInt64(" + strconv.FormatInt(since.UnixNano(), 10) + ")) AND Timestamp < fromUnixTimestamp64Nano(toInt64(" +
			strconv.FormatInt(until.UnixNano(), 10) + ")) FORMAT Parquet"
		// Written by the server to a file (INSERT INTO FUNCTION file): the
		// test front streams a SELECT chunk by chunk, which would cut a
		// Parquet answer into several files. The file is on this machine, so
		// the export costs no network: the baseline's best case.
		file := filepath.Join(t.TempDir(), "window"+strconv.Itoa(round)+".parquet")
		e.exec(t, "INSERT INTO FUNCTION file('"+file+"', 'Parquet') "+strings.TrimSuffix(q, " FORMAT Parquet"))
		fi, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		size := fi.Size()
		exported := time.Since(w0)
		l, err := pipeline.Read([]string{file}, pipeline.Options{})
		if err != nil {
			t.Fatal(err)
		}
		rep, _ := l.Recommend(analyze.Options{})
		t.Logf("export to Parquet: %v (%d bytes of file), then analyse: %v; %v wall in all, %v tailscope CPU (%d spans, %d hops)",
			exported.Round(10*time.Millisecond), size, (time.Since(w0) - exported).Round(10*time.Millisecond), time.Since(w0).Round(10*time.Millisecond), (cpu() - c0).Round(10*time.Millisecond), rep.Spans, len(rep.Hops))
		os.Remove(file)
	}
}
