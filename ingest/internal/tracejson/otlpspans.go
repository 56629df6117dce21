package tracejson

import (
	"github.com/tailscope/tailscope/ingest/internal/jsonscan"
	"github.com/tailscope/tailscope/ingest/internal/record"
)

// Some pipelines write OTLP spans one per line, each a bare Span object
// (traceId, spanId, startTimeUnixNano, …) rather than wrapped in
// resourceSpans. They are OTLP spans all the same: Sniff routes them here,
// and each is read with the OTLP span rules. A line may carry its resource
// beside the span ("resource": {"attributes": […]}), or the service as a
// span attribute "service.name".

func DecodeOTLPSpans(src *record.Source) error {
	w := newWalker(src)
	return w.run(func() error {
		if _, err := w.top(); err != nil {
			return err // io.EOF at the end of the input
		}
		var rec record.TraceRecord
		raw, at, ok, err := w.nextOTLPSpan(&rec)
		if !ok {
			return err
		}
		var res otlpResource
		if err := objectMembers(raw, func(key string, k jsonscan.JSONKind, v []byte) error {
			switch {
			case key == "resource" && k == jsonscan.KObject:
				return w.otlpReadResource(v, &res)
			case key == "attributes" && k == jsonscan.KArray && res.service == "":
				// service.name as a span attribute, when no resource says it.
				return otlpAttributes(v, func(ak string, str bool, av []byte) error {
					if ak == "service.name" {
						res.service = w.intern.Get(av)
					}
					return nil
				})
			}
			return nil
		}); err != nil {
			res.bad = err // the span is kept; its service may be missing
		}
		w.otlpEmit(&rec, &res, nil, w.index, at)
		return nil
	})
}
