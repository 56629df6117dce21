package summary

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// enc appends the format's primitives to a buffer.
type enc struct{ b []byte }

func (e *enc) u(x uint64)  { e.b = binary.AppendUvarint(e.b, x) }
func (e *enc) i(x int64)   { e.b = binary.AppendVarint(e.b, x) }
func (e *enc) n(x int)     { e.u(uint64(x)) }
func (e *enc) f(x float64) { e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(x)) }
func (e *enc) s(x string)  { e.n(len(x)); e.b = append(e.b, x...) }
func (e *enc) bool(x bool) {
	if x {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}

// dec reads them back. The first error sticks: every read after it
// returns zero, so a decoder checks err once at the end of a record, and
// no length read from the input is trusted beyond what remains of it.
type dec struct {
	b   []byte
	err error
}

var errShort = errors.New("truncated")

func (d *dec) fail(err error) {
	if d.err == nil {
		d.err = err
	}
	d.b = nil
}

func (d *dec) u() uint64 {
	if d.err != nil {
		return 0
	}
	x, k := binary.Uvarint(d.b)
	if k <= 0 {
		d.fail(errShort)
		return 0
	}
	d.b = d.b[k:]
	return x
}

func (d *dec) i() int64 {
	if d.err != nil {
		return 0
	}
	x, k := binary.Varint(d.b)
	if k <= 0 {
		d.fail(errShort)
		return 0
	}
	d.b = d.b[k:]
	return x
}

// n reads a count or length, which must fit in an int.
func (d *dec) n() int {
	x := d.u()
	if x > math.MaxInt32 {
		d.fail(fmt.Errorf("count %d out of range", x))
		return 0
	}
	return int(x)
}

// count reads a number of items each at least min bytes long: more than
// the remaining input could hold is an error, not an allocation.
func (d *dec) count(min int) int {
	x := d.n()
	if x > len(d.b)/max(min, 1) {
		d.fail(errShort)
		return 0
	}
	return x
}

func (d *dec) f() float64 {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 8 {
		d.fail(errShort)
		return 0
	}
	x := math.Float64frombits(binary.LittleEndian.Uint64(d.b))
	d.b = d.b[8:]
	return x
}

func (d *dec) s() string {
	n := d.n()
	if d.err != nil {
		return ""
	}
	if n > len(d.b) {
		d.fail(errShort)
		return ""
	}
	x := string(d.b[:n])
	d.b = d.b[n:]
	return x
}

func (d *dec) bool() bool {
	if d.err != nil {
		return false
	}
	if len(d.b) < 1 {
		d.fail(errShort)
		return false
	}
	x := d.b[0]
	d.b = d.b[1:]
	if x > 1 {
		d.fail(fmt.Errorf("flag %d is not 0 or 1", x))
	}
	return x == 1
}

// done checks that a section was read to its end.
func (d *dec) done() error {
	if d.err == nil && len(d.b) > 0 {
		d.err = fmt.Errorf("%d bytes left over", len(d.b))
	}
	return d.err
}
