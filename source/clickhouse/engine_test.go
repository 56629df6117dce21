package clickhouse_test

// A real ClickHouse engine for the tests: chDB (npm chdb, the engine as a
// library) behind testdata/chfront.js, a loopback front that serves
// ClickHouse's HTTP interface for plain SQL. The tables are made with
// tailscope's statement of the OpenTelemetry Collector ClickHouse
// exporter's otel_traces layout (testdata/otel_traces.sql: its column
// names and types) and filled with rows written by the exporter's rules
// (exporterRows) from OTLP JSON.

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// engine is a chDB front serving one data directory.
type engine struct {
	host string // 127.0.0.1:PORT
	key  string // the password of user "default"
}

// chdbDir is where .ci/run installs npm chdb: $TAILSCOPE_CHDB_DIR, else
// .cache/chdb at the top of the repository.
func chdbDir(t *testing.T) string {
	if d := os.Getenv("TAILSCOPE_CHDB_DIR"); d != "" {
		return d
	}
	wd, _ := os.Getwd()
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, ".cache", "chdb")
		}
		if filepath.Dir(d) == d {
			t.Fatal("no go.mod above the working directory")
		}
	}
}

// startEngine starts a front over a fresh chDB data directory, with key
// as the password (none when ""). Without node or chdb the test skips,
// saying how to get them, unless TAILSCOPE_REQUIRE_CHDB=1 (CI) makes it
// fail.
func startEngine(t *testing.T, key string) *engine {
	t.Helper()
	dir := chdbDir(t)
	missing := ""
	node, err := exec.LookPath("node")
	if err != nil {
		missing = "node is not installed"
	} else if _, err := os.Stat(filepath.Join(dir, "node_modules", "chdb", "package.json")); err != nil {
		missing = "npm chdb is not in " + dir
	}
	if missing != "" {
		msg := missing + ": the ClickHouse engine tests need it; install it with `npm install --prefix .cache/chdb chdb@3.4.0` (what .ci/run does, about 570 MB) or point TAILSCOPE_CHDB_DIR at such a folder"
		if os.Getenv("TAILSCOPE_REQUIRE_CHDB") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	data := t.TempDir()
	cmd := exec.Command(node, filepath.Join("testdata", "chfront.js"), data)
	cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(dir, "node_modules"), "CHFRONT_KEY="+key)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	port := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		port <- strings.TrimSpace(line)
	}()
	select {
	case p := <-port:
		if p == "" {
			t.Fatalf("chfront did not start: %s", stderr.String())
		}
		return &engine{host: "127.0.0.1:" + p, key: key}
	case <-time.After(60 * time.Second):
		t.Fatalf("chfront did not start within a minute: %s", stderr.String())
	}
	return nil
}

