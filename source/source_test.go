package source_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/source"
	"github.com/tailscope/tailscope/source/sourcetest"
	"github.com/tailscope/tailscope/span"
)

var t0 = time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)

// fetchAll opens raw with o and reads the stream through the same readers
// files go through, counting each span (trace id/span id) it yields.
func fetchAll(t *testing.T, raw string, o source.Options) (got map[string]int, notes []string, prog source.Progress, err error) {
	t.Helper()
	var mu sync.Mutex
	o.Progress = func(p source.Progress) {
		mu.Lock()
		prog = p
		mu.Unlock()
	}
	if o.Backoff == 0 {
		o.Backoff = time.Millisecond
	}
	s, err := source.Open(context.Background(), raw, o)
	if err != nil {
		return nil, nil, prog, err
	}
	defer s.Close()
	got = map[string]int{}
	_, err = ingest.ReadStream(raw, s, ingest.Options{}, ingest.SinkFunc(func(sp *span.Span) { got[sp.TraceID+"/"+sp.SpanID]++ }))
	mu.Lock()
	defer mu.Unlock()
	return got, s.Notes(), prog, err
}

// host is a test server's host:port.
func host(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }

// exactlyOnce fails unless got holds every key of want once and nothing
// else.
func exactlyOnce(t *testing.T, got, want map[string]int) {
	t.Helper()
	for k := range want {
		if got[k] != 1 {
			t.Errorf("span %s read %d times, want once", k, got[k])
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("span %s read, not in the store's window", k)
		}
	}
	if t.Failed() {
		t.Fatalf("read %d spans, want %d", len(got), len(want))
	}
}

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in, api, base, query, err string
	}{
		{in: "jaeger://localhost", api: "jaeger", base: "http://localhost:16686"},
		{in: "jaeger://10.0.0.1:8080/jaeger/", api: "jaeger", base: "http://10.0.0.1:8080/jaeger"},
		{in: "jaeger+https://j.example.com", api: "jaeger", base: "https://j.example.com:16686"},
		{in: "tempo://t:3100?q=%7B.http.status_code%3D500%7D", api: "tempo", base: "http://t:3100", query: "{.http.status_code=500}"},
		{in: "tempo://t", api: "tempo", base: "http://t:3200", query: "{}"},
		{in: "zipkin+http://z", api: "zipkin", base: "http://z:9411"},
		{in: "jager://x", err: `unknown scheme "jager"`},
		{in: "jaeger+ftp://x", err: `unknown transport "ftp"`},
		{in: "jaeger://user:secret@x", err: "credentials in the URL"},
		{in: "zipkin://x?serviceName=a", err: `unknown parameter "serviceName"`},
		{in: "jaeger://", err: "no host"},
	} {
		tg, err := source.Parse(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Parse(%q) = %v, want error containing %q", c.in, err, c.err)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("Parse(%q): error prints the password: %v", c.in, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", c.in, err)
			continue
		}
		if tg.API != c.api || tg.Base.String() != c.base || tg.Query != c.query {
			t.Errorf("Parse(%q) = %s %s %q, want %s %s %q", c.in, tg.API, tg.Base, tg.Query, c.api, c.base, c.query)
		}
	}
	for p, want := range map[string]bool{"jaeger://x": true, "Tempo+https://x": true, "traces.json": false, "./a://b": false, "C:\\x": false} {
		if source.IsURL(p) != want {
			t.Errorf("IsURL(%q) = %v", p, !want)
		}
	}
}

