package source_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/source"
	"github.com/tailscope/tailscope/span"
)

// replay serves the answers in testdata/recorded, written in each API's
// exact shape (ids in base64 as gogo/jsonpb writes them, Tempo ids that
// lost their leading zeros, enum names, a PARTIAL trace, Zipkin's shared
// spans), by request: route picks the file for a request, "" for a 404
// with Jaeger's "No traces found" body.
func replay(t *testing.T, route func(r *http.Request) string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := route(r)
		status := http.StatusOK
		if name == "" {
			name, status = "jaeger-404.json", http.StatusNotFound
		}
		data, err := os.ReadFile(filepath.Join("testdata/recorded", name))
		if err != nil {
			t.Error(err)
			http.Error(w, err.Error(), 500)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write(data)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestRecorded reads each API's recorded answers through the readers: the
// spans, as tailscope names them, and the notes.
func TestRecorded(t *testing.T) {
	win := source.Options{Since: t0, Until: t0.Add(time.Minute), Slice: 30 * time.Second}
	for _, c := range []struct {
		api   string
		route func(r *http.Request) string
		want  []string
		note  string
	}{
		{"jaeger", func(r *http.Request) string {
			if r.URL.Path == "/api/v3/services" {
				return "jaeger-services.json"
			}
			q := r.URL.Query()
			if q.Get("query.start_time_min") != "2026-03-04T10:00:00Z" || q.Get("query.raw_traces") != "true" {
				return "" // nothing in the second half minute
			}
			return "jaeger-traces-" + q.Get("query.service_name") + ".json"
		}, []string{
			"00000000000000000000000000000001/0000000000000001 frontend HTTP GET /dispatch unset",
			"00000000000000000000000000000001/0000000000000002 frontend redis GET error",
			"00000000000000000000000000000001/0000000000000003 redis GET error",
		}, ""},
		{"tempo", func(r *http.Request) string {
			switch r.URL.Path {
			case "/api/search":
				return "tempo-search.json" // the same answer for both slices
			case "/api/v2/traces/2f3e0cee77ae5dc9c17ade3689eb2e54":
				return "tempo-trace-2f3e.json"
			case "/api/v2/traces/7a1d2dd4deaf177e0acf55b3c49032":
				return "tempo-trace-7a1d.json"
			}
			return "missing"
		}, []string{
			"007a1d2dd4deaf177e0acf55b3c49032/c9da5e6e5f51bb83 mythical-server HTTP GET unset",
			"2f3e0cee77ae5dc9c17ade3689eb2e54/0102030405060708 shop-backend place-articles error",
			"2f3e0cee77ae5dc9c17ade3689eb2e54/563d623c76514f8e shop-backend article-to-cart unset",
		}, "1 traces came back PARTIAL (Trace exceeds maximum size of 5000000 bytes, a partial trace is returned)"},
		{"zipkin", func(r *http.Request) string { return "zipkin-traces.json" }, []string{
			"00000000000000005af7183fb1d4cf5f/6b221d5bc9e6496c frontend get /api unset",
			"00000000000000005af7183fb1d4cf5f/6b221d5bc9e6496c:server backend get /api error",
			"463ac35c9f6413ad48485a3953bb6124/a2fb4a1d1a96d312 frontend post /checkout unset",
		}, ""},
	} {
		t.Run(c.api, func(t *testing.T) {
			srv := replay(t, c.route)
			s, err := source.Open(context.Background(), c.api+"://"+host(srv), win)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var got []string
			_, err = ingest.ReadStream(c.api, s, ingest.Options{}, ingest.SinkFunc(func(sp *span.Span) {
				got = append(got, sp.TraceID+"/"+sp.SpanID+" "+sp.Service+" "+sp.Name+" "+sp.Status.String())
			}))
			if err != nil {
				t.Fatal(err)
			}
			sort.Strings(got)
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("spans:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
			notes := strings.Join(s.Notes(), "\n")
			if c.note == "" && notes != "" || !strings.Contains(notes, c.note) {
				t.Errorf("notes %q, want %q", notes, c.note)
			}
		})
	}
}
