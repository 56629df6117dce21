package source

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// bodyTransport answers every request without a network: the services
// list for Jaeger's /api/v3/services, search for the searches, trace for
// Tempo's traces by id.
type bodyTransport struct{ search, trace []byte }

func (b bodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	body := b.search
	switch {
	case strings.HasSuffix(r.URL.Path, "/services"):
		body = []byte(`{"services":["a"]}`)
	case strings.Contains(r.URL.Path, "/api/v2/traces/"):
		body = b.trace
	}
	return &http.Response{StatusCode: 200, Body: io.NopCloser(bytes.NewReader(body)), Header: http.Header{}, Request: r}, nil
}

// FuzzResponses feeds any bytes as each API's answer. The property: no
// panic, the fetch ends, and what it writes is JSON lines.
func FuzzResponses(f *testing.F) {
	f.Add([]byte(`{"result":{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"a"}}]},"scopeSpans":[{"spans":[{"traceId":"AQIDBAUGBwgJCgsMDQ4PEA==","spanId":"AQIDBAUGBwg=","startTimeUnixNano":"1000000000000"}]}]}]}}`), []byte(`{}`))
	f.Add([]byte(`{"traces":[{"traceID":"1","startTimeUnixNano":"1000000000000"}]}`), []byte(`{"trace":{"resourceSpans":[]},"status":"PARTIAL","message":"x"}`))
	f.Add([]byte(`[[{"traceId":"1","id":"2","timestamp":1000000000}],[]]`), []byte(`null`))
	f.Add([]byte(`{"result":{"resourceSpans":[{"scopeSpans":[{"spans":[{"startTimeUnixNano":1e30}]}]}]}}`), []byte(`[`))
	f.Add([]byte(`{"traces":[{"traceID":"../x","startTimeUnixNano":1000000000000}]}`), []byte("{\"trace\":1}\n{"))
	f.Fuzz(func(t *testing.T, search, trace []byte) {
		for _, api := range []string{"jaeger", "tempo", "zipkin"} {
			o := Options{
				Since: time.Unix(1000, 0), Until: time.Unix(1002, 0), Slice: time.Second, Limit: 2, Concurrency: 2, Retries: -1,
				Client: &http.Client{Transport: bodyTransport{search: search, trace: trace}},
			}
			s, err := Open(context.Background(), api+"://x", o)
			if err != nil {
				t.Fatal(err)
			}
			out, err := io.ReadAll(s)
			s.Close()
			if err != nil {
				continue // an answer it could not use, said so
			}
			for _, line := range bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n")) {
				if len(out) > 0 && !json.Valid(line) {
					t.Fatalf("%s: wrote a line that is not JSON: %q", api, line)
				}
			}
		}
	})
}