// TestJaegerWindow: a window cut in slices, asked for per service, gives
// every span once, though each trace crosses services and some cross
// slices; ids in hex and in base64 (generic protojson).
func TestJaegerWindow(t *testing.T) {
	traces := sourcetest.Gen(1, 300, t0, 10*time.Minute)
	for _, b64 := range []bool{false, true} {
		t.Run(fmt.Sprintf("base64=%v", b64), func(t *testing.T) {
			srv := sourcetest.Jaeger(t, traces, b64)
			got, notes, prog, err := fetchAll(t, "jaeger://"+host(srv.Server), source.Options{Since: t0, Until: t0.Add(10 * time.Minute), Slice: time.Minute, Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			exactlyOnce(t, got, sourcetest.Keys(traces))
			if len(notes) != 0 {
				t.Errorf("notes %q, want none", notes)
			}
			// 3 services × 10 slices, and the services list.
			if prog.Slices != 30 || prog.Done != 30 || prog.Split != 0 || prog.Traces != 300 || prog.Requests != 31 || !prog.Final {
				t.Errorf("progress %+v, want 30 slices, 300 traces, 31 requests, final", prog)
			}
			if int(srv.Requests.Load()) != prog.Requests {
				t.Errorf("server saw %d requests, progress says %d", srv.Requests.Load(), prog.Requests)
			}
		})
	}
}

// TestJaegerSplit: slices that come back full are cut and fetched again
// until they are not; nothing is lost nor read twice.
func TestJaegerSplit(t *testing.T) {
	traces := sourcetest.Gen(2, 400, t0, 10*time.Minute)
	srv := sourcetest.Jaeger(t, traces, false)
	got, notes, prog, err := fetchAll(t, "jaeger://"+host(srv.Server), source.Options{Since: t0, Until: t0.Add(10 * time.Minute), Slice: 5 * time.Minute, Limit: 16, Concurrency: 3})
	if err != nil {
		t.Fatal(err)
	}
	exactlyOnce(t, got, sourcetest.Keys(traces))
	if len(notes) != 0 {
		t.Errorf("notes %q, want none", notes)
	}
	// 400 traces at 16 a search need at least 25 slices per service.
	if prog.Split < 3*24 || prog.Slices != 3*2+prog.Split || prog.Done != prog.Slices {
		t.Errorf("progress %+v: want ≥72 splits, slices = 6 + splits, all done", prog)
	}
	if m := srv.MaxIn.Load(); m > 3 {
		t.Errorf("%d requests in flight at once, want ≤ 3", m)
	}
}

// TestJaegerSampled: a slice still full at the floor is kept as the sample
// the store returned, and a note says which slice.
func TestJaegerSampled(t *testing.T) {
	traces := sourcetest.Gen(3, 60, t0, 500*time.Millisecond) // 60 traces in half a second
	srv := sourcetest.Jaeger(t, traces, false)
	got, notes, prog, err := fetchAll(t, "jaeger://"+host(srv.Server), source.Options{Since: t0, Until: t0.Add(4 * time.Second), Slice: 4 * time.Second, MinSlice: time.Second, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if prog.Traces == 0 || prog.Traces > 10 || len(got) != 3*prog.Traces {
		t.Errorf("kept %d traces (%d spans), want 1–10 whole traces of the sample", prog.Traces, len(got))
	}
	want := "the store returned its first 10 traces of service frontend for 2026-03-04 10:00:00–10:00:01 UTC; numbers for that slice rest on a sample"
	found := false
	for _, n := range notes {
		found = found || strings.HasSuffix(n, want)
	}
	if !found {
		t.Errorf("notes %q, want one ending %q", notes, want)
	}
}

// TestJaegerEmpty: Jaeger's "No traces found" 404 is an empty slice; any
// other 404 is an error that names the URL and the status.
func TestJaegerEmpty(t *testing.T) {
	traces := sourcetest.Gen(4, 20, t0, time.Minute)
	srv := sourcetest.Jaeger(t, traces, false)
	got, _, prog, err := fetchAll(t, "jaeger://"+host(srv.Server), source.Options{Since: t0.Add(time.Hour), Until: t0.Add(2 * time.Hour)})
	if err != nil || len(got) != 0 || prog.Done != prog.Slices || prog.Slices == 0 {
		t.Fatalf("empty window: %d spans, progress %+v, err %v; want nothing, no error", len(got), prog, err)
	}
	_, _, _, err = fetchAll(t, "jaeger://"+host(srv.Server)+"/no/such/prefix", source.Options{Since: t0, Until: t0.Add(time.Minute)})
	want := "GET " + srv.URL + "/no/such/prefix/api/v3/services: HTTP 404 Not Found"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("wrong prefix: err %v, want one containing %q", err, want)
	}
}

// TestRetries: 5xx and 429 are tried again, with backoff (Retry-After
// honoured); a status that stays bad ends the fetch with the URL, the
// status and the number of tries.
func TestRetries(t *testing.T) {
	traces := sourcetest.Gen(5, 50, t0, time.Minute)
	for _, c := range []struct {
		name   string
		faults *sourcetest.Faults
		err    string
	}{
		{"500 twice", &sourcetest.Faults{Prefix: "/api/v3/traces", N: 2, Status: 500}, ""},
		{"429 Retry-After", &sourcetest.Faults{Prefix: "/api/v3/services", N: 1, Status: 429, RetryAfter: "1"}, ""},
		{"503 for good", &sourcetest.Faults{Prefix: "/api/v3/services", N: 100, Status: 503}, "/api/v3/services: HTTP 503 Service Unavailable: {\"error\":\"busy\"} (tried 3 times)"},
		{"400 not retried", &sourcetest.Faults{Prefix: "/api/v3/traces", N: 100, Status: 400}, "HTTP 400 Bad Request"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := sourcetest.Jaeger(t, traces, false)
			srv.Faults = c.faults
			start := time.Now()
			got, _, prog, err := fetchAll(t, "jaeger://"+host(srv.Server), source.Options{Since: t0, Until: t0.Add(time.Minute), Retries: 2})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), srv.URL) {
					t.Fatalf("err %v, want one naming %s and %q", err, srv.URL, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			exactlyOnce(t, got, sourcetest.Keys(traces))
			if want := map[int]int{500: 2, 429: 1}[c.faults.Status]; prog.Retries != want {
				t.Errorf("%d retries, want %d", prog.Retries, want)
			}
			if c.faults.RetryAfter != "" && time.Since(start) < time.Second {
				t.Errorf("took %v: Retry-After: 1 not honoured", time.Since(start))
			}
		})
	}
}

// TestDown: a server that is not there, or does not answer in time, ends
// the fetch with its address.
func TestDown(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := host(srv)
	srv.Close()
	_, _, _, err := fetchAll(t, "zipkin://"+addr, source.Options{Since: t0, Until: t0.Add(time.Minute), Retries: 1})
	if err == nil || !strings.Contains(err.Error(), "GET http://"+addr+"/api/v2/traces") || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("down server: err %v, want one naming %s, refused", err, addr)
	}

	slow := sourcetest.Zipkin(t, sourcetest.Gen(6, 5, t0, time.Minute))
	slow.Delay = 300 * time.Millisecond
	_, _, _, err = fetchAll(t, "zipkin://"+host(slow.Server), source.Options{Since: t0, Until: t0.Add(time.Minute), Timeout: 50 * time.Millisecond, Retries: -1})
	if err == nil || !strings.Contains(err.Error(), "no answer within 50ms") || !strings.Contains(err.Error(), slow.URL) {
		t.Fatalf("slow server: err %v, want a timeout naming %s", err, slow.URL)
	}
}

// TestAuth: the header is sent; a refusal does not print it.
func TestAuth(t *testing.T) {
	traces := sourcetest.Gen(7, 30, t0, time.Minute)
	srv := sourcetest.Zipkin(t, traces)
	srv.Auth = "Bearer s3cr3t-token"
	got, _, _, err := fetchAll(t, "zipkin://"+host(srv.Server), source.Options{Since: t0, Until: t0.Add(time.Minute), Header: http.Header{"Authorization": {"Bearer s3cr3t-token"}}})
	if err != nil {
		t.Fatal(err)
	}
	exactlyOnce(t, got, sourcetest.Keys(traces))
	_, _, _, err = fetchAll(t, "zipkin://"+host(srv.Server), source.Options{Since: t0, Until: t0.Add(time.Minute), Header: http.Header{"Authorization": {"Bearer wrong-s3cr3t"}}})
	if err == nil || !strings.Contains(err.Error(), "HTTP 401") || strings.Contains(err.Error(), "s3cr3t") {
		t.Fatalf("err %v, want a 401 that does not print the token", err)
	}
	// A server that echoes the credential it refused.
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad credentials: "+r.Header.Get("Authorization")+" / "+r.Header.Get("X-Api-Key"), http.StatusForbidden)
	}))
	defer echo.Close()
	_, _, _, err = fetchAll(t, "zipkin://"+host(echo), source.Options{Since: t0, Until: t0.Add(time.Minute), Header: http.Header{"Authorization": {"Bearer s3cr3t-token"}, "X-Api-Key": {"k3y-s3cr3t"}}})
	// The values sent are blanked, then whatever reads as a credential
	// (here "credentials: …") is redacted too.
	if err == nil || !strings.Contains(err.Error(), "HTTP 403 Forbidden: bad credentials: ") || strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), "k3y") {
		t.Fatalf("echoing server: err %v, want the credentials blanked", err)
	}
}

