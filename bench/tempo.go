package main

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"
)

// The Tempo case: the same generated spans as a Grafana Tempo
// vParquet4 block's data.parquet — one row per trace, the spans nested as
// resource spans (one per service instance) → scope spans → spans, with
// the columns, types and repetition of Tempo's schema (Tempo's
// docs/sources/tempo/operations/schema.md; the repository's own fixture
// ingest/testdata/tempo-vparquet4.parquet has the same schema) — timed
// with tailscope analyze against DuckDB unnesting the block's nested
// columns into the same per-hop quantiles.

// The vParquet4 schema as parquet-go struct tags. Tempo compresses with
// snappy; the bench writes zstd, as its flat Parquet file is, so that
// the two columnar cases differ in layout only. Strings are
// dictionary-encoded and times delta-encoded, as Tempo writes them.
type (
	tempoAttr struct {
		Key              string    `parquet:",dict"`
		IsArray          bool      `parquet:","`
		Value            []string  `parquet:",dict,list"`
		ValueInt         []int64   `parquet:",list"`
		ValueDouble      []float64 `parquet:",list"`
		ValueBool        []bool    `parquet:",list"`
		ValueUnsupported *string   `parquet:",optional"`
	}
	tempoDedicated struct {
		String01 *string `parquet:",optional,dict"`
		String02 *string `parquet:",optional,dict"`
		String03 *string `parquet:",optional,dict"`
		String04 *string `parquet:",optional,dict"`
		String05 *string `parquet:",optional,dict"`
		String06 *string `parquet:",optional,dict"`
		String07 *string `parquet:",optional,dict"`
		String08 *string `parquet:",optional,dict"`
		String09 *string `parquet:",optional,dict"`
		String10 *string `parquet:",optional,dict"`
	}
	tempoEvent struct {
		TimeSinceStartNano     uint64      `parquet:",delta"`
		Name                   string      `parquet:",dict"`
		Attrs                  []tempoAttr `parquet:",list"`
		DroppedAttributesCount int32       `parquet:",delta"`
	}
	tempoLink struct {
		TraceID                []byte      `parquet:","`
		SpanID                 []byte      `parquet:","`
		TraceState             string      `parquet:","`
		Attrs                  []tempoAttr `parquet:",list"`
		DroppedAttributesCount int32       `parquet:",delta"`
	}
	tempoSpan struct {
		SpanID                 []byte         `parquet:","`
		ParentSpanID           []byte         `parquet:","`
		ParentID               int32          `parquet:",delta"`
		NestedSetLeft          int32          `parquet:",delta"`
		NestedSetRight         int32          `parquet:",delta"`
		Name                   string         `parquet:",dict"`
		Kind                   int            `parquet:",delta"`
		TraceState             string         `parquet:","`
		StartTimeUnixNano      uint64         `parquet:",delta"`
		DurationNano           uint64         `parquet:",delta"`
		StatusCode             int            `parquet:",delta"`
		StatusMessage          string         `parquet:","`
		Attrs                  []tempoAttr    `parquet:",list"`
		DroppedAttributesCount int32          `parquet:",delta"`
		Events                 []tempoEvent   `parquet:",list"`
		DroppedEventsCount     int32          `parquet:","`
		Links                  []tempoLink    `parquet:",list"`
		DroppedLinksCount      int32          `parquet:","`
		HttpMethod             *string        `parquet:",optional,dict"`
		HttpUrl                *string        `parquet:",optional,dict"`
		HttpStatusCode         *int64         `parquet:",optional"`
		DedicatedAttributes    tempoDedicated `parquet:""`
	}
	tempoScope struct {
		Name                   string      `parquet:",dict"`
		Version                string      `parquet:",dict"`
		Attrs                  []tempoAttr `parquet:",list"`
		DroppedAttributesCount int32       `parquet:",delta"`
	}
	tempoScopeSpans struct {
		Scope tempoScope  `parquet:""`
		Spans []tempoSpan `parquet:",list"`
	}
	tempoResource struct {
		Attrs                  []tempoAttr    `parquet:",list"`
		DroppedAttributesCount int32          `parquet:",delta"`
		ServiceName            string         `parquet:",dict"`
		Cluster                *string        `parquet:",optional,dict"`
		Namespace              *string        `parquet:",optional,dict"`
		Pod                    *string        `parquet:",optional,dict"`
		Container              *string        `parquet:",optional,dict"`
		K8sClusterName         *string        `parquet:",optional,dict"`
		K8sNamespaceName       *string        `parquet:",optional,dict"`
		K8sPodName             *string        `parquet:",optional,dict"`
		K8sContainerName       *string        `parquet:",optional,dict"`
		DedicatedAttributes    tempoDedicated `parquet:""`
	}
	tempoResourceSpans struct {
		Resource   tempoResource     `parquet:""`
		ScopeSpans []tempoScopeSpans `parquet:"ss,list"`
	}
	tempoServiceStats struct {
		SpanCount  uint32 `parquet:",delta"`
		ErrorCount uint32 `parquet:",delta"`
	}
	tempoTrace struct {
		TraceID           []byte                       `parquet:""`
		TraceIDText       string                       `parquet:","`
		StartTimeUnixNano uint64                       `parquet:",delta"`
		EndTimeUnixNano   uint64                       `parquet:",delta"`
		DurationNano      uint64                       `parquet:",delta"`
		RootServiceName   string                       `parquet:",dict"`
		RootSpanName      string                       `parquet:",dict"`
		ServiceStats      map[string]tempoServiceStats `parquet:""`
		ResourceSpans     []tempoResourceSpans         `parquet:"rs,list"`
	}
)

