package clickhouse

// The query's answer is FORMAT RowBinaryWithNamesAndTypes: a header
// (uvarint N, N column names, N type names, each a uvarint length and its
// bytes), then the rows, each column's value in order: Int64 as 8 bytes
// little-endian, String as a uvarint length and its bytes, Array(T) as a
// uvarint count and its elements. The query gives every column one of
// the types below (it converts what it selects), so the header is checked
// against the aliases and types it asked for, and nothing else is read.
//
// Nothing read is trusted for an allocation: every length counts against
// the row's budget (Options.MaxRow) before a byte of it is read.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
)

// Column types of the answer.
const (
	tInt64     = "Int64"
	tString    = "String"
	tStrings   = "Array(String)"
	tStringsss = "Array(Array(String))"
)

// aliasType is the type of each alias the query selects.
var aliasType = map[string]string{
	aStart: tInt64, aDur: tInt64,
	aTrace: tString, aSpan: tString, aParent: tString, aName: tString, aService: tString, aKind: tString,
	aStatus: tString, aMessage: tString, aState: tString, aScope: tString, aScopeVer: tString,
	aResKeys: tStrings, aResVals: tStrings, aKeys: tStrings, aVals: tStrings,
	aExcKeys: tStringsss, aExcVals: tStringsss,
}

// errCorrupt is an answer that does not decode as its header says.
var errCorrupt = errors.New("not RowBinary as its header says")

// decoder reads an answer's rows.
type decoder struct {
	br     *bufio.Reader
	names  []string
	budget int // what the row may still read
	max    int
	raw    []byte // the row's bytes so far (bounded by max), for messages
	arena  []byte // the row's text
	conv   converter
}

// newDecoder reads the header and checks it.
func newDecoder(br *bufio.Reader, max int) (*decoder, error) {
	d := &decoder{br: br, max: max, budget: max}
	n, err := d.uvarint()
	if err != nil {
		return nil, err
	}
	if n == 0 || n > uint64(len(aliasType)) {
		return nil, fmt.Errorf("%w: %d columns", errCorrupt, n)
	}
	names := make([]string, n)
	for i := range names {
		b, err := d.bytes()
		if err != nil {
			return nil, err
		}
		names[i] = string(b)
	}
	seen := map[string]bool{}
	for i := range names {
		b, err := d.bytes()
		if err != nil {
			return nil, err
		}
		want, ok := aliasType[names[i]]
		if !ok || seen[names[i]] {
			return nil, fmt.Errorf("%w: an unexpected column %q", errCorrupt, names[i])
		}
		seen[names[i]] = true
		// RowBinary writes a LowCardinality(T) as a T.
		if string(b) != want && !(want == tString && string(b) == "LowCardinality(String)") {
			return nil, fmt.Errorf("%w: column %s is %s, want %s", errCorrupt, names[i], b, want)
		}
	}
	if !seen[aStart] || !seen[aDur] {
		return nil, fmt.Errorf("%w: no start or duration column", errCorrupt)
	}
	d.names = names
	return d, nil
}

