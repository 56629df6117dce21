// Package sourcetest serves fake tracing backends for tests: each holds a set of traces and answers its
// API's queries with the real API's semantics (which traces match a
// window, the limit, most recent first, the 404 of an empty Jaeger
// search) in the real API's response shapes (see the comments at the top
// of jaeger.go, tempo.go and zipkin.go, and testdata/ for answers
// recorded from the real servers' documentation and test snapshots).
//
// It is for tests only; nothing else may import it.
package sourcetest

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type Span struct {
	TraceID, SpanID, ParentID string // hex
	Service, Name             string
	Start, Dur                int64 // ns
}

type Trace struct {
	ID    string
	Spans []Span
}

// earliest is the trace's first span start.
func (t *Trace) Earliest() int64 {
	m := t.Spans[0].Start
	for _, s := range t.Spans {
		m = min(m, s.Start)
	}
	return m
}

// Gen makes n traces starting in [t0, t0+window): a root in
// "frontend" and children in "api" and "db", some of which start a
// while after the root (so that a trace crosses slice boundaries).
func Gen(seed int64, n int, t0 time.Time, window time.Duration) []*Trace {
	r := rand.New(rand.NewSource(seed))
	var out []*Trace
	for i := range n {
		tid := fmt.Sprintf("%016x%016x", r.Uint64(), r.Uint64())
		if i%7 == 0 {
			tid = "00" + tid[2:]
		}
		start := t0.UnixNano() + r.Int63n(int64(window))
		root := Span{TraceID: tid, SpanID: fmt.Sprintf("%016x", r.Uint64()), Service: "frontend", Name: "GET /", Start: start, Dur: int64(50+r.Intn(400)) * 1e6}
		tr := &Trace{ID: tid, Spans: []Span{root}}
		parent := root
		for j, svc := range []string{"api", "db"} {
			c := Span{TraceID: tid, SpanID: fmt.Sprintf("%016x", r.Uint64()), ParentID: parent.SpanID, Service: svc, Name: fmt.Sprintf("call%d", j),
				Start: parent.Start + int64(r.Intn(40))*1e6, Dur: int64(5+r.Intn(40)) * 1e6}
			tr.Spans = append(tr.Spans, c)
			parent = c
		}
		out = append(out, tr)
	}
	return out
}

// Keys are the trace/span ids of traces, as ingest names them.
func Keys(traces []*Trace) map[string]int {
	m := map[string]int{}
	for _, t := range traces {
		for _, s := range t.Spans {
			m[s.TraceID+"/"+s.SpanID] = 0
		}
	}
	return m
}

// recent sorts traces most recent first, as the stores answer.
func recent(traces []*Trace) []*Trace {
	s := append([]*Trace(nil), traces...)
	sort.Slice(s, func(i, j int) bool { return s[i].Earliest() > s[j].Earliest() })
	return s
}

// ResourceSpans writes a trace's spans as OTLP resourceSpans, one
// per service; ids in hex or in base64 (as generic protojson writes them).
func ResourceSpans(t *Trace, b64 bool) []any {
	id := func(h string) string {
		if !b64 {
			return h
		}
		raw, _ := hex.DecodeString(h)
		return base64.StdEncoding.EncodeToString(raw)
	}
	bySvc := map[string][]any{}
	var order []string
	for _, s := range t.Spans {
		if _, ok := bySvc[s.Service]; !ok {
			order = append(order, s.Service)
		}
		sp := map[string]any{
			"traceId": id(s.TraceID), "spanId": id(s.SpanID), "name": s.Name, "kind": 2,
			"startTimeUnixNano": strconv.FormatInt(s.Start, 10), "endTimeUnixNano": strconv.FormatInt(s.Start+s.Dur, 10),
			"status": map[string]any{},
		}
		if s.ParentID != "" {
			sp["parentSpanId"] = id(s.ParentID)
		}
		bySvc[s.Service] = append(bySvc[s.Service], sp)
	}
	var out []any
	for _, svc := range order {
		out = append(out, map[string]any{
			"resource":   map[string]any{"attributes": []any{map[string]any{"key": "service.name", "value": map[string]any{"stringValue": svc}}}},
			"scopeSpans": []any{map[string]any{"scope": map[string]any{"name": "fake"}, "spans": bySvc[svc]}},
		})
	}
	return out
}