// TestTempo: search, then each owned trace by id: ids that lost their
// leading zeros, traces crossing slices, full searches cut, a PARTIAL
// trace (its missing spans are missing, and a note says so), a trace gone
// between search and fetch; both the v2 {"trace":…} and the older
// {"batches":…} answers.
func TestTempo(t *testing.T) {
	traces := sourcetest.Gen(8, 120, t0, 5*time.Minute)
	partial := map[string]bool{traces[3].ID: true, traces[40].ID: true}
	gone := map[string]bool{traces[7].ID: true}
	want := sourcetest.Keys(traces)
	for _, tr := range traces {
		for i, sp := range tr.Spans {
			if gone[tr.ID] || partial[tr.ID] && i >= len(tr.Spans)/2+1 {
				delete(want, sp.TraceID+"/"+sp.SpanID)
			}
		}
	}
	for _, batches := range []bool{false, true} {
		t.Run(fmt.Sprintf("batches=%v", batches), func(t *testing.T) {
			srv := sourcetest.Tempo(t, traces, partial, gone, batches)
			got, notes, prog, err := fetchAll(t, "tempo://"+host(srv.Server)+"?q=%7B%7D", source.Options{Since: t0, Until: t0.Add(5 * time.Minute), Slice: time.Minute, Limit: 20})
			if err != nil {
				t.Fatal(err)
			}
			exactlyOnce(t, got, want)
			if prog.Split == 0 || prog.Traces != 119 {
				t.Errorf("progress %+v, want splits and 119 traces", prog)
			}
			wantNotes := []string{
				"2 traces came back PARTIAL (trace exceeds max size (max bytes: 5000000), partial trace returned): the spans Tempo left out are not in the numbers",
				"1 traces the search listed were not found when fetched (retention or a compaction in between)",
			}
			if len(notes) != len(wantNotes) {
				t.Fatalf("notes %q, want %q", notes, wantNotes)
			}
			for i := range notes {
				if !strings.HasSuffix(notes[i], wantNotes[i]) {
					t.Errorf("note %q, want it to end %q", notes[i], wantNotes[i])
				}
			}
		})
	}
}

