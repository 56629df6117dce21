package ingest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/tailscope/tailscope/ingest/internal/jsonscan"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/ingest/internal/tracejson"
	"github.com/tailscope/tailscope/option"
)

// summaryMagic starts a partial summary (package summary's Magic, which
// this package cannot import: summary imports it).
var summaryMagic = []byte("\x89TSS\r\n\x1a\n")

// errSummary is what a summary met by the log readers is: summaries are
// picked out of the paths named on the command line (by name or glob) as
// regular files, before the log readers see the rest.
var errSummary = errors.New("a tailscope summary (.tss), which is read only as a file named on the command line (by name or glob), not from standard input, compressed, or inside a directory: name the file itself, uncompressed")

// Sniff names the format of a decompressed input from its first bytes,
// without consuming them: Parquet and Arrow by their magic, JSON by the keys
// of its first object (resourceSpans → OTLP, data/traceID+spans → Jaeger),
// a JSON array → Zipkin, any other JSON object → flat JSON lines, and a first
// line with commas, tabs or semicolons (as many on the next line) → CSV. A
// UTF-8 byte order mark is passed over. An empty input is flat JSON lines
// with no records.
func Sniff(br *bufio.Reader) (string, error) { return sniff(br, nil) }

// sniff is Sniff whose error names the format setting by names.
func sniff(br *bufio.Reader, names option.Names) (string, error) {
	head, _ := br.Peek(record.SniffWindow)
	switch {
	case bytes.HasPrefix(head, summaryMagic):
		return "", errSummary
	case bytes.HasPrefix(head, []byte("PAR1")):
		return "parquet", nil
	case bytes.HasPrefix(head, []byte("ARROW1")),
		bytes.HasPrefix(head, []byte{0xff, 0xff, 0xff, 0xff}):
		return "arrow", nil
	}
	head = bytes.TrimPrefix(head, []byte("\xef\xbb\xbf")) // UTF-8 BOM
	t := bytes.TrimLeft(head, " \t\r\n")
	if len(t) == 0 {
		return "jsonl", nil
	}
	switch t[0] {
	case '{':
		keys := jsonscan.TopKeys(t)
		has := func(k ...string) bool {
			for _, x := range k {
				if keys[x] {
					return true
				}
			}
			return false
		}
		switch {
		case has("resourceSpans", "resource_spans", "batches") || tracejson.OTLPWrapped(t):
			return "otlp", nil
		case has("data") || (has("traceID") && has("spans")) || (has("spans") && has("processes")):
			return "jaeger", nil
		case has("traceId", "trace_id") && has("spanId", "span_id") &&
			has("startTimeUnixNano", "start_time_unix_nano") && has("endTimeUnixNano", "end_time_unix_nano") &&
			!has("hop", "duration", "duration_ms", "duration_us", "duration_ns"):
			// A bare OTLP span per line (no resourceSpans around it).
			return "otlp-spans", nil
		}
		return "jsonl", nil
	case '[':
		// An array of Jaeger traces or of OTLP documents, else Zipkin
		// (an array of spans, or of arrays of spans).
		keys := jsonscan.TopKeys(bytes.TrimLeft(t[1:], " \t\r\n"))
		switch {
		case keys["resourceSpans"] || keys["resource_spans"] || keys["batches"]:
			return "otlp", nil
		case keys["spans"] && !keys["id"]:
			return "jaeger", nil
		}
		return "zipkin", nil
	}
	line := t
	var next []byte
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line, next = line[:i], line[i+1:]
		if j := bytes.IndexByte(next, '\n'); j >= 0 {
			next = next[:j]
		} else {
			next = nil // cut by the window: not a whole line
		}
	}
	line = bytes.TrimRight(line, "\r")
	if utf8.Valid(line) && bytes.IndexByte(line, ',') > 0 {
		return "csv", nil
	}
	// Tab- and semicolon-separated tables: a header of at least two
	// names, and a next line (when there is one) with as many fields.
	for _, d := range []byte{'\t', ';'} {
		n := bytes.Count(line, []byte{d})
		if n == 0 || !utf8.Valid(line) || line[0] == d {
			continue
		}
		next = bytes.TrimRight(next, "\r")
		if len(next) == 0 || bytes.Count(next, []byte{d}) == n {
			return "csv", nil
		}
	}
	show := line
	if len(show) > 24 {
		show = show[:24]
	}
	return "", fmt.Errorf("unknown format: starts with %q; name it with %s (auto, jsonl, otlp, jaeger, zipkin, csv, parquet, arrow)", show, names.Of(option.Input))
}
