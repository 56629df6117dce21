package source_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tailscope/tailscope/option"
	"github.com/tailscope/tailscope/source"
)

// The user's credentials never cross origins: a redirect to the same host
// on another port (or to another host name) is not followed, and the
// server there never sees them; the error says why.
func TestRedirectAcrossOriginsRefused(t *testing.T) {
	var leaked atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" || r.Header.Get("X-Api-Key") != "" {
			leaked.Add(1)
		}
		w.Write([]byte("[]"))
	}))
	defer other.Close()
	first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.RequestURI(), http.StatusFound)
	}))
	defer first.Close()
	_, _, _, err := fetchAll(t, "zipkin://"+host(first), source.Options{Since: t0, Until: t0.Add(time.Minute), Retries: -1,
		Header: http.Header{"Authorization": {"Bearer s3cr3t-token-abcdef"}, "X-Api-Key": {"k3y-s3cr3t"}}})
	if leaked.Load() != 0 {
		t.Fatalf("the other origin received the credentials %d times", leaked.Load())
	}
	if err == nil || !strings.Contains(err.Error(), "another origin") || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("err %v: want the redirect refused, saying why, without the credentials", err)
	}
}

// An error body is masked before it is cut: a token that straddles the
// cut shows none of its characters.
func TestErrorBodyMaskedBeforeCut(t *testing.T) {
	token := "Zq9Xw2Lk7Pm4Rt8Yv3Nb6"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The token starts 190 bytes in: a cut at 200 would leave 10 of it.
		http.Error(w, strings.Repeat("x", 190)+r.Header.Get("X-Api-Key"), http.StatusForbidden)
	}))
	defer srv.Close()
	_, _, _, err := fetchAll(t, "zipkin://"+host(srv), source.Options{Since: t0, Until: t0.Add(time.Minute), Header: http.Header{"X-Api-Key": {token}}})
	if err == nil {
		t.Fatal("no error")
	}
	for i := 0; i+4 <= len(token); i++ {
		if strings.Contains(err.Error(), token[i:i+4]) {
			t.Fatalf("err %v shows part of the token (%q)", err, token[i:i+4])
		}
	}
}

// A Tempo PARTIAL message is server text: what it echoes of the request's
// credentials is not printed in the note.
func TestTempoPartialMessageMasked(t *testing.T) {
	start := t0.Add(10 * time.Second).UnixNano()
	mux := http.NewServeMux()
	mux.HandleFunc("/api/search", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"traces":[{"traceID":"ab","startTimeUnixNano":"%d"}]}`, start)
	})
	mux.HandleFunc("/api/v2/traces/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"status":"PARTIAL","message":"headers were: Authorization=%s x-api-key=%s","trace":{"resourceSpans":[]}}`, r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	_, notes, _, err := fetchAll(t, "tempo://"+host(srv), source.Options{Since: t0, Until: t0.Add(time.Minute), Slice: time.Minute,
		Header: http.Header{"Authorization": {"Bearer s3cr3t-token-abcdef"}, "X-Api-Key": {"k3y-s3cr3t-12345"}}})
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(notes, "\n")
	if !strings.Contains(all, "PARTIAL") || strings.Contains(all, "s3cr3t") {
		t.Errorf("notes %q: want the PARTIAL note without the credentials", notes)
	}
}

// A source URL is printed with its credentials hidden, whatever is wrong
// with it.
func TestURLCredentialsNotEchoed(t *testing.T) {
	for _, raw := range []string{
		"clickhouse://ts:PASSWORD123@host:8123/db",
		"jaeger://host:16686/?api_key=SECRETKEY123",
		"zipkin+ftp://u:PASSWORD123@host",
	} {
		_, err := source.Parse(raw)
		if err == nil {
			t.Errorf("%s: no error", raw)
			continue
		}
		if strings.Contains(err.Error(), "PASSWORD123") || strings.Contains(err.Error(), "SECRETKEY123") {
			t.Errorf("%s: the error %q shows the credential", raw, err)
		}
	}
}

// One trace over the response cap says so and names the flag that raises
// the cap; with the cap raised it is read.
func TestOneTraceOverTheCap(t *testing.T) {
	start := t0.Add(10 * time.Second).UnixNano()
	pad := strings.Repeat("x", 4096)
	mux := http.NewServeMux()
	mux.HandleFunc("/api/search", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"traces":[{"traceID":"ab","startTimeUnixNano":"%d"}]}`, start)
	})
	mux.HandleFunc("/api/v2/traces/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"trace":{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"api"}}]},"scopeSpans":[{"spans":[{"traceId":"000000000000000000000000000000ab","spanId":"0000000000000001","name":%q,"startTimeUnixNano":"%d","endTimeUnixNano":"%d"}]}]}]}}`, pad, start, start+1e6)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	o := source.Options{Since: t0, Until: t0.Add(time.Minute), Slice: time.Minute, Limit: 1, MaxResponse: 1024, Retries: -1,
		Names: func(o option.Option) string { return "<" + o.String() + ">" }}
	_, _, _, err := fetchAll(t, "tempo://"+host(srv), o)
	if err == nil || !strings.Contains(err.Error(), "one trace is over 1024 bytes") || !strings.Contains(err.Error(), "raise <FetchMaxResponse>") {
		t.Fatalf("err %v: want the one trace named, and the setting (by the caller's Names) that raises the cap", err)
	}
	o.MaxResponse = 1 << 20
	got, _, _, err := fetchAll(t, "tempo://"+host(srv), o)
	if err != nil || len(got) != 1 {
		t.Errorf("with the cap raised: %v, %v", got, err)
	}
}

// Endless answers on every slot: what the fetch reads is bounded by one
// budget for all the slots (MaxResponse, and a share for each other
// slot), not MaxResponse in each (8 slots of 32 MB read 256 MB).
func TestEndlessBodiesShareOneBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("streams a few hundred MB over loopback")
	}
	var written atomic.Int64
	chunk := []byte(strings.Repeat("[", 64<<10))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for r.Context().Err() == nil {
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	const max = 32 << 20
	o := source.Options{Since: t0, Until: t0.Add(8 * time.Minute), Slice: time.Minute, Concurrency: 8, MaxResponse: max, Retries: -1}
	_, _, _, err := fetchAll(t, "zipkin://"+host(srv), o)
	if err == nil || !strings.Contains(err.Error(), "too large") {
		t.Fatalf("err %v: want the answer refused as too large", err)
	}
	srv.CloseClientConnections()
	// Read: at most max + 7 shares of max/8; socket buffers on both sides
	// add a few MB a connection.
	if w, limit := written.Load(), int64(max+7*(max/8)+8*8<<20); w > limit {
		t.Errorf("the server wrote %d MB before the fetch stopped, above %d MB", w>>20, limit>>20)
	}
}