// Faults make a fake fail some requests: the first N requests to a path
// with the prefix get status (and Retry-After, when set).
type Faults struct {
	mu         sync.Mutex
	Prefix     string
	N          int
	Status     int
	RetryAfter string
}

func (f *Faults) hit(w http.ResponseWriter, r *http.Request) bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.N == 0 || !strings.HasPrefix(r.URL.Path, f.Prefix) {
		return false
	}
	f.N--
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	http.Error(w, `{"error":"busy"}`, f.Status)
	return true
}

// Server counts requests and checks the auth header when one is set.
type Server struct {
	*httptest.Server
	Requests atomic.Int64
	inFlight atomic.Int64
	MaxIn    atomic.Int64  // the most requests in flight at once
	Auth     string        // when set, the Authorization header required
	Faults   *Faults       // failures to inject
	Delay    time.Duration // before each answer
}

func (s *Server) wrap(t testing.TB, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.Requests.Add(1)
		n := s.inFlight.Add(1)
		defer s.inFlight.Add(-1)
		for {
			m := s.MaxIn.Load()
			if n <= m || s.MaxIn.CompareAndSwap(m, n) {
				break
			}
		}
		if s.Delay > 0 {
			time.Sleep(s.Delay)
		}
		if s.Auth != "" && r.Header.Get("Authorization") != s.Auth {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if s.Faults.hit(w, r) {
			return
		}
		h(w, r)
	}
}