// exec runs statements, failing the test on an error.
func (e *engine) exec(t *testing.T, sql string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", "http://"+e.host+"/", strings.NewReader(sql))
	if e.key != "" {
		req.Header.Set("X-ClickHouse-Key", e.key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%.200s: HTTP %d: %s", sql, resp.StatusCode, b)
	}
	return string(b)
}

// createExporterTable makes db.table with the exporter's layout
// (testdata/otel_traces.sql, {db} and {table} replaced).
func (e *engine) createExporterTable(t *testing.T, db, table string) {
	t.Helper()
	ddl, err := os.ReadFile(filepath.Join("testdata", "otel_traces.sql"))
	if err != nil {
		t.Fatal(err)
	}
	e.exec(t, fmt.Sprintf("CREATE DATABASE IF NOT EXISTS %q", db))
	e.exec(t, strings.NewReplacer("{db}", strconv.Quote(db), "{table}", strconv.Quote(table)).Replace(string(ddl)))
}

// load inserts OTLP JSON documents (one or more, or lines) into db.table
// as the exporter would write them.
func (e *engine) load(t *testing.T, db, table string, otlp []byte) int {
	t.Helper()
	rows := exporterRows(t, otlp)
	total := len(rows)
	for len(rows) > 0 {
		n := min(len(rows), 20000)
		e.exec(t, fmt.Sprintf("INSERT INTO %q.%q FORMAT JSONEachRow\n", db, table)+strings.Join(rows[:n], "\n"))
		rows = rows[n:]
	}
	return total
}

type otlpKV struct {
	Key   string                     `json:"key"`
	Value map[string]json.RawMessage `json:"value"`
}

type otlpDoc struct {
	ResourceSpans []struct {
		Resource struct {
			Attributes []otlpKV `json:"attributes"`
		} `json:"resource"`
		ScopeSpans []struct {
			Scope struct {
				Name    string `json:"name"`
				Version string `json:"version"`
			} `json:"scope"`
			Spans []struct {
				TraceID      string          `json:"traceId"`
				SpanID       string          `json:"spanId"`
				ParentSpanID string          `json:"parentSpanId"`
				TraceState   string          `json:"traceState"`
				Name         string          `json:"name"`
				Kind         json.RawMessage `json:"kind"`
				Start        json.Number     `json:"startTimeUnixNano"`
				End          json.Number     `json:"endTimeUnixNano"`
				Attributes   []otlpKV        `json:"attributes"`
				Events       []struct {
					Time       json.Number `json:"timeUnixNano"`
					Name       string      `json:"name"`
					Attributes []otlpKV    `json:"attributes"`
				} `json:"events"`
				Status struct {
					Code    json.RawMessage `json:"code"`
					Message string          `json:"message"`
				} `json:"status"`
			} `json:"spans"`
		} `json:"scopeSpans"`
	} `json:"resourceSpans"`
}

// asString is pcommon.Value.AsString of an OTLP JSON value, for the
// scalar kinds: what the exporter stores in its Map columns.
func asString(v map[string]json.RawMessage) (string, bool) {
	for k, raw := range v {
		var s string
		switch k {
		case "stringValue":
			json.Unmarshal(raw, &s)
			return s, true
		case "intValue":
			if json.Unmarshal(raw, &s) != nil {
				s = string(raw)
			}
			return s, true
		case "doubleValue":
			var f float64
			json.Unmarshal(raw, &f)
			return strconv.FormatFloat(f, 'f', -1, 64), true
		case "boolValue":
			return string(raw), true
		}
	}
	return "", false
}

// kvJSON is attributes as a JSON object in their order (a Map column).
func kvJSON(kvs []otlpKV) string {
	var b strings.Builder
	b.WriteByte('{')
	n := 0
	for _, kv := range kvs {
		v, ok := asString(kv.Value)
		if !ok {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(kv.Key)
		s, _ := json.Marshal(v)
		b.Write(k)
		b.WriteByte(':')
		b.Write(s)
		n++
	}
	b.WriteByte('}')
	return b.String()
}

var kindNames = []string{"Unspecified", "Internal", "Server", "Client", "Producer", "Consumer"}
var statusNames = []string{"Unset", "Ok", "Error"}

// enum reads an OTLP enum as its number (or its protojson name).
func enum(raw json.RawMessage, names map[string]int) int {
	var n int
	if json.Unmarshal(raw, &n) == nil {
		return n
	}
	var s string
	json.Unmarshal(raw, &s)
	return names[s]
}

// nanoText is a DateTime64(9) as ClickHouse parses it from text.
func nanoText(ns int64) string {
	return fmt.Sprintf("%d.%09d", ns/1e9, ns%1e9)
}

// hexID is an OTLP JSON id as the exporter writes it: lower-case hex.
func hexID(s string) string { return strings.ToLower(s) }

// exporterRows are the rows the exporter writes for OTLP JSON documents:
// one per span, with the resource's and the span's attributes as text
// (AsString), the kind and status as pdata names them (Server, Error).
func exporterRows(t *testing.T, otlp []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(otlp))
	dec.UseNumber()
	var rows []string
	kinds := map[string]int{"SPAN_KIND_INTERNAL": 1, "SPAN_KIND_SERVER": 2, "SPAN_KIND_CLIENT": 3, "SPAN_KIND_PRODUCER": 4, "SPAN_KIND_CONSUMER": 5}
	codes := map[string]int{"STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}
	for {
		var d otlpDoc
		if err := dec.Decode(&d); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		for _, rs := range d.ResourceSpans {
			service := ""
			for _, kv := range rs.Resource.Attributes {
				if kv.Key == "service.name" {
					service, _ = asString(kv.Value)
				}
			}
			res := kvJSON(rs.Resource.Attributes)
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					start, _ := strconv.ParseInt(string(sp.Start), 10, 64)
					end, _ := strconv.ParseInt(string(sp.End), 10, 64)
					var evT, evN, evA []string
					for _, ev := range sp.Events {
						ns, _ := strconv.ParseInt(string(ev.Time), 10, 64)
						evT = append(evT, strconv.Quote(nanoText(ns)))
						n, _ := json.Marshal(ev.Name)
						evN = append(evN, string(n))
						evA = append(evA, kvJSON(ev.Attributes))
					}
					name, _ := json.Marshal(sp.Name)
					svc, _ := json.Marshal(service)
					msg, _ := json.Marshal(sp.Status.Message)
					ts, _ := json.Marshal(sp.TraceState)
					row := fmt.Sprintf(`{"Timestamp":%q,"TraceId":%q,"SpanId":%q,"ParentSpanId":%q,"TraceState":%s,"SpanName":%s,"SpanKind":%q,"ServiceName":%s,"ResourceAttributes":%s,"ScopeName":%q,"ScopeVersion":%q,"SpanAttributes":%s,"Duration":%d,"StatusCode":%q,"StatusMessage":%s,"Events.Timestamp":[%s],"Events.Name":[%s],"Events.Attributes":[%s]}`,
						nanoText(start), hexID(sp.TraceID), hexID(sp.SpanID), hexID(sp.ParentSpanID), ts, name,
						kindNames[enum(sp.Kind, kinds)], svc, res, ss.Scope.Name, ss.Scope.Version, kvJSON(sp.Attributes),
						uint64(end-start), statusNames[enum(sp.Status.Code, codes)], msg,
						strings.Join(evT, ","), strings.Join(evN, ","), strings.Join(evA, ","))
					rows = append(rows, row)
				}
			}
		}
	}
	return rows
}

