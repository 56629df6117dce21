package clickhouse_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tailscope/tailscope/option"
	"github.com/tailscope/tailscope/source/clickhouse"
)

// exporterColumns is what system.columns says of the exporter's table
// (with the database's row), as the schema check asks for it.
const exporterColumns = `{"w":"d","name":"otel","type":""}
{"w":"c","name":"Timestamp","type":"DateTime64(9)"}
{"w":"c","name":"TraceId","type":"String"}
{"w":"c","name":"SpanId","type":"String"}
{"w":"c","name":"ParentSpanId","type":"String"}
{"w":"c","name":"SpanName","type":"LowCardinality(String)"}
{"w":"c","name":"SpanKind","type":"LowCardinality(String)"}
{"w":"c","name":"ServiceName","type":"LowCardinality(String)"}
{"w":"c","name":"Duration","type":"UInt64"}
{"w":"c","name":"StatusCode","type":"LowCardinality(String)"}
`

var fakeNames = []string{"s", "d", "t", "i", "n", "sv", "k", "c"}

var fakeRow = map[string]any{"s": int64(1675080360123456789), "d": int64(5000), "t": "5b8efff798038103d269b633813fc60c", "i": "eee19b7ec3c1b174", "n": "GET", "sv": "api", "k": "Server", "c": "Ok"}

// answer is rows as the query's answer.
func answer(rows ...map[string]any) string {
	return string(clickhouse.EncodeRowBinary(fakeNames, rows...))
}

// fake serves the schema check, then answers the query with body.
func fake(t *testing.T, body func(w http.ResponseWriter)) string {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("cancel_http_readonly_queries_on_client_close") != "1" {
			t.Errorf("a request without cancel_http_readonly_queries_on_client_close=1: %s", r.URL)
		}
		q, _ := io.ReadAll(r.Body)
		if strings.Contains(string(q), "system.databases") {
			io.WriteString(w, exporterColumns)
			return
		}
		body(w)
	}))
	t.Cleanup(s.Close)
	return strings.TrimPrefix(s.URL, "http://")
}

func read(url string, o clickhouse.Options) (string, error) {
	o.Since, o.Until = time.Unix(0, 0), time.Unix(2e9, 0)
	o.Backoff = time.Millisecond
	s, err := clickhouse.Open(context.Background(), url, o)
	if err != nil {
		return "", err
	}
	defer s.Close()
	b, err := io.ReadAll(s)
	return string(b), err
}

// TestStreamFailures: an exception after the rows began, a pause longer
// than the timeout, a 5xx retried, and a row over the limit each end the
// read with an error that says so.
func TestStreamFailures(t *testing.T) {
	exc := fake(t, func(w http.ResponseWriter) {
		io.WriteString(w, answer(fakeRow, fakeRow, fakeRow))
		io.WriteString(w, "Code: 241. DB::Exception: Memory limit (total) exceeded: would use 9.31 GiB. (MEMORY_LIMIT_EXCEEDED)\n")
	})
	if _, err := read("clickhouse://"+exc+"/otel", clickhouse.Options{}); err == nil || !strings.Contains(err.Error(), "the query failed while its rows were read: Code: 241.") {
		t.Errorf("exception mid-stream: %v", err)
	}
	pause := fake(t, func(w http.ResponseWriter) {
		io.WriteString(w, answer(fakeRow))
		w.(http.Flusher).Flush()
		time.Sleep(time.Second)
	})
	if _, err := read("clickhouse://"+pause+"/otel", clickhouse.Options{Timeout: 200 * time.Millisecond, Names: func(o option.Option) string { return "<" + o.String() + ">" }}); err == nil || !strings.Contains(err.Error(), "paused for over 200ms (<FetchTimeout>)") {
		t.Errorf("pause: %v", err)
	}
	tries := 0
	flaky := fake(t, func(w http.ResponseWriter) {
		if tries++; tries < 3 {
			w.Header().Set("X-ClickHouse-Exception-Code", "202")
			w.WriteHeader(503)
			io.WriteString(w, "Code: 202. DB::Exception: Too many simultaneous queries. (TOO_MANY_SIMULTANEOUS_QUERIES)")
			return
		}
		io.WriteString(w, answer(fakeRow))
	})
	if out, err := read("clickhouse://"+flaky+"/otel", clickhouse.Options{}); err != nil || strings.Count(out, "\n") != 1 {
		t.Errorf("retried 503: %q, %v", out, err)
	}
	wrong := fake(t, func(w http.ResponseWriter) {
		w.Header().Set("X-ClickHouse-Exception-Code", "47")
		w.WriteHeader(500)
		io.WriteString(w, "Code: 47. DB::Exception: Unknown expression identifier. (UNKNOWN_IDENTIFIER)")
	})
	tries = 0
	if _, err := read("clickhouse://"+wrong+"/otel", clickhouse.Options{}); err == nil || strings.Contains(err.Error(), "tried") {
		t.Errorf("a wrong query is not retried: %v", err)
	}
	long := fake(t, func(w http.ResponseWriter) {
		io.WriteString(w, answer(map[string]any{"n": strings.Repeat("x", 2000)}))
	})
	if _, err := read("clickhouse://"+long+"/otel", clickhouse.Options{MaxRow: 1000}); err == nil || !strings.Contains(err.Error(), "longer than the limit") {
		t.Errorf("long row: %v", err)
	}
}

// TestReadonlyUser: a server that refuses the requests' settings (a
// readonly user may set none) is asked again without them, and answers.
func TestReadonlyUser(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.RawQuery != "" {
			w.Header().Set("X-ClickHouse-Exception-Code", "164")
			w.WriteHeader(500)
			io.WriteString(w, "Code: 164. DB::Exception: Cannot modify 'enable_http_compression' setting in readonly mode. (READONLY)")
			return
		}
		q, _ := io.ReadAll(r.Body)
		if strings.Contains(string(q), "system.databases") {
			io.WriteString(w, exporterColumns)
			return
		}
		io.WriteString(w, answer(fakeRow))
	}))
	defer s.Close()
	out, err := read("clickhouse://"+strings.TrimPrefix(s.URL, "http://")+"/otel?compress=1", clickhouse.Options{})
	if err != nil || strings.Count(out, "\n") != 1 {
		t.Errorf("got %q, %v", out, err)
	}
}

// TestTLSAndRedirect: clickhouses:// speaks HTTPS; a redirect to another
// origin is refused (the credentials would go there), as for every
// source.
func TestTLSAndRedirect(t *testing.T) {
	s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-ClickHouse-Key") != "pw" {
			w.WriteHeader(401)
			return
		}
		q, _ := io.ReadAll(r.Body)
		if strings.Contains(string(q), "system.databases") {
			io.WriteString(w, exporterColumns)
			return
		}
		io.WriteString(w, answer(fakeRow))
	}))
	defer s.Close()
	host := strings.TrimPrefix(s.URL, "https://")
	out, err := read("clickhouses://"+host+"/otel", clickhouse.Options{Client: s.Client(), Password: "pw"})
	if err != nil || strings.Count(out, "\n") != 1 {
		t.Errorf("clickhouses://: %q, %v", out, err)
	}
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { t.Error("the redirect was followed") }))
	defer other.Close()
	redir := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/", http.StatusTemporaryRedirect)
	}))
	defer redir.Close()
	_, err = read("clickhouse://"+strings.TrimPrefix(redir.URL, "http://")+"/otel", clickhouse.Options{Password: "pw", Retries: -1})
	if err == nil || !strings.Contains(err.Error(), "redirected to another origin") || strings.Contains(err.Error(), "pw") {
		t.Errorf("redirect: %v", err)
	}
}