// Jaeger serves api_v3's services and trace search over traces.
func Jaeger(t testing.TB, traces []*Trace, b64 bool) *Server {
	s := &Server{}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v3/services", s.wrap(t, func(w http.ResponseWriter, r *http.Request) {
		set := map[string]bool{}
		for _, tr := range traces {
			for _, sp := range tr.Spans {
				set[sp.Service] = true
			}
		}
		var svcs []string
		for k := range set {
			svcs = append(svcs, k)
		}
		json.NewEncoder(w).Encode(map[string]any{"services": svcs})
	}))
	mux.HandleFunc("/api/v3/traces", s.wrap(t, func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		svc := q.Get("query.service_name")
		tmin, err1 := time.Parse(time.RFC3339Nano, q.Get("query.start_time_min"))
		tmax, err2 := time.Parse(time.RFC3339Nano, q.Get("query.start_time_max"))
		n, err3 := strconv.Atoi(q.Get("query.num_traces"))
		if err1 != nil || err2 != nil || err3 != nil || n <= 0 {
			http.Error(w, `{"error":{"httpCode":400,"message":"malformed parameter"}}`, http.StatusBadRequest)
			return
		}
		var rs []any
		found := 0
		for _, tr := range recent(traces) {
			if found == n {
				break
			}
			match := false
			for _, sp := range tr.Spans {
				if (svc == "" || sp.Service == svc) && sp.Start >= tmin.UnixNano() && sp.Start <= tmax.UnixNano() {
					match = true
				}
			}
			if match {
				found++
				rs = append(rs, ResourceSpans(tr, b64)...)
			}
		}
		if found == 0 {
			http.Error(w, `{"error":{"httpCode":404,"message":"No traces found"}}`, http.StatusNotFound)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"result": map[string]any{"resourceSpans": rs}})
	}))
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// Tempo serves search and trace by id (v2) over traces; partial names
// traces answered PARTIAL (half their spans), batches makes the trace
// answers use the older {"batches":…} shape, and gone traces are listed by
// search but 404 when fetched.
func Tempo(t testing.TB, traces []*Trace, partial, gone map[string]bool, batches bool) *Server {
	s := &Server{}
	byID := map[string]*Trace{}
	for _, tr := range traces {
		byID[strings.TrimLeft(tr.ID, "0")] = tr
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/search", s.wrap(t, func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		start, err1 := strconv.ParseInt(q.Get("start"), 10, 64)
		end, err2 := strconv.ParseInt(q.Get("end"), 10, 64)
		limit, err3 := strconv.Atoi(q.Get("limit"))
		if err1 != nil || err2 != nil || err3 != nil || end <= start || q.Get("q") == "" {
			http.Error(w, "invalid start, end, limit or q", http.StatusBadRequest)
			return
		}
		out := []any{}
		for _, tr := range recent(traces) {
			if len(out) == limit {
				break
			}
			first, last := tr.Earliest(), int64(0)
			for _, sp := range tr.Spans {
				last = max(last, sp.Start+sp.Dur)
			}
			if last >= start*1e9 && first <= end*1e9 {
				out = append(out, map[string]any{
					"traceID": strings.TrimLeft(tr.ID, "0"), "rootServiceName": "frontend", "rootTraceName": "GET /",
					"startTimeUnixNano": strconv.FormatInt(first, 10), "durationMs": (last - first) / 1e6,
					"spanSet": map[string]any{"spans": []any{}, "matched": 1},
				})
			}
		}
		json.NewEncoder(w).Encode(map[string]any{"traces": out, "metrics": map[string]any{"inspectedTraces": len(traces)}})
	}))
	mux.HandleFunc("/api/v2/traces/", s.wrap(t, func(w http.ResponseWriter, r *http.Request) {
		id := strings.TrimLeft(strings.TrimPrefix(r.URL.Path, "/api/v2/traces/"), "0")
		tr := byID[id]
		if tr == nil || gone[tr.ID] {
			http.Error(w, "trace not found", http.StatusNotFound)
			return
		}
		full := *tr
		status := "COMPLETE"
		if partial[tr.ID] {
			full.Spans = full.Spans[:len(full.Spans)/2+1]
			status = "PARTIAL"
		}
		key := "resourceSpans"
		if batches {
			key = "batches"
		}
		resp := map[string]any{"trace": map[string]any{key: ResourceSpans(&full, false)}, "status": status}
		if status == "PARTIAL" {
			resp["message"] = "trace exceeds max size (max bytes: 5000000), partial trace returned"
		}
		json.NewEncoder(w).Encode(resp)
	}))
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// Zipkin serves /api/v2/traces over traces.
func Zipkin(t testing.TB, traces []*Trace) *Server {
	s := &Server{}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v2/traces", s.wrap(t, func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		endTs, err1 := strconv.ParseInt(q.Get("endTs"), 10, 64)
		lookback, err2 := strconv.ParseInt(q.Get("lookback"), 10, 64)
		limit, err3 := strconv.Atoi(q.Get("limit"))
		if err1 != nil || err2 != nil || err3 != nil {
			http.Error(w, "bad query", http.StatusBadRequest)
			return
		}
		lo, hi := (endTs-lookback)*1000, endTs*1000 // µs
		out := [][]any{}
		for _, tr := range recent(traces) {
			if len(out) == limit {
				break
			}
			match := false
			for _, sp := range tr.Spans {
				if us := sp.Start / 1000; us >= lo && us <= hi {
					match = true
				}
			}
			if !match {
				continue
			}
			var zs []any
			for _, sp := range tr.Spans {
				z := map[string]any{"traceId": sp.TraceID, "id": sp.SpanID, "name": sp.Name, "kind": "SERVER",
					"timestamp": sp.Start / 1000, "duration": sp.Dur / 1000, "localEndpoint": map[string]any{"serviceName": sp.Service}}
				if sp.ParentID != "" {
					z["parentId"] = sp.ParentID
				}
				zs = append(zs, z)
			}
			out = append(out, zs)
		}
		json.NewEncoder(w).Encode(out)
	}))
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}