// tempoRowGroupBytes is where the writer cuts a row group, as Tempo's
// block writer does at its default row group size: when the traces
// written since the last cut pass 100 MB counted at their size as OTLP
// protobuf (tempoTraceSize). The bench's traces make row groups of about
// 21k traces (250k spans), some 16 MB once encoded and compressed.
const tempoRowGroupBytes = 100_000_000

// tempoWriter writes traces to a vParquet4 data.parquet, one trace at a
// time: only the current trace and the row group's buffered columns are
// in memory.
type tempoWriter struct {
	w         *parquet.GenericWriter[tempoTrace]
	rowGroup  int64 // bytes above which the buffered row group is flushed
	buffered  int64 // tempoTraceSize of the traces since the last flush
	spans     []genSpan
	tr        tempoTrace
	resources map[tempoResKey]int // index of a resource in tr.ResourceSpans
	instances map[tempoResKey]*tempoInstance
}

type tempoResKey struct {
	service  string
	instance int
}

// tempoInstance holds the resource columns of one service instance, built
// once (the instance's pod name and its generic attributes).
type tempoInstance struct {
	pod   string
	attrs []tempoAttr
}

func newTempoWriter(w *bufio.Writer, rowGroupBytes int64) *tempoWriter {
	return &tempoWriter{
		w: parquet.NewGenericWriter[tempoTrace](w,
			parquet.Compression(&zstd.Codec{}),
			parquet.CreatedBy("tailscope-bench", "", "")),
		rowGroup:  rowGroupBytes,
		resources: map[tempoResKey]int{},
		instances: map[tempoResKey]*tempoInstance{},
	}
}

// add takes the next span; the spans of a trace come together, its root
// first (generate emits whole traces).
func (t *tempoWriter) add(s *genSpan) error {
	if len(t.spans) > 0 && t.spans[0].trace != s.trace {
		if err := t.writeTrace(); err != nil {
			return err
		}
	}
	t.spans = append(t.spans, *s)
	return nil
}

func (t *tempoWriter) close() error {
	if len(t.spans) > 0 {
		if err := t.writeTrace(); err != nil {
			return err
		}
	}
	return t.w.Close()
}

func (t *tempoWriter) instance(k tempoResKey) *tempoInstance {
	if in := t.instances[k]; in != nil {
		return in
	}
	str := func(key, v string) tempoAttr { return tempoAttr{Key: key, Value: []string{v}} }
	in := &tempoInstance{
		pod: fmt.Sprintf("%s-7d9f%d", k.service, k.instance),
		attrs: []tempoAttr{
			str("cloud.availability_zone", "eu-west-1"+string(rune('a'+k.instance))),
			str("service.instance.id", k.service+"-"+strconv.Itoa(k.instance)),
		},
	}
	t.instances[k] = in
	return in
}

