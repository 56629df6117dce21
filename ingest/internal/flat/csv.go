package flat

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/option"
)

// CSV is the flat span schema as a table with a header row. Columns are
// resolved exactly as flat JSON keys are (the aliases of flat.go, then
// --map), so `trace_id,hop,duration_ms,status` needs no flags and any other
// layout needs one --map line. For example the Nezha TrainTicket exports
// (TraceID,SpanID,ParentID,PodName,OperationName,StartTimeUnixNano,
// EndTimeUnixNano,Duration) read with
//
//	--map trace_id=TraceID,span_id=SpanID,parent_id=ParentID,service=PodName,name=OperationName,start=StartTimeUnixNano,end=EndTimeUnixNano
//
// (start and end give the duration to the nanosecond; Nezha's Duration
// column is the same span truncated to whole microseconds).
//
// Two conventions of such exports are handled generally, not per dataset:
// a parent id of "root", "0", "-", "null", "none" or all zeros means the
// span has no parent; and when the service comes from a column whose name
// says "pod" (PodName, k8s.pod.name, pod), a Kubernetes Deployment pod name
// "NAME-<replicaset hash>-<5 char id>" is reduced to NAME, because a hop is
// a service, not one replica of it. The same two rules apply to the flat
// Parquet and Arrow readers.

// colSpec is what one column of a flat table feeds.
type colSpec struct {
	f       field
	hopAttr bool // the column named by --hop-by attr:KEY
	pod     bool // a service read from a pod-name column
	// name is the column's name when its cells are attributes too: a
	// column no span field takes, or a pod column (see setText).
	name string
	// alias: the reader keeps the cell's bytes until its next span, so a
	// borrowing record may keep a view of them.
	alias bool
}

func (c colSpec) used() bool { return c.f != fNone || c.hopAttr }

// column resolves a column name of a flat table (CSV header, Parquet or
// Arrow field name).
func (t *fieldTable) column(name string) colSpec {
	var c colSpec
	if t.hopAttr != "" && name == t.hopAttr {
		c.hopAttr = true
		return c
	}
	c.f = t.fieldOf(name)
	if c.f == fNested {
		c.f = fNone // nested attribute objects have no meaning in a table
	}
	c.pod = c.f == fService && strings.Contains(strings.ToLower(name), "pod")
	if c.f == fNone || c.pod {
		c.name = record.ValidText([]byte(name))
	}
	return c
}

// attr stores a cell of a column no span field takes: an attribute.
// Empty cells are absent values.
func (r *flatRecord) attr(c colSpec, v []byte) {
	if c.name != "" {
		r.at.Add(record.TierField, c.name, bytes.TrimSpace(v), c.alias)
	}
}

// k8sPodName matches a Deployment pod name: the workload name, the
// pod-template hash of its ReplicaSet and a 5-character random suffix drawn
// from Kubernetes' consonant-and-digit alphabet (so words rarely match).
var k8sPodName = regexp.MustCompile(`^(.+)-[0-9a-z]{5,10}-[bcdfghjklmnpqrstvwxz2456789]{5}$`)

// PodService returns the workload name of a Kubernetes Deployment pod
// name, or the name unchanged when it does not look like one.
func PodService(pod string) string {
	if m := k8sPodName.FindStringSubmatch(pod); m != nil {
		return m[1]
	}
	return pod
}

// isNoParent reports whether a parent id is one of the spellings of "none"
// that exports use for root spans.
func isNoParent(v []byte) bool {
	if len(v) > 4 { // longer than every word below: skip the lowercase copy
		return len(bytes.Trim(v, "0")) == 0
	}
	switch strings.ToLower(string(v)) {
	case "", "root", "0", "-", "null", "none", "nil":
		return true
	}
	return len(bytes.Trim(v, "0")) == 0
}

// setTyped stores a cell of a typed table (Parquet, Arrow): as setText,
// but a name (hop, service, name, peer, the --hop-by attribute) keeps its
// bytes, leading and trailing spaces included. A typed string has no
// padding to strip, names are data, and JSON lines keep them so: " lead"
// must come back from a convert round trip as " lead". CSV cells are
// trimmed (a space after the delimiter is layout there).
func (r *flatRecord) setTyped(c colSpec, v []byte) error {
	if !c.pod && (c.hopAttr || c.f == fHop || c.f == fService || c.f == fName || c.f == fPeer) && len(bytes.TrimSpace(v)) > 0 {
		if c.hopAttr {
			r.sp.Hop = r.intern.Get(v)
			return nil
		}
		return r.set(c.f, true, v)
	}
	return r.setText(c, v)
}

