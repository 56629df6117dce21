package tracejson

import (
	"bufio"
	"fmt"
	"io"

	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

// readTrace is ingest.ReadStream for a named trace JSON format (no
// sniffing, no decompression: what the face adds is tested there), so
// that the fast-path tests can switch this package's paths and read
// through the decoders as the face does.
func readTrace(name string, r io.Reader, opt record.Options, emit func(*span.Span)) (*record.Stats, error) {
	if opt.MaxRecord <= 0 {
		opt.MaxRecord = record.DefaultMaxRecord
	}
	if opt.MaxErrors <= 0 {
		opt.MaxErrors = 20
	}
	dec := map[string]func(*record.Source) error{"otlp": DecodeOTLP, "otlp-spans": DecodeOTLPSpans, "jaeger": DecodeJaeger, "zipkin": DecodeZipkin}[opt.Format]
	if dec == nil {
		return nil, fmt.Errorf("%s: no trace JSON format %q", name, opt.Format)
	}
	st := record.NewStats([]string{name})
	st.Formats[name] = opt.Format
	err := dec(record.NewSource(name, bufio.NewReaderSize(r, 1<<16), nil, &opt, st, record.SinkFunc(emit)))
	if err != nil {
		err = fmt.Errorf("%s: %w", name, err)
	}
	st.Finish()
	return st, err
}
