package clickhouse_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/pipeline"
	"github.com/tailscope/tailscope/source/clickhouse"
)

// TestMappedSchema: a table of another layout (integer ns times, OTLP's
// numbers for kind and status, a FixedString trace id, the attributes in
// a map of text and one of numbers, other names), read through
// col.FIELD=COLUMN, gives what the exporter's table gives.
func TestMappedSchema(t *testing.T) {
	e := startEngine(t, "")
	fx := fixtures[0]
	otlp := otlpLines(asOTLP(spansOf(t, fx.path, fx.opt), fx.service))
	file := filepath.Join(t.TempDir(), "seed.otlp.jsonl")
	if err := os.WriteFile(file, otlp, 0o666); err != nil {
		t.Fatal(err)
	}
	e.createExporterTable(t, "otel", "seed")
	e.load(t, "otel", "seed", otlp)
	e.exec(t, `CREATE TABLE otel.mapped (start_ns UInt64, duration_nano UInt64, traceID FixedString(32), spanID String,
		parentSpanID String, serviceName LowCardinality(String), name LowCardinality(String), kind Int8, statusCode Int16,
		tags Map(String, String), numbers Map(String, Float64), resourceTags Map(LowCardinality(String), String), scope String) ENGINE = MergeTree ORDER BY (serviceName, start_ns)`)
	e.exec(t, `INSERT INTO otel.mapped SELECT toUnixTimestamp64Nano(Timestamp), Duration, TraceId, SpanId, ParentSpanId, ServiceName, SpanName,
		multiIf(SpanKind = 'Internal', 1, SpanKind = 'Server', 2, SpanKind = 'Client', 3, SpanKind = 'Producer', 4, SpanKind = 'Consumer', 5, 0),
		multiIf(StatusCode = 'Ok', 1, StatusCode = 'Error', 2, 0),
		mapFilter((k, v) -> k NOT IN ('retry.attempt', 'timeout_ms'), SpanAttributes),
		mapApply((k, v) -> (k, toFloat64(v)), mapFilter((k, v) -> k IN ('retry.attempt', 'timeout_ms'), SpanAttributes)),
		ResourceAttributes, ScopeName FROM otel.seed`)
	spans := spansOf(t, file, ingest.Options{})
	since, until := window(spans)
	cols := map[string]string{"start": "start_ns", "duration": "duration_nano", "trace_id": "traceID", "span_id": "spanID",
		"parent_id": "parentSpanID", "service": "serviceName", "name": "name", "kind": "kind", "status": "statusCode",
		"span_attrs": "tags,numbers", "resource_attrs": "resourceTags", "scope_name": "scope"}
	var q []string
	for _, k := range sortedKeys(cols) {
		q = append(q, "col."+k+"="+cols[k])
	}
	url := "clickhouse://" + e.host + "/otel?table=mapped&" + strings.Join(q, "&")
	fromFile := analyse(t, file, pipeline.Options{})
	fromCH := analyse(t, url, pipeline.Options{Ingest: ingest.Options{Remote: clickhouse.Remote{Options: clickhouse.Options{Since: since, Until: until}}}})
	sameResult(t, "mapped", fromFile, fromCH)
}
