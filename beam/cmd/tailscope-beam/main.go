// Command tailscope-beam runs tailscope's summary pipeline (package tsbeam)
// on a Beam runner: prism in-process by default, or Flink, Spark or
// Dataflow through --runner and their flags (see the README).
//
//	tailscope-beam --input 'gs://bucket/traces/2026-11-30/*' --output gs://bucket/summaries/2026-11-30.tss \
//	    --runner dataflow --project P --region R --staging_location gs://bucket/staging
package main

import (
	"context"
	"flag"
	"log"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/gcs"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/s3"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"
	tsbeam "github.com/tailscope/tailscope/beam"
)

var (
	input       = flag.String("input", "", "glob of the span logs to summarize (local, gs://, s3://)")
	output      = flag.String("output", "", "where to write the summary (.tss)")
	hopBy       = flag.String("hop_by", "", "what names a hop, as tailscope's --hop-by (default: the format's)")
	sampleSpans = flag.Int("sample_spans", 0, "spans kept whole in the trace sample (default: tailscope's)")
)

func main() {
	flag.Parse()
	beam.Init()
	if *input == "" || *output == "" {
		log.Fatal("tailscope-beam: --input and --output are required")
	}
	p, s := beam.NewPipelineWithRoot()
	tsbeam.Summarize(s, *input, *output, tsbeam.Options{HopBy: *hopBy, SampleSpans: *sampleSpans})
	if err := beamx.Run(context.Background(), p); err != nil {
		log.Fatalf("tailscope-beam: %v", err)
	}
}
