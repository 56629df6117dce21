package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// maxPageBytes bounds what one page may claim uncompressed, whatever its
// column chunk says: no span column needs pages this large.
const maxPageBytes = 1 << 30

// CheckParquetPages walks the page headers of every column chunk, reading
// only the headers, before any page is decoded. parquet-go allocates the
// uncompressed size a page header claims; a corrupt header claiming up to
// 2 GiB per page would otherwise cost gigabytes of memory before failing.
// A page that claims more than its whole column chunk holds (or more than
// maxPageBytes), or that runs past its chunk, makes the file corrupt.
func CheckParquetPages(ra io.ReaderAt, size int64, md *format.FileMetaData) error {
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

// RandomAccess returns the input as an io.ReaderAt and its size. A
// stream (stdin, a decompressed input) is spilled to a temporary file,
// registered in TempFiles so that a signal does not leave it behind, and
// bounded by Options.MaxSpill: a small compressed input can expand to far
// more than the disk holds.
func RandomAccess(src *Source, pattern string) (io.ReaderAt, int64, func(), error) {
	if src.File != nil {
		fi, err := src.File.Stat()
		if err == nil && fi.Mode().IsRegular() {
			return src.File, fi.Size(), func() {}, nil
		}
	}
	tmp, err := os.CreateTemp("", pattern)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("spilling to a temporary file: %v", err)
	}
	cleanup := func() { tmp.Close(); TempFiles.Remove(tmp.Name()) }
	if !TempFiles.Add(tmp.Name()) {
		cleanup()
		return nil, 0, nil, errors.New("spilling to a temporary file: interrupted")
	}
	limit := src.opt.MaxSpill
	if limit <= 0 {
		limit = DefaultMaxSpill
	}
	n, err := io.Copy(tmp, io.LimitReader(src.R, limit+1))
	if err == nil && n > limit {
		err = fmt.Errorf("the input is over %s once decompressed (raise with --max-spill)", bytesText(limit))
	}
	if err != nil {
		cleanup()
		return nil, 0, nil, fmt.Errorf("spilling to a temporary file: %v", err)
	}
	return tmp, n, cleanup, nil
}

// bytesText is a size for messages: 4 GiB, 512 MiB, 100 KiB, 12 bytes.
func bytesText(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// NoPanic turns a panic of a third-party decoder on corrupt input into an
// error: a malformed file must never take the run down.
func NoPanic(what string, err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("corrupt %s file: %v", what, r)
	}
}

// Cursor reads one column chunk value by value, page after page. A value
// is valid until the next call to Next or Fill.
type Cursor struct {
	pages  parquet.Pages
	vr     parquet.ValueReader
	buf    []parquet.Value
	i, n   int
	Err    error
	done   bool
	stalls int
}

func NewCursor(cc parquet.ColumnChunk) *Cursor {
	return &Cursor{pages: cc.Pages(), buf: make([]parquet.Value, 1024)}
}

// Next returns the next value; false at the end of the chunk or on an
// error (Err).
func (c *Cursor) Next() (parquet.Value, bool) {
	if c.i >= c.n && !c.Fill() {
		return parquet.Value{}, false
	}
	v := c.buf[c.i]
	c.i++
	return v, true
}

// Buffered returns the values read but not yet taken, in the cursor's own
// buffer: readers that look at runs of values (a nested list's) take them
// there with Advance rather than copy them one by one. The view and the
// page bytes its values point to are valid until the next Fill (or the
// Next that needs one).
func (c *Cursor) Buffered() []parquet.Value { return c.buf[c.i:c.n] }

// Advance takes the first k values of Buffered.
func (c *Cursor) Advance(k int) { c.i += k }

// Fill makes sure values are buffered, reading the next ones (the next
// page when this one is done) when none is; false at the end of the chunk
// or on an error (Err). It overwrites the buffer: earlier values and
// views are gone.
func (c *Cursor) Fill() bool {
	for c.i >= c.n {
		if c.done {
			return false
		}
		if c.vr == nil {
			p, err := c.pages.ReadPage()
			if err != nil {
				c.done = true
				if !errors.Is(err, io.EOF) {
					c.Err = err
				}
				return false
			}
			c.vr = p.Values()
		}
		n, err := c.vr.ReadValues(c.buf)
		c.i, c.n = 0, n
		if n == 0 && err == nil {
			// A reader that makes no progress would spin forever on a
			// corrupt page: give up on it.
			c.stalls++
			if c.stalls > 16 {
				c.done, c.Err = true, errors.New("page reader makes no progress (corrupt page)")
				return false
			}
			continue
		}
		c.stalls = 0
		if err != nil {
			c.vr = nil
			if !errors.Is(err, io.EOF) {
				c.done, c.Err = true, err
				return false
			}
		}
	}
	return true
}

func (c *Cursor) Close() { c.pages.Close() }

// CheckParquetFooter checks the trailer (footer length, "PAR1") before the
// library sees it: a corrupt length would otherwise make it allocate up to
// 4 GiB for a footer that cannot exist.
func CheckParquetFooter(ra io.ReaderAt, size int64) error {
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

// OpenParquet opens the input as a Parquet file, spilling a stream to a
// temporary file (RandomAccess), after the footer and page guards: a
// corrupt file is an error here, not a panic or a huge allocation in the
// library. cleanup removes the spill; it is nil when err is not.
func OpenParquet(src *Source) (pf *parquet.File, cleanup func(), err error) {
	ra, size, cleanup, err := RandomAccess(src, "tailscope-*.parquet")
	if err != nil {
		return nil, nil, err
	}
	if err := CheckParquetFooter(ra, size); err != nil {
		cleanup()
		return nil, nil, err
	}
	pf, err = parquet.OpenFile(ra, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("not a readable Parquet file (truncated or corrupt?): %v", err)
	}
	if err := CheckParquetPages(ra, size, pf.Metadata()); err != nil {
		cleanup()
		return nil, nil, err
	}
	return pf, cleanup, nil
}
