package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/span"
)

// jaegerConfig runs Jaeger v2 with memory storage, every endpoint on
// loopback (its defaults listen on all interfaces) and its own metrics
// off.
const jaegerConfig = `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_storage:
    backends:
      mem:
        memory:
          max_traces: 100000
  jaeger_query:
    storage:
      traces: mem
    http:
      endpoint: 127.0.0.1:%d
    grpc:
      endpoint: 127.0.0.1:%d
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
exporters:
  jaeger_storage_exporter:
    trace_storage: mem
`

// freePort is a loopback port free now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestJaegerIntegration sends real traces (TrainTicket's, from the Nezha
// data set) to a real Jaeger v2 over OTLP/HTTP, then reads them back
// through jaeger://: analyze gives exactly the report of the same OTLP
// file, and recommend the same policy. It runs only when TAILSCOPE_JAEGER
// names a jaeger binary (see the README).
func TestJaegerIntegration(t *testing.T) {
	bin := os.Getenv("TAILSCOPE_JAEGER")
	if bin == "" {
		t.Skip("TAILSCOPE_JAEGER does not name a jaeger binary")
	}
	dir := t.TempDir()
	query, grpcPort, otlp := freePort(t), freePort(t), freePort(t)
	cfg := filepath.Join(dir, "jaeger.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(jaegerConfig, query, grpcPort, otlp)), 0o666); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--config", cfg)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		cmd.Wait()
		if t.Failed() {
			t.Logf("jaeger's log:\n%s", logs.String())
		}
	}()
	base := fmt.Sprintf("http://127.0.0.1:%d", query)
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(base + "/api/v3/services")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("jaeger did not answer on %s within a minute: %v", base, err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// The real trace data, as OTLP JSON: one document per trace.
	var spans []span.Span
	m, err := ingest.ParseMap([]string{"trace_id=TraceID,span_id=SpanID,parent_id=ParentID,service=PodName,name=OperationName,start=StartTimeUnixNano,end=EndTimeUnixNano"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ingest.Read([]string{"../../testdata/real/nezha-trainticket/fault-12_06_trace.csv"}, ingest.Options{Map: m}, ingest.SinkFunc(func(s *span.Span) { spans = append(spans, *s) })); err != nil {
		t.Fatal(err)
	}
	docs := otlpByTrace(spans)
	file := filepath.Join(dir, "trainticket.otlp.jsonl")
	var all bytes.Buffer
	for _, d := range docs {
		all.Write(d)
		all.WriteByte('\n')
	}
	if err := os.WriteFile(file, all.Bytes(), 0o666); err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/v1/traces", otlp), "application/json", bytes.NewReader(d))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("OTLP/HTTP export: HTTP %d", resp.StatusCode)
		}
	}

	url := fmt.Sprintf("jaeger://127.0.0.1:%d", query)
	window := []string{"--since", "2023-01-30T12:00:00Z", "--until", "2023-01-30T12:10:00Z"}
	// A small limit, so that slices are cut in two; a fine floor, so that
	// none stays full (no trace is left out as in a sample).
	fetch := append([]string{"--fetch-limit", "10", "--fetch-slice", "10m", "--fetch-min-slice", "10ms"}, window...)
	fromFile, _ := runOK(t, append([]string{"analyze", "-q", "--format", "json", file}, window...)...)
	var fromURL, stderr string
	for try := 0; ; try++ { // the store takes the spans in a moment
		fromURL, stderr = runOK(t, append([]string{"analyze", "--format", "json", url}, fetch...)...)
		if strings.Contains(stderr, fmt.Sprintf(": %d traces", len(docs))) || try == 50 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("%s", strings.TrimSpace(stderr))
	if !reflect.DeepEqual(reportWithoutInputs(t, fromURL), reportWithoutInputs(t, fromFile)) {
		t.Errorf("analyze %s differs from analyze of the OTLP file\nURL:  %.3000s\nfile: %.3000s", url, fromURL, fromFile)
	}
	if !strings.Contains(stderr, "cut in two") || strings.Contains(stderr, "rest on a sample") {
		t.Errorf("want slices cut, none kept as a sample: %s", stderr)
	}
	polFile, _ := runOK(t, append([]string{"recommend", "-q", file}, window...)...)
	polURL, _ := runOK(t, append([]string{"recommend", "-q", url}, fetch...)...)
	strip := func(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, url, "X"), file, "X") }
	if strip(polURL) != strip(polFile) {
		t.Errorf("recommend %s:\n%s\nrecommend of the file:\n%s", url, polURL, polFile)
	}
}

// otlpByTrace writes spans as OTLP JSON (hex ids, as OTLP/HTTP takes
// them), one TracesData per trace, a ResourceSpans per service.
func otlpByTrace(spans []span.Span) [][]byte {
	byTrace := map[string][]span.Span{}
	var order []string
	for _, s := range spans {
		if _, ok := byTrace[s.TraceID]; !ok {
			order = append(order, s.TraceID)
		}
		byTrace[s.TraceID] = append(byTrace[s.TraceID], s)
	}
	var out [][]byte
	for _, id := range order {
		bySvc := map[string][]any{}
		var svcs []string
		for _, s := range byTrace[id] {
			if _, ok := bySvc[s.Service]; !ok {
				svcs = append(svcs, s.Service)
			}
			sp := map[string]any{
				"traceId": s.TraceID, "spanId": s.SpanID, "name": s.Name, "kind": 1,
				"startTimeUnixNano": strconv.FormatInt(s.Start, 10), "endTimeUnixNano": strconv.FormatInt(s.Start+s.Duration, 10),
			}
			if s.ParentID != "" {
				sp["parentSpanId"] = s.ParentID
			}
			bySvc[s.Service] = append(bySvc[s.Service], sp)
		}
		var rs []any
		for _, svc := range svcs {
			rs = append(rs, map[string]any{
				"resource":   map[string]any{"attributes": []any{map[string]any{"key": "service.name", "value": map[string]any{"stringValue": svc}}}},
				"scopeSpans": []any{map[string]any{"scope": map[string]any{"name": "nezha"}, "spans": bySvc[svc]}},
			})
		}
		b, _ := json.Marshal(map[string]any{"resourceSpans": rs})
		out = append(out, b)
	}
	return out
}