// writeTrace builds the row of the trace in t.spans and writes it: the
// spans grouped by resource (service instance) in order of appearance,
// with the attributes of the OTLP case, the nested-set numbers of a
// depth-first walk, and the trace-level columns Tempo computes.
func (t *tempoWriter) writeTrace() error {
	spans := t.spans
	t.spans = t.spans[:0]
	tr := &t.tr
	root := &spans[0]
	var tid [16]byte
	binary.BigEndian.PutUint64(tid[:8], root.trace[0])
	binary.BigEndian.PutUint64(tid[8:], root.trace[1])
	tr.TraceID = append(tr.TraceID[:0], tid[:]...)
	tr.TraceIDText = strings.TrimLeft(hex.EncodeToString(tid[:]), "0")
	end := root.start + root.durNs
	for i := range spans {
		end = max(end, spans[i].start+spans[i].durNs)
	}
	tr.StartTimeUnixNano, tr.EndTimeUnixNano = uint64(root.start), uint64(end)
	tr.DurationNano = uint64(end - root.start)
	tr.RootServiceName, tr.RootSpanName = root.service, root.hop
	tr.ServiceStats = map[string]tempoServiceStats{}
	clear(t.resources)
	tr.ResourceSpans = tr.ResourceSpans[:0]
	for i := range spans {
		s := &spans[i]
		k := tempoResKey{s.service, int(s.id>>33) % otlpInstances}
		ri, ok := t.resources[k]
		if !ok {
			ri = len(tr.ResourceSpans)
			t.resources[k] = ri
			in := t.instance(k)
			tr.ResourceSpans = append(tr.ResourceSpans, tempoResourceSpans{
				Resource: tempoResource{Attrs: in.attrs, ServiceName: s.service, K8sPodName: &in.pod},
				ScopeSpans: []tempoScopeSpans{{
					Scope: tempoScope{Name: "io.opentelemetry.contrib.http", Version: "1.31.0"},
				}},
			})
		}
		st := tr.ServiceStats[s.service]
		st.SpanCount++
		if s.failed {
			st.ErrorCount++
		}
		tr.ServiceStats[s.service] = st
		ss := &tr.ResourceSpans[ri].ScopeSpans[0]
		ss.Spans = append(ss.Spans, tempoSpanOf(s, i, len(spans)))
	}
	if _, err := t.w.Write([]tempoTrace{*tr}); err != nil {
		return err
	}
	if t.buffered += tempoTraceSize(tr); t.buffered >= t.rowGroup {
		t.buffered = 0
		return t.w.Flush()
	}
	return nil
}

// tempoTraceSize is about the size of a trace as OTLP protobuf: each
// field's bytes and a tag and length or two for each (exactness does not
// matter, only that row groups hold what Tempo's would).
func tempoTraceSize(tr *tempoTrace) int64 {
	attrs := func(as []tempoAttr) int {
		n := 0
		for _, a := range as {
			n += 8 + len(a.Key)
			for _, v := range a.Value {
				n += len(v)
			}
			n += 9 * (len(a.ValueInt) + len(a.ValueDouble) + len(a.ValueBool))
		}
		return n
	}
	n := 0
	for _, rs := range tr.ResourceSpans {
		r := &rs.Resource
		n += 4 + attrs(r.Attrs) + 14 + len("service.name") + len(r.ServiceName)
		if r.K8sPodName != nil {
			n += 14 + len("k8s.pod.name") + len(*r.K8sPodName)
		}
		for _, ss := range rs.ScopeSpans {
			n += 8 + len(ss.Scope.Name) + len(ss.Scope.Version)
			for _, sp := range ss.Spans {
				n += 2 + len(tr.TraceID) + 2 + len(sp.SpanID) + 2 + len(sp.ParentSpanID) + 2 + len(sp.Name) +
					2 + 2*9 + 4 + attrs(sp.Attrs) + 6
			}
		}
	}
	return int64(n)
}

