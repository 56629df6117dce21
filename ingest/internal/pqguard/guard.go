package pqguard

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/ingest/internal/spill"
)

// maxPageBytes bounds what one page may claim uncompressed, whatever its
// column chunk says: no span column needs pages this large.
const maxPageBytes = 1 << 30

// CheckPages walks the page headers of every column chunk, reading
// only the headers, before any page is decoded. parquet-go allocates the
// uncompressed size a page header claims; a corrupt header claiming up to
// 2 GiB per page would otherwise cost gigabytes of memory before failing.
// A page that claims more than its whole column chunk holds (or more than
// maxPageBytes), or that runs past its chunk, makes the file corrupt.
func CheckPages(ra io.ReaderAt, size int64, md *format.FileMetaData) error {
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

// CheckFooter checks the trailer (footer length, "PAR1") before the
// library sees it: a corrupt length would otherwise make it allocate up to
// 4 GiB for a footer that cannot exist.
func CheckFooter(ra io.ReaderAt, size int64) error {
	if size < 12 {
		return fmt.Errorf("not a readable Parquet file: %d bytes is too short (truncated?)", size)
	}
	var tail [8]byte
	if _, err := ra.ReadAt(tail[:], size-8); err != nil {
		return fmt.Errorf("not a readable Parquet file: %v", err)
	}
	if string(tail[4:]) != "PAR1" {
		return fmt.Errorf("not a readable Parquet file: no PAR1 footer magic at the end (truncated or corrupt?)")
	}
	if n := int64(binary.LittleEndian.Uint32(tail[:4])); n > size-12 {
		return fmt.Errorf("not a readable Parquet file: footer length %d exceeds the file (%d bytes; truncated or corrupt?)", n, size)
	}
	return nil
}

// Open opens the input as a Parquet file, spilling a stream to a
// temporary file (RandomAccess), after the footer and page guards: a
// corrupt file is an error here, not a panic or a huge allocation in the
// library. cleanup removes the spill; it is nil when err is not.
func Open(src *record.Source) (pf *parquet.File, cleanup func(), err error) {
	ra, size, cleanup, err := spill.RandomAccess(src, "tailscope-*.parquet")
	if err != nil {
		return nil, nil, err
	}
	if err := CheckFooter(ra, size); err != nil {
		cleanup()
		return nil, nil, err
	}
	pf, err = parquet.OpenFile(ra, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("not a readable Parquet file (truncated or corrupt?): %v", err)
	}
	if err := CheckPages(ra, size, pf.Metadata()); err != nil {
		cleanup()
		return nil, nil, err
	}
	return pf, cleanup, nil
}