// TestZipkin: every trace once across slices cut in ms, each a Zipkin
// array read by the Zipkin reader.
func TestZipkin(t *testing.T) {
	traces := sourcetest.Gen(9, 200, t0, 3*time.Minute)
	srv := sourcetest.Zipkin(t, traces)
	got, notes, prog, err := fetchAll(t, "zipkin://"+host(srv.Server), source.Options{Since: t0, Until: t0.Add(3 * time.Minute), Slice: time.Minute, Limit: 25})
	if err != nil {
		t.Fatal(err)
	}
	exactlyOnce(t, got, sourcetest.Keys(traces))
	if len(notes) != 0 || prog.Split == 0 {
		t.Errorf("notes %q, progress %+v: want no notes, some splits", notes, prog)
	}
}

// TestCloseStops: closing a stream mid-way stops the fetch.
func TestCloseStops(t *testing.T) {
	srv := sourcetest.Jaeger(t, sourcetest.Gen(10, 100, t0, time.Hour), false)
	s, err := source.Open(context.Background(), "jaeger://"+host(srv.Server), source.Options{Since: t0, Until: t0.Add(time.Hour), Slice: time.Second, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 10)
	if _, err := io.ReadFull(s, buf); err != nil {
		t.Fatal(err)
	}
	s.Close() // returns once the fetch's workers are done
	n := srv.Requests.Load()
	// Closing the server waits for every request it has begun: after it
	// the count is final, with no sleep standing in for "long enough".
	// Requests the workers sent just before the close (at most one per
	// worker) may still have reached it.
	srv.Server.Close()
	if m := srv.Requests.Load(); m > n+2 || n > 100 {
		t.Errorf("%d requests at close, %d once the server finished: the fetch went on (3600 slices × 3 services)", n, m)
	}
}
