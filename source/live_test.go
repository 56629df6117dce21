package source_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tailscope/tailscope/source"
	"github.com/tailscope/tailscope/source/sourcetest"
)

// The live readers read what the file readers read: a Zipkin search that
// lists a trace twice gives it once; timestamps written as strings or
// fractions place their traces; a trace no span of which has a timestamp
// is counted in a note, not lost in silence.
func TestZipkinLiveReadsWhatFilesRead(t *testing.T) {
	base := t0.Add(30 * time.Second).UnixMicro()
	span := func(trace, id string, ts string) string {
		s := fmt.Sprintf(`{"traceId":%q,"id":%q,"name":"get","duration":1500,"localEndpoint":{"serviceName":"api"}`, trace, id)
		if ts != "" {
			s += `,"timestamp":` + ts
		}
		return s + "}"
	}
	answer := "[" + strings.Join([]string{
		"[" + span("a1", "1", fmt.Sprint(base)) + "]",
		"[" + span("a1", "1", fmt.Sprint(base)) + "]",                      // listed twice
		"[" + span("b2", "2", fmt.Sprintf("%q", fmt.Sprint(base+1))) + "]", // a string
		"[" + span("c3", "3", fmt.Sprintf("%d.5", base+2)) + "]",           // a fraction
		"[" + span("d4", "4", "") + "]",                                    // no timestamp
	}, ",") + "]"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(answer))
	}))
	defer srv.Close()
	got, notes, _, err := fetchAll(t, "zipkin://"+host(srv), source.Options{Since: t0, Until: t0.Add(time.Minute), Slice: time.Minute, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	pad := func(trace, id string) string {
		return strings.Repeat("0", 32-len(trace)) + trace + "/" + strings.Repeat("0", 16-len(id)) + id
	}
	for _, k := range []string{pad("a1", "1"), pad("b2", "2"), pad("c3", "3")} {
		if got[k] != 1 {
			t.Errorf("span %s read %d times, want once (read %v)", k, got[k], got)
		}
	}
	if len(got) != 3 {
		t.Errorf("read %v, want the three placed traces", got)
	}
	if !strings.Contains(strings.Join(notes, "\n"), "1 traces have no span with a timestamp") {
		t.Errorf("notes %q: the trace without a timestamp is not counted", notes)
	}
}

// A Tempo search that lists a trace twice fetches it once.
func TestTempoListedTwiceFetchedOnce(t *testing.T) {
	var fetched atomic.Int64
	start := t0.Add(10 * time.Second).UnixNano()
	mux := http.NewServeMux()
	mux.HandleFunc("/api/search", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"traces":[{"traceID":"00ab","startTimeUnixNano":"%d"},{"traceID":"AB","startTimeUnixNano":"%d"}]}`, start, start)
	})
	mux.HandleFunc("/api/v2/traces/", func(w http.ResponseWriter, r *http.Request) {
		fetched.Add(1)
		json.NewEncoder(w).Encode(map[string]any{"trace": map[string]any{"resourceSpans": []any{map[string]any{
			"resource": map[string]any{"attributes": []any{map[string]any{"key": "service.name", "value": map[string]any{"stringValue": "api"}}}},
			"scopeSpans": []any{map[string]any{"spans": []any{map[string]any{
				"traceId": "000000000000000000000000000000ab", "spanId": "0000000000000001", "name": "get",
				"startTimeUnixNano": fmt.Sprint(start), "endTimeUnixNano": fmt.Sprint(start + 1e6)}}}}}}}})
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	got, _, prog, err := fetchAll(t, "tempo://"+host(srv), source.Options{Since: t0, Until: t0.Add(time.Minute), Slice: time.Minute, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if n := fetched.Load(); n != 1 || prog.Traces != 1 || len(got) != 1 {
		t.Errorf("fetched %d times, %d traces counted, spans %v: want one of each", n, prog.Traces, got)
	}
}

// Jaeger: a trace whose root resource lacks service.name, and one whose
// span writes its start as a float, are read as the file reader reads
// them (they belonged to no service's slice and vanished).
func TestJaegerLiveOwnersWithoutService(t *testing.T) {
	start := t0.Add(20 * time.Second).UnixNano()
	res := func(svc string) map[string]any {
		if svc == "" {
			return map[string]any{"attributes": []any{}}
		}
		return map[string]any{"attributes": []any{map[string]any{"key": "service.name", "value": map[string]any{"stringValue": svc}}}}
	}
	sp := func(trace, id, parent string, st any) map[string]any {
		m := map[string]any{"traceId": trace, "spanId": id, "name": "op", "startTimeUnixNano": st, "endTimeUnixNano": fmt.Sprint(start + 5e6)}
		if parent != "" {
			m["parentSpanId"] = parent
		}
		return m
	}
	doc := map[string]any{"result": map[string]any{"resourceSpans": []any{
		// x: the root's resource names no service; its child is api's.
		map[string]any{"resource": res(""), "scopeSpans": []any{map[string]any{"spans": []any{sp("0000000000000000000000000000000a", "0000000000000001", "", fmt.Sprint(start))}}}},
		map[string]any{"resource": res("api"), "scopeSpans": []any{map[string]any{"spans": []any{sp("0000000000000000000000000000000a", "0000000000000002", "0000000000000001", fmt.Sprint(start+1e6))}}}},
		// y: its start a float.
		map[string]any{"resource": res("api"), "scopeSpans": []any{map[string]any{"spans": []any{sp("0000000000000000000000000000000b", "0000000000000003", "", float64(start))}}}},
	}}}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v3/services", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"services":["api"]}`))
	})
	mux.HandleFunc("/api/v3/traces", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(doc)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	got, _, _, err := fetchAll(t, "jaeger://"+host(srv), source.Options{Since: t0, Until: t0.Add(time.Minute), Slice: time.Minute, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	traces := map[string]bool{}
	for k := range got {
		traces[strings.SplitN(k, "/", 2)[0]] = true
	}
	if len(traces) != 2 {
		t.Errorf("read the traces %v, want both", traces)
	}
}

// A window of years over a store of one busy day: the fetch starts from
// the whole window and cuts only where an answer is full, so it finishes
// in a few hundred requests with every trace, none sampled (fixed
// 5-minute slices made it ~725,000 slices, and a 1 s floor kept full
// slices as samples: 1,046 of 2,000 traces).
func TestLongWindowSplitsWhereFull(t *testing.T) {
	traces := sourcetest.Gen(5, 2000, t0, 24*time.Hour)
	srv := sourcetest.Jaeger(t, traces, false)
	since := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	got, notes, prog, err := fetchAll(t, "jaeger://"+host(srv.Server), source.Options{Since: since, Until: t0.Add(25 * time.Hour), Limit: 500, Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	exactlyOnce(t, got, sourcetest.Keys(traces))
	if len(notes) != 0 {
		t.Errorf("notes %q: want none (nothing sampled)", notes)
	}
	if n := srv.Requests.Load(); n > 5000 {
		t.Errorf("%d requests for 2,000 traces (%+v)", n, prog)
	}
	t.Logf("%d requests, %d slices, %d cut in two", srv.Requests.Load(), prog.Slices, prog.Split)
}

// A first cut that cannot finish is refused before any request.
func TestSlicingThatCannotFinishRefused(t *testing.T) {
	srv := sourcetest.Jaeger(t, nil, false)
	_, err := source.Open(context.Background(), "jaeger://"+host(srv.Server), source.Options{Since: t0, Until: t0.Add(time.Hour), Slice: time.Microsecond, MinSlice: time.Microsecond})
	if err == nil || !strings.Contains(err.Error(), "cannot finish") {
		t.Fatalf("err %v: want the slicing refused", err)
	}
	if n := srv.Requests.Load(); n != 0 {
		t.Errorf("%d requests made", n)
	}
}