// otlpOf writes spans as OTLP JSON lines (one resource a span), ids
// turned into hex when they are not, and the span's fields as the
// attributes the readers take them from: what an instrumented service
// would have exported.
type otlpSpan struct {
	TraceID, SpanID, ParentID string
	Service, Name, Kind       string
	Start, Duration           int64
	Status                    int // 0 unset, 1 ok, 2 error
	Attrs                     [][2]string
	Ints                      map[string]int64
	Doubles                   map[string]float64
}

func toHex(id string, n int) string {
	if id == "" {
		return ""
	}
	if len(id) == 2*n {
		if _, err := hex.DecodeString(id); err == nil {
			return strings.ToLower(id)
		}
	}
	h := sha256.Sum256([]byte(id))
	return hex.EncodeToString(h[:n])
}

func otlpLines(spans []otlpSpan) []byte {
	var b bytes.Buffer
	kinds := map[string]int{"internal": 1, "server": 2, "client": 3, "producer": 4, "consumer": 5}
	for _, s := range spans {
		attr := func(k, typ string, v any) string {
			kj, _ := json.Marshal(k)
			vj, _ := json.Marshal(v)
			return fmt.Sprintf(`{"key":%s,"value":{%q:%s}}`, kj, typ, vj)
		}
		var as []string
		for _, kv := range s.Attrs {
			as = append(as, attr(kv[0], "stringValue", kv[1]))
		}
		for _, k := range sortedKeys(s.Ints) {
			as = append(as, attr(k, "intValue", strconv.FormatInt(s.Ints[k], 10)))
		}
		for _, k := range sortedKeys(s.Doubles) {
			as = append(as, attr(k, "doubleValue", s.Doubles[k]))
		}
		svc, _ := json.Marshal(s.Service)
		name, _ := json.Marshal(s.Name)
		parent := ""
		if p := toHex(s.ParentID, 8); p != "" {
			parent = fmt.Sprintf(`"parentSpanId":%q,`, p)
		}
		fmt.Fprintf(&b, `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":%s}}]},"scopeSpans":[{"scope":{"name":"tailscope.test","version":"1"},"spans":[{"traceId":%q,"spanId":%q,%s"name":%s,"kind":%d,"startTimeUnixNano":"%d","endTimeUnixNano":"%d","attributes":[%s],"status":{"code":%d}}]}]}]}`+"\n",
			svc, toHex(s.TraceID, 16), toHex(s.SpanID, 8), parent, name, kinds[s.Kind], s.Start, s.Start+s.Duration, strings.Join(as, ","), s.Status)
	}
	return b.Bytes()
}

func sortedKeys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	for i := 1; i < len(ks); i++ {
		for j := i; j > 0 && ks[j] < ks[j-1]; j-- {
			ks[j], ks[j-1] = ks[j-1], ks[j]
		}
	}
	return ks
}
