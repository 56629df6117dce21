package source

// Jaeger v2's query API (api_v3 over HTTP):
//
//	GET /api/v3/services → {"services":["frontend",…]}
//	GET /api/v3/traces?query.service_name=S&query.start_time_min=T&
//	    query.start_time_max=T&query.num_traces=N&query.raw_traces=true
//	  → {"result":{"resourceSpans":[…]}}: the traces with a span of S that
//	    starts in [min, max] (both RFC 3339, bounds included), all of them
//	    merged into one OTLP TracesData, ids hex or base64;
//	  → 404 {"error":{"httpCode":404,"message":"No traces found"}} when
//	    none does: an empty slice, not an error.
//
// A service is required by most of Jaeger's stores, so a slice is asked
// for once per service, and a trace that crosses services comes back once
// for each: it is kept from the query of the service of its earliest span.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"time"
)

// jaegerServices lists the services Jaeger knows, sorted.
func (f *fetcher) jaegerServices(ctx context.Context) ([]string, error) {
	u := f.endpoint("/api/v3/services", nil)
	body, err := f.get(ctx, u)
	if err != nil {
		return nil, err
	}
	var r struct {
		Services []string `json:"services"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("GET %s: not a list of services: %v", u.Redacted(), err)
	}
	sort.Strings(r.Services)
	return r.Services, nil
}

// endpoint is the API's path with query q.
func (f *fetcher) endpoint(path string, q url.Values) *url.URL {
	u := *f.t.Base
	u.Path += path
	u.RawQuery = q.Encode()
	return &u
}

// otlpData is the part of OTLP JSON the owner test reads; resources,
// scopes and spans are otherwise passed on as they came.
type otlpData struct {
	ResourceSpans []otlpResourceSpans `json:"resourceSpans"`
}

type otlpResourceSpans struct {
	Resource   json.RawMessage  `json:"resource,omitempty"`
	ScopeSpans []otlpScopeSpans `json:"scopeSpans"`
}

type otlpScopeSpans struct {
	Scope json.RawMessage   `json:"scope,omitempty"`
	Spans []json.RawMessage `json:"spans"`
}

type otlpSpanKey struct {
	TraceID string      `json:"traceId"`
	SpanID  string      `json:"spanId"`
	Start   json.Number `json:"startTimeUnixNano"`
}

type otlpResource struct {
	Attributes []struct {
		Key   string `json:"key"`
		Value struct {
			StringValue string `json:"stringValue"`
		} `json:"value"`
	} `json:"attributes"`
}

// serviceOf is a resource's service.name.
func serviceOf(raw json.RawMessage) string {
	var r otlpResource
	if len(raw) == 0 || json.Unmarshal(raw, &r) != nil {
		return ""
	}
	for _, a := range r.Attributes {
		if a.Key == "service.name" {
			return a.Value.StringValue
		}
	}
	return ""
}

// jaeger fetches one service's slice: the traces it owns as one OTLP
// JSON line.
func (f *fetcher) jaeger(ctx context.Context, p *piece, canSplit bool) (out []byte, returned int, full bool, err error) {
	q := url.Values{}
	q.Set("query.service_name", p.service)
	q.Set("query.start_time_min", p.from.UTC().Format(time.RFC3339Nano))
	q.Set("query.start_time_max", p.to.UTC().Format(time.RFC3339Nano))
	q.Set("query.num_traces", strconv.Itoa(f.o.Limit))
	// The spans as stored: Jaeger's adjusters (clock skew, span id
	// de-duplication) would change what was recorded.
	q.Set("query.raw_traces", "true")
	u := f.endpoint("/api/v3/traces", q)
	body, err := f.get(ctx, u)
	var herr *HTTPError
	if errors.As(err, &herr) && herr.Status == http.StatusNotFound && bytes.Contains([]byte(herr.Body), []byte("No traces found")) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, err
	}
	var doc struct {
		Result *otlpData `json:"result"`
	}
	if err := json.Unmarshal(body, &doc); err != nil || doc.Result == nil {
		if err == nil {
			err = errors.New("no \"result\"")
		}
		return nil, 0, false, fmt.Errorf("GET %s: not an api_v3 answer: %v", u.Redacted(), err)
	}
	keep, n, err := f.jaegerOwned(doc.Result, p)
	if err != nil {
		return nil, 0, false, fmt.Errorf("GET %s: %v", u.Redacted(), err)
	}
	full = n >= f.o.Limit
	if full && canSplit {
		return nil, n, true, nil
	}
	out, kept, err := filterOTLP(doc.Result, keep)
	if err != nil {
		return nil, 0, false, err
	}
	f.kept(kept)
	return out, n, full, nil
}

// owner is a trace's earliest span so far.
type owner struct {
	start   int64
	spanID  string
	service string
}

// better says whether a span (service, start, span id) owns its trace
// rather than o: one with a service before one without, then the earlier,
// then the smaller span id.
func better(svc string, start int64, spanID string, o *owner) bool {
	if (svc != "") != (o.service != "") {
		return svc != ""
	}
	return start < o.start || start == o.start && spanID < o.spanID
}

// jaegerOwned decides, for each trace in d, whether piece p owns it: its
// earliest span (ties broken by span id) is of p's service and starts in
// the piece. n is how many traces d holds.
func (f *fetcher) jaegerOwned(d *otlpData, p *piece) (keep map[string]bool, n int, err error) {
	owners := map[string]*owner{}
	for _, rs := range d.ResourceSpans {
		svc := serviceOf(rs.Resource)
		for _, ss := range rs.ScopeSpans {
			for _, raw := range ss.Spans {
				var k otlpSpanKey
				if err := json.Unmarshal(raw, &k); err != nil {
					return nil, 0, fmt.Errorf("a span that is not OTLP JSON: %v", err)
				}
				start, ok := number(k.Start)
				if !ok {
					start = math.MaxInt64 // the reader will say what is wrong with it
				}
				o := owners[k.TraceID]
				if o == nil {
					owners[k.TraceID] = &owner{start: start, spanID: k.SpanID, service: svc}
					continue
				}
				// The owner is the earliest span with a service (a piece is
				// a service's query), then the earliest of all: a root
				// whose resource lacks service.name, or a start the reader
				// will reject, does not leave its trace to no piece.
				if better(svc, start, k.SpanID, o) {
					*o = owner{start: start, spanID: k.SpanID, service: svc}
				}
			}
		}
	}
	keep = map[string]bool{}
	from, to := p.from.UnixNano(), p.to.UnixNano()
	for id, o := range owners {
		if o.service == p.service && o.start >= from && o.start < to {
			keep[id] = true
		}
	}
	return keep, len(owners), nil
}

// filterOTLP writes the spans of the kept traces of d as one OTLP JSON
// line (nothing when none is kept), resources and scopes as they came.
func filterOTLP(d *otlpData, keep map[string]bool) (out []byte, kept int, err error) {
	if len(keep) == 0 {
		return nil, 0, nil
	}
	var res otlpData
	for _, rs := range d.ResourceSpans {
		r := otlpResourceSpans{Resource: rs.Resource}
		for _, ss := range rs.ScopeSpans {
			s := otlpScopeSpans{Scope: ss.Scope}
			for _, raw := range ss.Spans {
				var k otlpSpanKey
				if json.Unmarshal(raw, &k) == nil && keep[k.TraceID] {
					s.Spans = append(s.Spans, raw)
				}
			}
			if len(s.Spans) > 0 {
				r.ScopeSpans = append(r.ScopeSpans, s)
			}
		}
		if len(r.ScopeSpans) > 0 {
			res.ResourceSpans = append(res.ResourceSpans, r)
		}
	}
	out, err = marshalLine(&res)
	return out, len(keep), err
}

// marshalLine is v as one line of JSON, strings as they came (no HTML
// escaping), ending in a newline.
func marshalLine(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
