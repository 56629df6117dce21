// Package tracejson reads the trace JSON formats: OTLP JSON (documents,
// collector lines, bare span lists), Jaeger (query API and UI export) and
// Zipkin v2. A streaming walker (jsonstream.go, tracejson.go) reads any
// document without loading it whole; each format has a general reader
// built on it and a one-pass fast path (otlpfast.go, jaegerfast.go,
// zipkinfast.go on fastjson.go) that reads the common shapes in place and
// leaves anything unusual to the general reader, with the same spans,
// skips and positions; OTLP collector lines are also parsed on all cores
// (otlpparallel.go).
//
// It is separate from the flat formats (ingest/internal/flat) because it
// is a different model — nested documents whose spans inherit resource
// and process fields — and shares with them only the core
// (ingest/internal/record): the trace-format span record and its
// attribute rules, the scanner, the interner and the emit rules.
package tracejson
