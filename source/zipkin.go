package source

// Zipkin's query API:
//
//	GET /api/v2/traces?endTs=MS&lookback=MS&limit=N
//	  → [[span,…],…]: one array per trace, for the traces with a span
//	    whose timestamp (µs) lies in [endTs-lookback, endTs] (ms); no
//	    serviceName: every service.
//
// A slice keeps the traces whose earliest timestamped span starts in it.

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
)

// zipkin fetches one slice: the traces it owns as one line, a Zipkin v2
// array of traces.
func (f *fetcher) zipkin(ctx context.Context, p *piece, canSplit bool) (out []byte, returned int, full bool, err error) {
	q := url.Values{}
	endMS := p.to.UnixMilli()
	q.Set("endTs", strconv.FormatInt(endMS, 10))
	q.Set("lookback", strconv.FormatInt(endMS-p.from.UnixMilli(), 10))
	q.Set("limit", strconv.Itoa(f.o.Limit))
	u := f.endpoint("/api/v2/traces", q)
	body, err := f.get(ctx, u)
	if err != nil {
		return nil, 0, false, err
	}
	var traces [][]json.RawMessage
	if err := json.Unmarshal(body, &traces); err != nil {
		return nil, 0, false, fmt.Errorf("GET %s: not a Zipkin v2 list of traces: %v", u.Redacted(), err)
	}
	n := len(traces)
	full = n >= f.o.Limit
	if full && canSplit {
		return nil, n, true, nil
	}
	from, to := p.from.UnixMicro(), p.to.UnixMicro()
	var keep [][]json.RawMessage
	seen := map[string]bool{}
	for _, tr := range traces {
		first := int64(math.MaxInt64)
		id := ""
		for _, raw := range tr {
			// Timestamps as the file reader takes them: a number, a
			// fraction or a string of one.
			var k struct {
				TraceID   string          `json:"traceId"`
				Timestamp json.RawMessage `json:"timestamp"`
			}
			if json.Unmarshal(raw, &k) != nil {
				continue
			}
			if id == "" {
				id = normID(k.TraceID)
			}
			if ts, ok := number(json.Number(strings.Trim(string(k.Timestamp), `"`))); ok && ts < first {
				first = ts
			}
		}
		// A search may list a trace twice: it is kept once.
		if id != "" && seen[id] {
			continue
		}
		if first == math.MaxInt64 {
			// No span says when: no slice can own the trace. Counted,
			// said in a note, not silently lost.
			f.unplaced(id)
			seen[id] = true
			continue
		}
		if first >= from && first < to {
			seen[id] = true
			keep = append(keep, tr)
		}
	}
	if len(keep) == 0 {
		return nil, n, full, nil
	}
	out, err = marshalLine(keep)
	if err != nil {
		return nil, 0, false, err
	}
	f.kept(len(keep))
	return out, n, full, nil
}
