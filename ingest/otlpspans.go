package ingest

import "fmt"

// Some pipelines write OTLP spans one per line, each a bare Span object
// (traceId, spanId, startTimeUnixNano, …) rather than wrapped in
// resourceSpans. They are OTLP spans all the same: Sniff routes them here,
// and each is read with the OTLP span rules. A line may carry its resource
// beside the span ("resource": {"attributes": […]}), or the service as a
// span attribute "service.name".
func init() { register("otlp-spans", decodeOTLPSpans) }

func decodeOTLPSpans(src *Source) error {
	w := newWalker(src)
	return w.run(func() error {
		raw, at, err := w.raw()
		if err != nil {
			return err
		}
		w.index++
		if len(raw) == 0 || raw[0] != '{' {
			w.skipSpan(w.index, at, reasonNotSpan, "want an OTLP span object, got "+string(raw[:min(len(raw), 20)]))
			return nil
		}
		if w.tooLong(raw, at) {
			return nil
		}
		var rec traceRecord
		if reason, detail := w.otlpSpan(raw, &rec); reason != "" {
			w.skipSpan(w.index, at, reason, detail)
			return nil
		}
		var res otlpResource
		if err := objectMembers(raw, func(key string, k kind, v []byte) error {
			switch {
			case key == "resource" && k == kObject:
				return w.otlpReadResource(v, &res)
			case key == "attributes" && k == kArray && res.service == "":
				// service.name as a span attribute, when no resource says it.
				return otlpAttributes(v, func(ak string, str bool, av []byte) error {
					if ak == "service.name" {
						res.service = w.intern.get(av)
					}
					return nil
				})
			}
			return nil
		}); err != nil {
			w.skipSpan(w.index, at, reasonBadValue, fmt.Sprintf("resource: %v", err))
			return nil
		}
		w.otlpEmit(&rec, &res, w.index)
		return nil
	})
}
