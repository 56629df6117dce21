package ingest

import (
	"bytes"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

// A page header that claims more than its column chunk holds is refused
// before parquet-go would allocate the claimed size.
func TestParquetPageClaimGuard(t *testing.T) {
	var rows []flatRow
	for len(rows) < 20000 {
		rows = append(rows, flatRows()...)
	}
	good := writeParquet(t, rows)
	pf, err := parquet.OpenFile(bytes.NewReader(good), int64(len(good)))
	if err != nil {
		t.Fatal(err)
	}
	m := pf.Metadata().RowGroups[0].Columns[0].MetaData
	off := m.DataPageOffset
	if m.DictionaryPageOffset > 0 && m.DictionaryPageOffset < off {
		off = m.DictionaryPageOffset
	}
	var proto thrift.CompactProtocol
	var h format.PageHeader
	pr := proto.NewReaderFromBytes(good[off:])
	if err := thrift.NewDecoder(pr).Decode(&h); err != nil {
		t.Fatal(err)
	}
	n := pr.BytesRead()
	// Claim as much as the varint's width allows, far over the chunk.
	orig := h.UncompressedPageSize
	var patched []byte
	for claim := int32(1 << 20); int64(claim) > m.TotalUncompressedSize; claim /= 2 {
		h.UncompressedPageSize = claim
		b, err := thrift.Marshal(&proto, &h)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) == n {
			patched = append(append(append([]byte(nil), good[:off]...), b...), good[off+int64(n):]...)
			break
		}
	}
	if patched == nil {
		t.Skipf("no claim over %d fits the header's %d bytes (was %d)", m.TotalUncompressedSize, n, orig)
	}
	_, err = ReadStream("bad.parquet", bytes.NewReader(patched), record.Options{Format: "parquet"}, SinkFunc(func(*span.Span) {}))
	if err == nil || !strings.Contains(err.Error(), "bad.parquet") || !strings.Contains(err.Error(), "claims") {
		t.Errorf("want an error naming the file and the claim, got %v", err)
	}
	// The untouched file still reads.
	if _, err := ReadStream("good.parquet", bytes.NewReader(good), record.Options{Format: "parquet"}, SinkFunc(func(*span.Span) {})); err != nil {
		t.Errorf("good file: %v", err)
	}
}
