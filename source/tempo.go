package source

// Grafana Tempo's query API:
//
//	GET /api/search?q=TRACEQL&start=S&end=S&limit=N&spss=1
//	  → {"traces":[{"traceID":"…","rootServiceName":"…",
//	     "startTimeUnixNano":"…","durationMs":…,"spanSet":{…}},…],
//	     "metrics":{…}}: the traces that overlap [start, end] (Unix
//	     seconds); their ids may have lost leading zeros.
//	GET /api/v2/traces/ID
//	  → {"trace":{"resourceSpans":[…]},"status":"COMPLETE"|"PARTIAL",
//	     "message":"…"}: the whole trace (older Tempos answer
//	     {"batches":[…]}); 404 when it is gone.
//
// A search lists traces without their spans, so each trace a slice owns
// (its start, the trace's earliest span, in the slice) is then fetched by
// id. A search that comes back full is cut before any trace is fetched.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/tailscope/tailscope/secret"
	"net/http"
	"net/url"
	"strconv"
	"sync"
)

// tempo fetches one slice: the traces it owns, one JSON document a line.
func (f *fetcher) tempo(ctx context.Context, p *piece, canSplit bool) (out []byte, returned int, full bool, err error) {
	q := url.Values{}
	q.Set("q", f.t.Query)
	q.Set("start", strconv.FormatInt(p.from.Unix(), 10))
	// Whole seconds that cover the slice (Tempo wants end after start);
	// what they take in beyond it is owned by the next slice.
	end := p.to.Unix()
	if p.to.Nanosecond() != 0 {
		end++
	}
	q.Set("end", strconv.FormatInt(end, 10))
	q.Set("limit", strconv.Itoa(f.o.Limit))
	q.Set("spss", "1")
	u := f.endpoint("/api/search", q)
	body, err := f.get(ctx, u)
	if err != nil {
		return nil, 0, false, err
	}
	var r struct {
		Traces []struct {
			TraceID string      `json:"traceID"`
			Start   json.Number `json:"startTimeUnixNano"`
		} `json:"traces"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, 0, false, fmt.Errorf("GET %s: not a Tempo search answer: %v", u.Redacted(), err)
	}
	n := len(r.Traces)
	full = n >= f.o.Limit
	if full && canSplit {
		return nil, n, true, nil
	}
	from, to := p.from.UnixNano(), p.to.UnixNano()
	var ids []string
	listed := map[string]bool{}
	for _, t := range r.Traces {
		start, ok := number(t.Start)
		if !ok || t.TraceID == "" {
			return nil, 0, false, fmt.Errorf("GET %s: a trace without a traceID or a startTimeUnixNano", u.Redacted())
		}
		// A search may list a trace twice: it is fetched and counted once.
		if id := normID(t.TraceID); start >= from && start < to && !listed[id] {
			listed[id] = true
			ids = append(ids, t.TraceID)
		}
	}
	docs := make([][]byte, len(ids))
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			docs[i], errs[i] = f.tempoTrace(ctx, id)
		}()
	}
	wg.Wait()
	var b bytes.Buffer
	kept := 0
	for i := range ids {
		if errs[i] != nil {
			return nil, 0, false, errs[i]
		}
		if docs[i] != nil {
			b.Write(docs[i])
			kept++
		}
	}
	f.kept(kept)
	return b.Bytes(), n, full, nil
}

// tempoTrace fetches one trace as one line (nil when Tempo no longer has
// it), noting a PARTIAL answer.
func (f *fetcher) tempoTrace(ctx context.Context, id string) ([]byte, error) {
	u := f.endpoint("/api/v2/traces/"+url.PathEscape(id), nil)
	body, err := f.get(ctx, u)
	var herr *HTTPError
	if errors.As(err, &herr) && herr.Status == http.StatusNotFound {
		f.mu.Lock()
		f.gone++
		f.mu.Unlock()
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var st struct {
		Status  string `json:"status"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return nil, fmt.Errorf("GET %s: not JSON: %v", u.Redacted(), err)
	}
	if st.Status == "PARTIAL" {
		f.mu.Lock()
		f.partial++
		if f.partMsg == "" {
			f.partMsg = quote([]byte(secret.Scrub(f.hideSecrets(st.Message))))
		}
		f.mu.Unlock()
	}
	var line bytes.Buffer
	if err := json.Compact(&line, body); err != nil {
		return nil, fmt.Errorf("GET %s: %v", u.Redacted(), err)
	}
	line.WriteByte('\n')
	return line.Bytes(), nil
}