// tempoSpanOf is span i of a trace of n spans (the root first, the others
// its children): binary ids, the OTLP kind and status code, the OTLP
// case's attributes in Tempo's generic list (http.response.status_code is
// not one of the names Tempo gives a column of its own).
func tempoSpanOf(s *genSpan, i, n int) tempoSpan {
	sp := tempoSpan{
		SpanID:            binary.BigEndian.AppendUint64(nil, s.id),
		Name:              s.hop,
		Kind:              3, // client
		StartTimeUnixNano: uint64(s.start),
		DurationNano:      uint64(s.durNs),
		ParentID:          1, // the root's NestedSetLeft
		NestedSetLeft:     int32(2 * i),
		NestedSetRight:    int32(2*i + 1),
	}
	if s.parent != 0 {
		sp.ParentSpanID = binary.BigEndian.AppendUint64(nil, s.parent)
	}
	if i == 0 {
		sp.ParentID, sp.NestedSetLeft, sp.NestedSetRight = -1, 1, int32(2*n)
	}
	if s.kind == "server" {
		sp.Kind = 2
	}
	if s.failed {
		sp.StatusCode = 2
	}
	ints := func(key string, v int64) tempoAttr { return tempoAttr{Key: key, ValueInt: []int64{v}} }
	sp.Attrs = append(sp.Attrs, ints("http.response.status_code", int64(s.code)))
	if s.kind == "client" {
		sp.Attrs = append(sp.Attrs,
			tempoAttr{Key: "peer.service", Value: []string{s.hop}},
			ints("http.request.resend_count", int64(s.attempt-1)))
	}
	if s.timeoutInForceNs > 0 {
		sp.Attrs = append(sp.Attrs, tempoAttr{Key: "timeout_ms", ValueDouble: []float64{float64(s.timeoutInForceNs / 1e6)}})
	}
	return sp
}

// writeTempo writes the generated spans as a vParquet4 data.parquet at
// path, in row groups of tempoRowGroupBytes.
func writeTempo(path string, n int) (int, error) {
	return writeTempoRowGroups(path, n, tempoRowGroupBytes)
}

func writeTempoRowGroups(path string, n int, rowGroupBytes int64) (int, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	tw := newTempoWriter(w, rowGroupBytes)
	count, err := generate(n, tw.add)
	if err == nil {
		err = tw.close()
	}
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return count, err
}

// tempoHopSQL is tailscope's default hop of a trace span (--hop-by
// service+name): the resource's service and the span name, the caller's
// side of a call marked with its kind (ingest.DeriveHop).
const tempoHopSQL = `svc || ' ' || sp.Name || CASE sp.Kind WHEN 3 THEN ' (client)' WHEN 4 THEN ' (producer)' WHEN 5 THEN ' (consumer)' ELSE '' END`

// tempoQuantileSQL is the DuckDB side of the Tempo case: read_parquet of
// the block, unnest of rs → ss → Spans, and quantileSQL's per-hop
// quantiles over DurationNano (vParquet4 stores a span's duration, not
// its end).
func tempoQuantileSQL(path string) string {
	return `SELECT hop, count(*) AS attempts,
  quantile_cont(d, [0.5, 0.9, 0.95, 0.99, 0.999]) AS q,
  max(d) AS max_ms
FROM (
  SELECT ` + tempoHopSQL + ` AS hop, sp.DurationNano / 1e6 AS d
  FROM (
    SELECT svc, unnest(ss.Spans) AS sp
    FROM (
      SELECT r.Resource.ServiceName AS svc, unnest(r.ss) AS ss
      FROM (SELECT unnest(rs) AS r FROM read_parquet('` + path + `')))))
GROUP BY hop ORDER BY hop;
`
}

// tempoGroup generates the block's data (-n spans, cached in the work
// folder) as DIR/tempo/data.parquet, puts it in the page cache and returns
// tailscope analyze and DuckDB's unnest query on it.
func tempoGroup(c config, t tools, logf func(string, ...any)) (*group, error) {
	path := filepath.Join(c.dir, "tempo", "data.parquet")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	start := time.Now()
	got, err := cachedGen(path, c.n, "tempo")
	if err != nil {
		return nil, err
	}
	logf("generated %d spans as a Tempo vParquet4 block in %s (%s)", got, time.Since(start).Round(time.Millisecond), fileSize(path))
	if err := warm(path); err != nil {
		return nil, err
	}
	q, err := t.query(tempoDuckName, "quantile-tempo", tempoQuantileSQL(path), path)
	if err != nil {
		return nil, err
	}
	return &group{format: fmtTempo, size: c.n, spans: got, minRounds: minNestedRounds, ts: t.analyze(path), duck: []contender{q}}, nil
}
