package ingest

import (
	"github.com/tailscope/tailscope/ingest/internal/flat"
	"github.com/tailscope/tailscope/ingest/internal/pqguard"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/ingest/internal/tempo"
	"github.com/tailscope/tailscope/ingest/internal/tracejson"
)

// decoders maps each format (Formats, and otlp-spans, what sniffing names
// a bare OTLP span list) to its decoder: every one reads a Source and
// emits through it.
var decoders = map[string]func(*record.Source) error{
	"jsonl":      flat.DecodeJSONL,
	"csv":        flat.DecodeCSV,
	"parquet":    decodeParquet,
	"arrow":      flat.DecodeArrow,
	"otlp":       tracejson.DecodeOTLP,
	"otlp-spans": tracejson.DecodeOTLPSpans,
	"jaeger":     tracejson.DecodeJaeger,
	"zipkin":     tracejson.DecodeZipkin,
}

// decodeParquet tells a Tempo block's data.parquet from a flat span table
// by its schema: both are Parquet, opened and guarded the same way.
func decodeParquet(src *record.Source) (err error) {
	defer record.NoPanic("Parquet", &err)
	pf, cleanup, err := pqguard.Open(src)
	if err != nil {
		return err
	}
	defer cleanup()
	if l := tempo.LayoutOf(pf.Schema()); l != nil {
		return tempo.Decode(src, pf, l)
	}
	return flat.DecodeParquet(src, pf)
}

// FlatFields lists the canonical field names of the flat formats, for
// --help and --map checks.
var FlatFields = flat.FlatFields

// ParseMap checks --map FIELD=KEY pairs against the canonical fields. An
// error names the pair at fault; the caller says which setting it came
// from (cmd/tailscope puts the flag before it).
func ParseMap(pairs []string) (map[string]string, error) { return flat.ParseMap(pairs) }