// next reads one row and returns it as an OTLP line, valid until the
// next call; io.EOF at the end of the answer.
func (d *decoder) next() ([]byte, error) {
	d.budget, d.raw, d.arena = d.max, d.raw[:0], d.arena[:0]
	if _, err := d.br.Peek(1); err != nil {
		return nil, err // io.EOF at the end of the answer
	}
	r := &d.conv.r
	*r = row{RK: r.RK[:0], RV: r.RV[:0], AK: r.AK[:0], AV: r.AV[:0], EK: r.EK[:0], EV: r.EV[:0]}
	for _, name := range d.names {
		var err error
		switch name {
		case aStart:
			r.S.v, err = d.int64()
			r.S.set = true
		case aDur:
			r.D.v, err = d.int64()
			r.D.set = true
		case aTrace:
			r.T, err = d.str()
		case aSpan:
			r.I, err = d.str()
		case aParent:
			r.P, err = d.str()
		case aName:
			r.N, err = d.str()
		case aService:
			r.SV, err = d.str()
		case aKind:
			r.K, err = d.str()
		case aStatus:
			r.C, err = d.str()
		case aMessage:
			r.M, err = d.str()
		case aState:
			r.TS, err = d.str()
		case aScope:
			r.SN, err = d.str()
		case aScopeVer:
			r.SR, err = d.str()
		case aResKeys:
			r.RK, err = d.strs(r.RK)
		case aResVals:
			r.RV, err = d.strs(r.RV)
		case aKeys:
			r.AK, err = d.strs(r.AK)
		case aVals:
			r.AV, err = d.strs(r.AV)
		case aExcKeys:
			r.EK, err = d.strss(r.EK)
		case aExcVals:
			r.EV, err = d.strss(r.EV)
		}
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return d.conv.line(), nil
}

// take counts n bytes against the row's budget.
func (d *decoder) take(n uint64) error {
	if n > uint64(d.budget) {
		return fmt.Errorf("%w of %d bytes (a span with huge attributes?)", errRowTooLong, d.max)
	}
	d.budget -= int(n)
	return nil
}

// keep remembers b as part of the row's bytes (for an error message).
func (d *decoder) keep(b []byte) {
	if len(d.raw) < 4096 {
		d.raw = append(d.raw, b[:min(len(b), 4096-len(d.raw))]...)
	}
}

func (d *decoder) uvarint() (uint64, error) {
	var x uint64
	var s uint
	for i := 0; i < binary.MaxVarintLen64; i++ {
		c, err := d.br.ReadByte()
		if err != nil {
			return 0, err
		}
		if len(d.raw) < 4096 {
			d.raw = append(d.raw, c)
		}
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				return 0, fmt.Errorf("%w: a length overflows", errCorrupt)
			}
			return x | uint64(c)<<s, nil
		}
		x |= uint64(c&0x7f) << s
		s += 7
	}
	return 0, fmt.Errorf("%w: a length overflows", errCorrupt)
}

func (d *decoder) int64() (int64, error) {
	if err := d.take(8); err != nil {
		return 0, err
	}
	var b [8]byte
	if _, err := io.ReadFull(d.br, b[:]); err != nil {
		return 0, err
	}
	d.keep(b[:])
	return int64(binary.LittleEndian.Uint64(b[:])), nil
}

// bytes reads a String's bytes into a new slice.
func (d *decoder) bytes() ([]byte, error) {
	n, err := d.uvarint()
	if err != nil {
		return nil, err
	}
	if err := d.take(n); err != nil {
		return nil, err
	}
	b := make([]byte, n)
	k, err := io.ReadFull(d.br, b)
	d.keep(b[:k])
	return b, err
}

// str reads a String into the row's arena: a view valid until the next
// row (a longer arena leaves the views before it where they were).
func (d *decoder) str() ([]byte, error) {
	n, err := d.uvarint()
	if err != nil {
		return nil, err
	}
	if err := d.take(n); err != nil {
		return nil, err
	}
	start := len(d.arena)
	d.arena = slices.Grow(d.arena, int(n))[:start+int(n)]
	b := d.arena[start : start+int(n) : start+int(n)]
	k, err := io.ReadFull(d.br, b)
	d.keep(b[:k])
	return b, err
}

func (d *decoder) strs(out [][]byte) ([][]byte, error) {
	n, err := d.uvarint()
	if err != nil {
		return nil, err
	}
	// Each element takes a byte at least: the budget bounds the count.
	if err := d.take(n); err != nil {
		return nil, err
	}
	for i := uint64(0); i < n; i++ {
		s, err := d.str()
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func (d *decoder) strss(out [][][]byte) ([][][]byte, error) {
	n, err := d.uvarint()
	if err != nil {
		return nil, err
	}
	if err := d.take(n); err != nil {
		return nil, err
	}
	for i := uint64(0); i < n; i++ {
		s, err := d.strs(nil)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// exception finds ClickHouse's exception text in what the row had read
// and what follows it: a query that fails after its rows began ends the
// answer with its message (Code: N. DB::Exception: …).
func (d *decoder) exception() string {
	rest, _ := d.br.Peek(d.br.Buffered())
	b := append(append([]byte(nil), d.raw...), rest...)
	i := bytes.Index(b, []byte("Code: "))
	if i < 0 || !bytes.Contains(b[i:], []byte("DB::Exception")) {
		if j := bytes.Index(b, []byte("DB::Exception")); j >= 0 {
			i = j
		} else {
			return ""
		}
	}
	b = b[i:]
	if j := bytes.IndexByte(b, '\n'); j >= 0 {
		b = b[:j]
	}
	return string(b)
}
