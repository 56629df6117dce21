package pqguard

import (
	"errors"
	"io"

	"github.com/parquet-go/parquet-go"
)

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
