// The convert command: its flags and usage; writes any input in tailscope's flat span schema.

package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/tailscope/tailscope/export"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/pipeline"
)

const convertUsage = `Usage: tailscope convert [flags] PATH... -o OUT.{jsonl,parquet,arrow}

Reads spans in any supported format (sniffed from content: flat JSON lines,
OTLP JSON, Jaeger, Zipkin, CSV, Parquet including Grafana Tempo blocks,
Arrow) and writes them in tailscope's flat span schema, one record per span:

  trace_id, span_id, parent_id, service, name, kind, hop,
  start (unix ns), duration_ns, status (ok, error, unset), timeout,
  code, attempt, timeout_ms, weight

so that DuckDB, pandas or Polars can take them further, and tailscope reads
the result back to the same analysis. The hop column holds the hop as
derived by --hop-by. Records that cannot be read are skipped and counted,
as in analyze; --since/--until/--hops filter what is written.

--attributes also writes each span's attributes (resource and span
attributes, a flat log's other fields and columns): an "attributes" object
in JSON lines, a list of key/value pairs in Arrow; Parquet cannot carry
them yet, so --attributes with a Parquet output is refused (exit 2);
tailscope reads them back as they were. They are off by default because
attribute values can hold user data (URLs with tokens, user ids, SQL), and
the file would carry every one of them.

The output format comes from the extension of -o (.jsonl, .ndjson, .json,
.parquet, .pq, .arrow, .feather, .ipc) or from --to. The file is written
atomically (a temporary file, then rename): a failed run leaves no half file.
With -o - (or no -o) and --to, the output goes to stdout.

Examples:
  tailscope convert traces.json -o spans.parquet
  tailscope convert --input csv --map trace_id=TraceID,span_id=SpanID,parent_id=ParentID,service=PodName,name=OperationName,start=StartTimeUnixNano,end=EndTimeUnixNano trace.csv -o spans.arrow
  duckdb -c "SELECT hop, quantile_cont(duration_ns/1e6, 0.99) FROM 'spans.parquet' GROUP BY hop"
`

func runConvert(e *env, args []string) error {
	fs := newFlags(e, "convert", convertUsage)
	var in inputFlags
	var output, to string
	var attrs bool
	fs.BoolVar(&attrs, "attributes", false, "also write each span's attributes (JSON lines, Arrow); off by default: their values can hold user data")
	fs.StringVarP(&output, "output", "o", "", "write to this file (atomically); its extension names the format unless --to does")
	fs.StringVar(&to, "to", "", "output format: "+strings.Join(export.Formats, ", ")+" (default: from the -o extension)")
	in.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if to == "" {
		if output == "" || output == "-" {
			return usagef("say the output format: -o FILE.{jsonl,parquet,arrow}, or --to %s", strings.Join(export.Formats, "|"))
		}
		to = export.FormatOf(output)
		if to == "" {
			return usagef("-o %q: unknown extension; use .jsonl, .parquet or .arrow, or name the format with --to", output)
		}
	} else if !validOutput(to) {
		return usagef("--to %q: want %s", to, strings.Join(export.Formats, ", "))
	}
	if attrs && !export.CarriesAttributes(to) {
		// Writing the spans without them and saying "wrote N spans"
		// would lose what was asked for without a word.
		return usagef("--attributes: %s output does not carry attributes yet; write JSON lines (.jsonl) or Arrow (.arrow), or drop --attributes", to)
	}
	paths := fs.Args()
	opt, err := in.inputs(e, paths, output)
	if err != nil {
		return err
	}
	copt := pipeline.ConvertOptions{Format: to, Attributes: attrs, Name: describe(output), Strict: in.strict}
	var st *ingest.Stats
	err = writeTo(e, output, func(w io.Writer) error {
		st, err = pipeline.Convert(paths, opt, w, copt)
		return err
	})
	if err != nil {
		return err
	}
	if !in.quiet {
		fmt.Fprintf(e.stderr, "tailscope: wrote %d spans to %s (%s); read %d, skipped %d", st.Used, visible(describe(output)), to, st.Read, st.Skipped)
		if len(st.Errors) > 0 {
			fmt.Fprintf(e.stderr, "; first skipped: %s", visible(st.Errors[0].Error()))
		}
		fmt.Fprintln(e.stderr)
	}
	return nil
}

func validOutput(f string) bool {
	for _, x := range export.Formats {
		if x == f {
			return true
		}
	}
	return false
}

func describe(output string) string {
	if output == "" || output == "-" {
		return "stdout"
	}
	return output
}
