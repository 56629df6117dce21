package clickhouse_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/pipeline"
	"github.com/tailscope/tailscope/source/clickhouse"
)

// TestHopFilterEdges: the hop filters pushed into the query keep every
// span the readers keep, whatever the names (empty service or name,
// every kind, non-ASCII text) and the pattern (those ClickHouse would
// read otherwise are left to the readers), under each --hop-by that is
// pushed.
func TestHopFilterEdges(t *testing.T) {
	e := startEngine(t, "")
	var spans []otlpSpan
	n := 0
	for _, svc := range []string{"", "api", "ünï-svc"} {
		for _, name := range []string{"", "GET /x", "заказ", "a.b*c"} {
			for _, kind := range []string{"", "internal", "server", "client", "producer", "consumer"} {
				for k := 0; k < 3; k++ {
					n++
					status := 1
					if n%7 == 0 {
						status = 2
					}
					sp := otlpSpan{TraceID: fmt.Sprint("t", n), SpanID: fmt.Sprint("s", n), Service: svc, Name: name, Kind: kind,
						Start: 1772445600e9 + int64(n)*1e6, Duration: int64(1e6 + (n*7919)%50*1e5), Status: status}
					// A route on two spans in three, repeated on some
					// (the last one counts), empty on others.
					switch n % 6 {
					case 1, 2:
						sp.Attrs = [][2]string{{"http.route", "/api/" + name}}
					case 3:
						sp.Attrs = [][2]string{{"http.route", "/old"}, {"zone", "a"}, {"http.route", "/api/v2"}}
					case 4:
						sp.Attrs = [][2]string{{"http.route", ""}}
					}
					spans = append(spans, sp)
				}
			}
		}
	}
	otlp := otlpLines(spans)
	file := filepath.Join(t.TempDir(), "edges.otlp.jsonl")
	if err := os.WriteFile(file, otlp, 0o666); err != nil {
		t.Fatal(err)
	}
	e.createExporterTable(t, "otel", "edges")
	e.load(t, "otel", "edges", otlp)
	// The window holds every span, those the readers skip (no hop) too.
	since, until := time.Unix(0, spans[0].Start), time.Unix(0, spans[len(spans)-1].Start+1)
	url := "clickhouse://" + e.host + "/otel?table=edges"
	for _, hopBy := range []string{"", "service", "name", "attr:http.route"} {
		for _, pat := range []string{`^api`, `\(client\)$`, `^.{3} `, `^$`, `(?i)get`, `^[^ ]+$`, `заказ`, `^ünï`, `\.b\*`, `^.{7}$`, `(producer|consumer)`, `^/api/v2$`, `^/api/`} {
			re := regexp.MustCompile(pat)
			for _, o := range []ingest.Options{{HopBy: hopBy, Hops: re}, {HopBy: hopBy, ExcludeHops: re}} {
				what := fmt.Sprintf("--hop-by %q, --hops %q / --exclude-hops %q", hopBy, o.Hops, o.ExcludeHops)
				a := analyse(t, file, pipeline.Options{Ingest: o})
				o.Remote = clickhouse.Remote{Options: clickhouse.Options{Since: since, Until: until, HopBy: hopBy, Hops: o.Hops, ExcludeHops: o.ExcludeHops}}
				b := analyse(t, url, pipeline.Options{Ingest: o})
				sameResult(t, what, a, b)
				if a.skipped != b.skipped {
					t.Errorf("%s: %d spans skipped from the file, %d from ClickHouse", what, a.skipped, b.skipped)
				}
			}
		}
	}
	// Spans without a hop (no service, no name) are the readers' to skip
	// with their reason: the push-down declines the window, saying why.
	_, err := clickhouse.Pushdown(context.Background(), url, clickhouse.Options{Since: since, Until: until}, ingest.Options{}, 0)
	if !errors.Is(err, clickhouse.ErrNotPushable) || !strings.Contains(err.Error(), "spans have no hop") {
		t.Errorf("a window with spans without a hop: push-down error %v, want it declined for them", err)
	}
}