// setText stores one textual table cell. Empty cells are absent values.
func (r *flatRecord) setText(c colSpec, v []byte) error {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return nil
	}
	switch {
	case c.hopAttr:
		r.sp.Hop = r.intern.Get(v)
		return nil
	case c.f == fParentID && isNoParent(v):
		return nil
	case c.pod:
		r.sp.Service = r.intern.Get([]byte(PodService(string(v))))
		// The service took the workload; the pod is the instance,
		// which attribution compares (an attribute under the column's
		// name).
		if c.name != "" {
			r.at.Add(record.TierField, c.name, v, c.alias)
		}
		return nil
	case c.f == fError:
		// A table cell cannot distinguish a bool from a message: "true",
		// "1", "yes" and any text other than false/0/no mean failed.
		b, err := record.ParseBool(v)
		if err != nil {
			b = true
		}
		return r.set(fError, false, []byte(strconv.FormatBool(b)))
	}
	return r.set(c.f, true, v)
}

// csvSplitter splits one CSV record (RFC 4180: quoted fields may hold the
// delimiter, doubled quotes and newlines) into fields.
type csvSplitter struct {
	delim  byte
	out    []byte // unescaped field bytes
	ends   []int  // end offset of each field in out
	fields [][]byte
}

// split parses text. complete is false when text ends inside a quoted
// field, so the caller must append the next line and try again.
func (s *csvSplitter) split(text []byte) (complete bool, err error) {
	s.out, s.ends = s.out[:0], s.ends[:0]
	i := 0
	for {
		if i < len(text) && text[i] == '"' {
			// Quoted field.
			i++
			for {
				j := bytes.IndexByte(text[i:], '"')
				if j < 0 {
					return false, nil
				}
				s.out = append(s.out, text[i:i+j]...)
				i += j + 1
				if i < len(text) && text[i] == '"' {
					s.out = append(s.out, '"')
					i++
					continue
				}
				break
			}
			if i < len(text) && text[i] != s.delim {
				return true, fmt.Errorf("unexpected %q after a closing quote at byte %d", text[i], i+1)
			}
		} else {
			// Unquoted field: up to the next delimiter; a stray quote
			// inside it is kept as text.
			j := bytes.IndexByte(text[i:], s.delim)
			if j < 0 {
				j = len(text) - i
			}
			s.out = append(s.out, text[i:i+j]...)
			i += j
		}
		s.ends = append(s.ends, len(s.out))
		if i >= len(text) {
			break
		}
		i++ // the delimiter
		if i == len(text) {
			s.ends = append(s.ends, len(s.out)) // a trailing empty field
			break
		}
	}
	s.fields = s.fields[:0]
	start := 0
	for _, e := range s.ends {
		s.fields = append(s.fields, s.out[start:e])
		start = e
	}
	return true, nil
}

// csvReader yields records with the line each starts on.
type csvReader struct {
	lr   *lineReader
	sp   csvSplitter
	text []byte
	line int64 // first line of the last record
}

var errCSVUnterminated = fmt.Errorf("unterminated quoted field")

// next returns the fields of the next non-blank record. A record error
// (too long, bad quoting) is returned with the record skipped; io.EOF ends.
func (cr *csvReader) next() ([][]byte, error) {
	for {
		line, err := cr.lr.next()
		cr.line = cr.lr.line
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		complete, perr := cr.sp.split(line)
		if complete {
			return cr.sp.fields, perr
		}
		// A quoted field runs over lines: gather them (bounded).
		cr.text = append(cr.text[:0], line...)
		for !complete {
			more, err := cr.lr.next()
			if err == io.EOF {
				return nil, errCSVUnterminated
			}
			if err != nil {
				return nil, err
			}
			if len(cr.text)+1+len(more) > cr.lr.max {
				// Drain to where the quote closes would risk eating the
				// whole file; stop the record here.
				return nil, errLineTooLong
			}
			cr.text = append(cr.text, '\n')
			cr.text = append(cr.text, more...)
			// Only a lone quote can close the open field (a doubled one is
			// an escaped quote): re-splitting the whole record on every
			// line would be quadratic in its size.
			if closesQuote(more) {
				complete, perr = cr.sp.split(cr.text)
			}
		}
		return cr.sp.fields, perr
	}
}

