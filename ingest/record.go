package ingest

import (
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/ingest/internal/spill"
)

// The types every decoder writes into are defined in ingest/internal/record
// (so that the format families can use them without importing this
// package); these aliases are the names the rest of the repository uses.
type (
	// Options say how to read and which spans to keep.
	Options = record.Options
	// Window is a time window of Options.Exclude.
	Window = record.Window
	// Stats are the counts of a read.
	Stats = record.Stats
	// RecordError is one skipped record, positioned.
	RecordError = record.RecordError
	// PassedFile is a file a path expansion passed over, and why.
	PassedFile = record.PassedFile
	// Sink is the consumer of the spans read (see record.Sink: why its
	// capabilities beyond Span are optional).
	Sink = record.Sink
	// SinkFunc is a Sink that is one function.
	SinkFunc = record.SinkFunc
	// ProgressSink is a Sink told how much input was read.
	ProgressSink = record.ProgressSink
	// FileSink is a Sink told which file its next spans come from.
	FileSink = record.FileSink
	// ExpectSink is a Sink told how many spans an input holds.
	ExpectSink = record.ExpectSink
	// Fork is a Sink that works on the decoding goroutines (see
	// record.Fork).
	Fork = record.Fork
	// Branch is the consumer of one decoding goroutine.
	Branch = record.Branch
	// AttrIgnorer is a Branch that tells readers which attributes it no
	// longer reads (see record.AttrIgnorer).
	AttrIgnorer = record.AttrIgnorer
	// OrderedKeys is a Fork whose Ordered reads only some attribute keys
	// (see record.OrderedKeys).
	OrderedKeys = record.OrderedKeys
	// Remote serves paths that are not files (see Options.Remote).
	Remote = record.Remote
)

const (
	// DefaultMaxRecord is the largest line or JSON document accepted by
	// default (--max-record raises it).
	DefaultMaxRecord = record.DefaultMaxRecord
	// DefaultMaxSpill is the largest temporary file a Parquet input from
	// stdin or a compressed file is spilled to by default (--max-spill).
	DefaultMaxSpill = record.DefaultMaxSpill
	// MaxErrors is how many examples of skipped records are kept when
	// Options.MaxErrors is 0.
	MaxErrors = record.MaxErrors

	// Reasons for skipping that do not come from a decoder.
	ReasonOutsideWindow = record.ReasonOutsideWindow
	ReasonExcluded      = record.ReasonExcluded
	ReasonHopFiltered   = record.ReasonHopFiltered
	ReasonNoHop         = record.ReasonNoHop
)

// TempFiles are the temporary files the process has open (see
// spill.TempFiles): a program that ends on a signal calls
// TempFiles.Cleanup.
var TempFiles = spill.TempFiles

// MergeStats combines the statistics of reads of different files into
// those one read of all of them would give (see record.MergeStats).
func MergeStats(a, b *Stats, maxErrors int) (st *Stats, aFile, bFile []int) {
	return record.MergeStats(a, b, maxErrors)
}
