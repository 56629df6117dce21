// Package tsbeam summarises span logs with Apache Beam, for logs that live
// in object storage at a size no one machine reads in time: the same
// partial summary `tailscope summarize` writes (package summary), computed
// by Flink, Spark or Dataflow.
//
// The pipeline matches the input files, reads each with tailscope's own
// readers in a DoFn (every format the CLI reads, sniffed from content),
// and combines the per-file summaries with a CombineFn whose accumulators
// are summaries in their binary format: merging is associative and
// commutative, so the runner may combine in any order and lift the
// combine before the shuffle. Each file's summary holds the spans of the
// traces in the deterministic trace sample, chosen by a fixed hash of the
// trace id, so a trace cut across files is whole again in the merge. The
// one output file is a summary the CLI reports on (`tailscope analyze
// out.tss`), equal to `tailscope summarize` on the same files.
//
// This module is separate from tailscope's own, so that the CLI does not
// build Beam.
package tsbeam

import (
	"context"
	"fmt"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/fileio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/pipeline"
	"github.com/tailscope/tailscope/summary"
)

func init() {
	register.DoFn3x1[context.Context, fileio.FileMetadata, func([]byte), error](&summarizeFn{})
	register.Emitter1[[]byte]()
	register.DoFn2x1[context.Context, []byte, error](&writeFn{})
	register.Combiner1[[]byte](&mergeFn{})
	beam.RegisterType(reflect.TypeOf((*summarizeFn)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*writeFn)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*mergeFn)(nil)).Elem())
}

// Options are the reader options the pipeline passes to every file.
type Options struct {
	// HopBy is --hop-by (empty: the format's default).
	HopBy string
	// SampleSpans bounds the trace sample (0: the CLI's default).
	SampleSpans int
}

// Summarize adds to s the summary of the files glob matches (any
// filesystem Beam knows: local, gs://, s3://… as linked into the binary),
// written to output. It returns the merged summary's PCollection (one
// element, the encoded summary).
func Summarize(s beam.Scope, glob, output string, opt Options) beam.PCollection {
	s = s.Scope("tailscope")
	files := fileio.MatchFiles(s, glob, fileio.MatchEmptyDisallow())
	parts := beam.ParDo(s, &summarizeFn{HopBy: opt.HopBy, SampleSpans: opt.SampleSpans}, files)
	merged := beam.Combine(s, &mergeFn{}, parts)
	beam.ParDo0(s, &writeFn{Output: output}, merged)
	return merged
}

// summarizeFn reads one file into its summary.
type summarizeFn struct {
	HopBy       string
	SampleSpans int
}

func (f *summarizeFn) ProcessElement(ctx context.Context, m fileio.FileMetadata, emit func([]byte)) error {
	fs, err := filesystem.New(ctx, m.Path)
	if err != nil {
		return err
	}
	defer fs.Close()
	r, err := fs.OpenRead(ctx, m.Path)
	if err != nil {
		return fmt.Errorf("%s: %w", m.Path, err)
	}
	defer r.Close()
	sum, err := pipeline.SummarizeStream(m.Path, r, pipeline.Options{Ingest: ingest.Options{HopBy: f.HopBy}, SampleSpans: f.SampleSpans})
	if err != nil {
		return err
	}
	emit(summary.Encode(sum))
	return nil
}

// mergeFn combines summaries. Its accumulator is an encoded summary (nil
// for none yet): what the runner ships between workers is the summary
// format, checked on every decode.
type mergeFn struct{}

func (*mergeFn) CreateAccumulator() []byte { return nil }

func (f *mergeFn) AddInput(acc, in []byte) ([]byte, error) { return f.MergeAccumulators(acc, in) }

func (*mergeFn) MergeAccumulators(a, b []byte) ([]byte, error) {
	switch {
	case len(a) == 0:
		return b, nil
	case len(b) == 0:
		return a, nil
	}
	x, err := summary.Decode(a)
	if err != nil {
		return nil, err
	}
	y, err := summary.Decode(b)
	if err != nil {
		return nil, err
	}
	m, err := summary.Merge(x, y)
	if err != nil {
		return nil, err
	}
	return summary.Encode(m), nil
}

func (*mergeFn) ExtractOutput(acc []byte) []byte { return acc }

// writeFn writes the merged summary to Output.
type writeFn struct{ Output string }

func (f *writeFn) ProcessElement(ctx context.Context, b []byte) error {
	if len(b) == 0 {
		return fmt.Errorf("no input to summarize")
	}
	fs, err := filesystem.New(ctx, f.Output)
	if err != nil {
		return err
	}
	defer fs.Close()
	w, err := fs.OpenWrite(ctx, f.Output)
	if err != nil {
		return fmt.Errorf("%s: %w", f.Output, err)
	}
	if _, err := w.Write(b); err != nil {
		w.Close()
		return fmt.Errorf("%s: %w", f.Output, err)
	}
	return w.Close()
}
