package main

import (
	"bufio"
	"os"
	"strconv"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"
	"github.com/tailscope/tailscope/export"
)

// The flat Parquet file with extra columns: the flat schema as export
// writes it (the same spans, the same column types and encodings), plus
// the kind of columns a real export carries beside them — OTLP attributes
// flattened to top-level columns, a backend's dedicated columns — that no
// span field takes. tailscope reads them as span attributes (a hop's
// attribution compares their values); DuckDB's per-hop query names none
// of them and reads none.
//
// The extra columns (wideExtra): the span's start again in ns
// (start_unix_nano, a distinct value a row, as the exporters write it
// beside a start column of their own), its pod (four a service), its
// route and method (routing attributes, null on the gateway's server
// spans), the region and environment (a few values for the whole file,
// dictionary-encoded) and the peer port (plain int32).

// wideExtra is how many columns the wide file has beyond the flat schema.
const wideExtra = 7

// wideRow is export's flat schema (its ParquetRow, embedded: parquet-go
// flattens it into the row's first columns) with the extra columns after
// it.
type wideRow struct {
	export.ParquetRow

	StartUnixNano int64  `parquet:"start_unix_nano"`
	Pod           string `parquet:"k8s.pod.name,optional,dict"`
	Route         string `parquet:"http.route,optional,dict"`
	Method        string `parquet:"http.request.method,optional,dict"`
	Region        string `parquet:"cloud.region,dict"`
	Env           string `parquet:"deployment.environment,dict"`
	PeerPort      int32  `parquet:"net.peer.port,optional"`
}

var wideRegions = [...]string{"eu-west-1", "us-east-1", "ap-south-1"}

// writeWideParquet writes the spans of writeParquet with the extra
// columns, in row groups of export's size, zstd-compressed as export does.
func writeWideParquet(path string, n int) (int, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	w := parquet.NewGenericWriter[wideRow](bw,
		parquet.Compression(&zstd.Codec{}),
		parquet.MaxRowsPerRowGroup(export.ParquetRowGroup),
		parquet.CreatedBy("tailscope-bench", "", ""))
	rows := make([]wideRow, 0, 4096)
	att := make([]int32, 4096)
	flush := func() error {
		if len(rows) == 0 {
			return nil
		}
		_, err := w.Write(rows)
		clear(rows)
		rows = rows[:0]
		return err
	}
	var idb []byte
	count, err := generate(n, func(s *genSpan) error {
		sp := genToSpan(s, &idb)
		r := wideRow{
			StartUnixNano: s.start,
			Pod:           s.service + "-7d9f8b-" + strconv.Itoa(int(s.id>>60&3)),
			Region:        wideRegions[s.trace[0]%uint64(len(wideRegions))],
			Env:           "prod",
		}
		r.Fill(&sp, &att[len(rows)])
		if s.kind == "client" {
			r.Route, r.Method, r.PeerPort = "/v1/"+s.hop+"/{id}", "POST", 8080
			if s.hop == "catalog" || s.hop == "search" {
				r.Method = "GET"
			}
		}
		rows = append(rows, r)
		if len(rows) == cap(rows) {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err == nil {
		err = w.Close()
	}
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return count, err
}
