package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// The OTLP case: the same generated spans as OpenTelemetry
// Collector file-exporter lines — one TracesData document per line, each
// an export batch: resourceSpans (one per service instance, with a few
// resource attributes) → scopeSpans → spans — timed with tailscope
// analyze against DuckDB's read_json + unnest of the same nesting.

// otlpBatchTraces is how many traces one line (one export batch) holds:
// about 650 spans, some 240 KB, the size of a collector batch.
const otlpBatchTraces = 50

// otlpInstances is how many instances each service runs on.
const otlpInstances = 3

// writeOTLP writes the spans as OTLP JSON lines, appending bytes by hand
// (encoding/json would make generation slower than reading).
func writeOTLP(path string, n int) (int, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	type resKey struct {
		service  string
		instance int
	}
	var (
		batch  = map[resKey][]byte{} // the spans of one resource, comma-separated
		order  []resKey
		traces int
		last   [2]uint64
		line   []byte
	)
	flush := func() error {
		if len(order) == 0 {
			return nil
		}
		line = append(line[:0], `{"resourceSpans":[`...)
		for i, k := range order {
			if i > 0 {
				line = append(line, ',')
			}
			line = append(line, `{"resource":{"attributes":[`...)
			line = otlpStrAttr(line, "service.name", k.service)
			line = append(line, ',')
			line = otlpStrAttr(line, "service.instance.id", k.service+"-"+strconv.Itoa(k.instance))
			line = append(line, ',')
			line = otlpStrAttr(line, "k8s.pod.name", fmt.Sprintf("%s-7d9f%d", k.service, k.instance))
			line = append(line, ',')
			line = otlpStrAttr(line, "cloud.availability_zone", "eu-west-1"+string(rune('a'+k.instance)))
			line = append(line, `]},"scopeSpans":[{"scope":{"name":"io.opentelemetry.contrib.http","version":"1.31.0"},"spans":[`...)
			line = append(line, batch[k]...)
			line = append(line, `]}]}`...)
			batch[k] = batch[k][:0]
		}
		line = append(line, "]}\n"...)
		order = order[:0]
		_, err := w.Write(line)
		return err
	}
	var b []byte
	count, err := generate(n, func(s *genSpan) error {
		if s.trace != last {
			last = s.trace
			traces++
			if traces > otlpBatchTraces {
				if err := flush(); err != nil {
					return err
				}
				traces = 1
			}
		}
		k := resKey{s.service, int(s.id>>33) % otlpInstances}
		cur, ok := batch[k]
		if !ok || (len(cur) == 0 && !contains(order, k)) {
			order = append(order, k)
		}
		b = otlpSpanJSON(b[:0], s)
		if len(cur) > 0 {
			cur = append(cur, ',')
		}
		batch[k] = append(cur, b...)
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return count, err
}

func contains[T comparable](xs []T, x T) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func otlpStrAttr(b []byte, k, v string) []byte {
	b = append(b, `{"key":"`...)
	b = append(b, k...)
	b = append(b, `","value":{"stringValue":"`...)
	b = append(b, v...)
	return append(b, `"}}`...)
}

// otlpSpanJSON writes one span as the collector does: hex ids, string
// nanosecond times, numeric kind, int64 attribute values as strings.
func otlpSpanJSON(b []byte, s *genSpan) []byte {
	b = append(b, `{"traceId":"`...)
	b = appendHex(b, s.trace[0])
	b = appendHex(b, s.trace[1])
	b = append(b, `","spanId":"`...)
	b = appendHex(b, s.id)
	if s.parent != 0 {
		b = append(b, `","parentSpanId":"`...)
		b = appendHex(b, s.parent)
	}
	b = append(b, `","flags":257,"name":"`...)
	b = append(b, s.hop...)
	b = append(b, `","kind":`...)
	if s.kind == "server" {
		b = append(b, '2')
	} else {
		b = append(b, '3')
	}
	b = append(b, `,"startTimeUnixNano":"`...)
	b = strconv.AppendInt(b, s.start, 10)
	b = append(b, `","endTimeUnixNano":"`...)
	b = strconv.AppendInt(b, s.start+s.durNs, 10)
	b = append(b, `","attributes":[{"key":"http.response.status_code","value":{"intValue":"`...)
	b = strconv.AppendInt(b, int64(s.code), 10)
	b = append(b, `"}}`...)
	if s.kind == "client" {
		b = append(b, ',')
		b = otlpStrAttr(b, "peer.service", s.hop)
		b = append(b, `,{"key":"http.request.resend_count","value":{"intValue":"`...)
		b = strconv.AppendInt(b, int64(s.attempt-1), 10)
		b = append(b, `"}}`...)
	}
	if s.timeoutInForceNs > 0 {
		b = append(b, `,{"key":"timeout_ms","value":{"doubleValue":`...)
		b = strconv.AppendInt(b, s.timeoutInForceNs/1e6, 10)
		b = append(b, `}}`...)
	}
	b = append(b, `],"status":{`...)
	if s.failed {
		b = append(b, `"code":2`...)
	}
	return append(b, `}}`...)
}

// otlpQuantileSQL is the DuckDB side of the OTLP case: read_json of the
// lines, unnest of resourceSpans → scopeSpans → spans, and the per-hop
// quantiles of quantileSQL, the hop being the service (the resource's
// service.name) and the span name, as tailscope names it.
func otlpQuantileSQL(path string) string {
	return `SELECT hop, count(*) AS attempts,
  quantile_cont(d, [0.5, 0.9, 0.95, 0.99, 0.999]) AS q,
  max(d) AS max_ms
FROM (
  SELECT svc || ' ' || sp.name AS hop, (sp.endTimeUnixNano::BIGINT - sp.startTimeUnixNano::BIGINT) / 1e6 AS d
  FROM (
    SELECT svc, unnest(ss.spans) AS sp
    FROM (
      SELECT list_filter(rs.resource.attributes, a -> a.key = 'service.name')[1].value.stringValue AS svc,
        unnest(rs.scopeSpans) AS ss
      FROM (SELECT unnest(resourceSpans) AS rs
        FROM read_json('` + path + `', format = 'newline_delimited', maximum_object_size = 1073741824)))))
GROUP BY hop ORDER BY hop;
`
}

// otlpGroup generates the OTLP file (-n spans, cached in the work
// folder), puts it in the page cache and returns tailscope analyze and
// DuckDB's unnest query on it.
func otlpGroup(c config, t tools, logf func(string, ...any)) (*group, error) {
	path := filepath.Join(c.dir, "spans-otlp.json")
	start := time.Now()
	got, err := cachedGen(path, c.n, "otlp")
	if err != nil {
		return nil, err
	}
	logf("generated %d spans as OTLP JSON lines in %s (%s)", got, time.Since(start).Round(time.Millisecond), fileSize(path))
	if err := warm(path); err != nil {
		return nil, err
	}
	q, err := t.query(otlpDuckName, "quantile-otlp", otlpQuantileSQL(path), path)
	if err != nil {
		return nil, err
	}
	return &group{format: fmtOTLP, size: c.n, spans: got, minRounds: minNestedRounds, ts: t.analyze(path), duck: []contender{q}}, nil
}