// closesQuote reports whether a line read inside an open quoted field
// holds a quote that is not half of a doubled "" escape.
func closesQuote(line []byte) bool {
	for i := 0; i < len(line); i++ {
		if line[i] == '"' {
			if i+1 < len(line) && line[i+1] == '"' {
				i++
				continue
			}
			return true
		}
	}
	return false
}

// csvDelim is the delimiter of a header line: comma, else tab, else
// semicolon.
func csvDelim(head []byte) byte {
	switch {
	case bytes.IndexByte(head, ',') >= 0:
		return ','
	case bytes.IndexByte(head, '\t') >= 0:
		return '\t'
	case bytes.IndexByte(head, ';') >= 0:
		return ';'
	}
	return ','
}

func DecodeCSV(src *record.Source) (err error) {
	src.SetDefaultHopBy("hop")
	tab := newFieldTable(src.Options())
	defer func() {
		if err == nil {
			tab.noteUnmapped(src)
		}
	}()
	cr := &csvReader{lr: &lineReader{src: src, max: src.Options().MaxRecord}}
	head, _ := src.R.Peek(record.SniffWindow)
	head = bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		head = head[:i]
	}
	cr.sp.delim = csvDelim(head)
	probeUnits(src, tab, true)
	hdr, err := cr.next()
	if err == io.EOF {
		return nil
	}
	if err != nil {
		return fmt.Errorf("line %d: header: %v", cr.line, err)
	}
	if len(hdr) > 0 {
		hdr[0] = bytes.TrimPrefix(hdr[0], []byte("\xef\xbb\xbf"))
	}
	names := make([]string, len(hdr))
	cols := make([]colSpec, len(hdr))
	have := map[field]bool{}
	first := map[string]int{}
	for i, h := range hdr {
		names[i] = strings.TrimSpace(string(h))
		// Two columns of one name: reading either would be a guess (the
		// last one won, silently).
		if j, dup := first[names[i]]; dup && names[i] != "" {
			return fmt.Errorf("line %d: the CSV header names column %q twice (columns %d and %d): which one holds the values is not known; rename one", cr.line, names[i], j+1, i+1)
		}
		first[names[i]] = i
		cols[i] = tab.column(names[i])
		// A record's cells stay in the splitter's buffer until the next
		// record is read, after its span is emitted.
		cols[i].alias = true
		have[cols[i].f] = true
	}
	if !hasDurationColumn(have) {
		m := src.Options().Names.Of(option.Map)
		return fmt.Errorf("line %d: the CSV header (%s) has no duration column: name one with %s, e.g. %s duration_ms=COLUMN (fields: %s)",
			cr.line, strings.Join(names, ","), m, m, strings.Join(FlatFields, ", "))
	}
	rec := &flatRecord{intern: &record.Interner{}, units: &unitStats{}, at: record.AttrSet{Borrow: src.Options().Borrowed}}
	defer func() { unitNotes(src, rec.units, false) }()
	for {
		fields, err := cr.next()
		switch {
		case err == io.EOF:
			return nil
		case err == errLineTooLong:
			src.Skip(cr.line, 0, "record too long", tooLong(src.Options().MaxRecord, src.Options().Names))
			continue
		case err == errCSVUnterminated:
			src.Skip(cr.line, 0, "bad CSV", err.Error())
			return nil
		case err != nil && fields != nil:
			src.Skip(cr.line, 0, "bad CSV", err.Error())
			continue
		case err != nil:
			return fmt.Errorf("line %d: %w", cr.line, err)
		}
		if len(fields) != len(cols) {
			src.Skip(cr.line, 0, "wrong column count", fmt.Sprintf("%d fields, the header has %d", len(fields), len(cols)))
			continue
		}
		rec.reset()
		bad := false
		for i, c := range cols {
			if !c.used() {
				rec.attr(c, fields[i])
				continue
			}
			if err := rec.setText(c, fields[i]); err != nil {
				src.Skip(cr.line, 0, "bad value", fmt.Sprintf("column %s: %v", names[i], err))
				bad = true
				break
			}
		}
		if bad {
			continue
		}
		if reason, detail := rec.finish(); reason != "" {
			src.Skip(cr.line, 0, reason, detail)
			continue
		}
		src.EmitSoft(&rec.sp, cr.line, 0, rec.soft)
	}
}
