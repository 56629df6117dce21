package clickhouse_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/pipeline"
	"github.com/tailscope/tailscope/source/clickhouse"
)

// generate fills db.table with n generated spans (testdata/gen.sql).
func (e *engine) generate(t *testing.T, db, table string, n int) {
	t.Helper()
	q, err := os.ReadFile(filepath.Join("testdata", "gen.sql"))
	if err != nil {
		t.Fatal(err)
	}
	e.createExporterTable(t, db, table)
	e.exec(t, strings.NewReplacer("{table}", db+"."+table, "{rows}", strconv.Itoa(n)).Replace(string(q)))
}

// TestManyChunks: an answer of several of the engine's blocks (65,409
// rows each here) streams whole, and the window is cut on the server to
// the nanosecond.
func TestManyChunks(t *testing.T) {
	e := startEngine(t, "")
	const n = 150_000
	e.generate(t, "otel", "gen", n)
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		since, until time.Time
	}{{t0, t0.Add(time.Hour)}, {t0.Add(10*time.Second + 500*time.Microsecond), t0.Add(20*time.Second + 2*time.Microsecond)}} {
		want, _ := strconv.Atoi(strings.TrimSpace(e.exec(t, "SELECT count() FROM otel.gen WHERE Timestamp >= fromUnixTimestamp64Nano(toInt64("+
			strconv.FormatInt(c.since.UnixNano(), 10)+")) AND Timestamp < fromUnixTimestamp64Nano(toInt64("+strconv.FormatInt(c.until.UnixNano(), 10)+"))")))
		var reports [2]string
		var wire [2]int64
		// Plain, and gzip (compress=1, as the server is asked for off
		// the loopback): the same report, fewer bytes on the wire.
		for i, compress := range []string{"0", "1"} {
			progress := func(p clickhouse.Progress) { wire[i] = p.Bytes }
			l, err := pipeline.Read([]string{"clickhouse://" + e.host + "/otel?table=gen&compress=" + compress}, pipeline.Options{Ingest: ingest.Options{
				Remote: clickhouse.Remote{Options: clickhouse.Options{Since: c.since, Until: c.until, Progress: progress}}}})
			if err != nil {
				t.Fatal(err)
			}
			rep := l.Report(analyze.Options{})
			if rep.Spans != int64(want) || rep.Skipped != 0 || len(rep.Hops) != 5 {
				t.Errorf("window %v–%v: %d spans (%d skipped) in %d hops, want %d spans in 5", c.since, c.until, rep.Spans, rep.Skipped, len(rep.Hops), want)
			}
			h, _ := json.Marshal(rep.Hops)
			reports[i] = string(h)
		}
		if reports[0] != reports[1] {
			t.Errorf("window %v–%v: the reports differ with compression", c.since, c.until)
		}
		if wire[1]*2 > wire[0] {
			t.Errorf("window %v–%v: %d bytes on the wire compressed, %d plain", c.since, c.until, wire[1], wire[0])
		}
		t.Logf("window %v–%v: %d spans, %d bytes plain, %d gzip", c.since, c.until, want, wire[0], wire[1])
	}
}
