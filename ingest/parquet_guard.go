package ingest

import (
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// maxPageBytes bounds what one page may claim uncompressed, whatever its
// column chunk says: no span column needs pages this large.
const maxPageBytes = 1 << 30

// checkParquetPages walks the page headers of every column chunk, reading
// only the headers, before any page is decoded. parquet-go allocates the
// uncompressed size a page header claims; a corrupt header claiming up to
// 2 GiB per page would otherwise cost gigabytes of memory before failing.
// A page that claims more than its whole column chunk holds (or more than
// maxPageBytes), or that runs past its chunk, makes the file corrupt.
func checkParquetPages(ra io.ReaderAt, size int64, md *format.FileMetaData) error {
	var proto thrift.CompactProtocol
	buf := make([]byte, 256)
	for rgi := range md.RowGroups {
		for ci := range md.RowGroups[rgi].Columns {
			m := &md.RowGroups[rgi].Columns[ci].MetaData
			where := fmt.Sprintf("row group %d, column %d", rgi+1, ci+1)
			start := m.DataPageOffset
			if m.DictionaryPageOffset > 0 && m.DictionaryPageOffset < start {
				start = m.DictionaryPageOffset
			}
			end := start + m.TotalCompressedSize
			if start < 4 || m.TotalCompressedSize < 0 || end > size || end < start {
				return fmt.Errorf("corrupt Parquet file: %s lies outside the file", where)
			}
			limit := min(m.TotalUncompressedSize, maxPageBytes)
			for off := start; off < end; {
				var h format.PageHeader
				n, err := readPageHeader(ra, off, end, &buf, &proto, &h)
				if err != nil {
					return fmt.Errorf("corrupt Parquet file: %s: page header at byte %d: %v", where, off, err)
				}
				if h.UncompressedPageSize < 0 || int64(h.UncompressedPageSize) > limit || h.CompressedPageSize < 0 {
					return fmt.Errorf("corrupt Parquet file: %s: a page at byte %d claims %d bytes (%d compressed) in a column chunk of %d",
						where, off, h.UncompressedPageSize, h.CompressedPageSize, m.TotalUncompressedSize)
				}
				off += int64(n) + int64(h.CompressedPageSize)
				if off > end {
					return fmt.Errorf("corrupt Parquet file: %s: a page runs past its column chunk", where)
				}
			}
		}
	}
	return nil
}

// readPageHeader decodes the page header at off and returns its length.
// Headers are small; the read grows only when statistics make one larger.
func readPageHeader(ra io.ReaderAt, off, end int64, buf *[]byte, proto *thrift.CompactProtocol, h *format.PageHeader) (int, error) {
	for want := len(*buf); ; want *= 4 {
		if int64(want) > end-off {
			want = int(end - off)
		}
		if cap(*buf) < want {
			*buf = make([]byte, want)
		}
		b := (*buf)[:want]
		n, err := ra.ReadAt(b, off)
		if n < want && err != nil && err != io.EOF {
			return 0, err
		}
		b = b[:n]
		*h = format.PageHeader{}
		pr := proto.NewReaderFromBytes(b)
		derr := thrift.NewDecoder(pr).Decode(h)
		if derr == nil {
			return pr.BytesRead(), nil
		}
		if int64(want) >= end-off || want >= 16<<20 {
			return 0, derr
		}
	}
}
