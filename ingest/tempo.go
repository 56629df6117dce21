package ingest

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/tailscope/tailscope/span"
)

// Grafana Tempo stores traces in Parquet blocks ("data.parquet"), one row
// per trace, spans nested as resource spans → scope spans → spans. The
// layouts of vParquet2, vParquet3 and vParquet4 share the span columns
// tailscope needs, under
//
//	rs.list.element.ss.list.element.Spans.list.element.{SpanID, ParentSpanID,
//	    Name, Kind, StartTimeUnixNano, DurationNano, StatusCode,
//	    StatusMessage, HttpStatusCode}
//
// with the service at rs.list.element.Resource.ServiceName and the trace id
// at TraceIDText (or raw TraceID). The first vParquet used rs.ils.Spans.*
// with ID, StartUnixNanos and EndUnixNanos. Columns are looked up by path,
// so any extra column (dedicated attributes, events, later versions'
// additions) is ignored and a missing optional one (HttpStatusCode,
// StatusMessage, Kind) is simply absent. Only these columns are read.
//
// Kind and StatusCode are OTLP enum numbers (kind 1 internal … 5 consumer;
// status 0 unset, 1 ok, 2 error). A timeout is recognised from an HTTP
// 408/504 or a status message naming a timeout or deadline. Span attributes
// (for attempt counts, peer.service or --hop-by attr:KEY) are not read yet:
// they live in generic key/value lists that vary between block versions.

type tempoLayout struct {
	span, resource string // column path prefixes
}

var tempoLayouts = []*tempoLayout{
	{span: "rs.list.element.ss.list.element.Spans.list.element.", resource: "rs.list.element.Resource."},
	{span: "rs.ils.Spans.", resource: "rs.Resource."},
}

// tempoLayoutOf recognises a Tempo block by its span columns.
func tempoLayoutOf(s *parquet.Schema) *tempoLayout {
	for _, l := range tempoLayouts {
		for _, c := range []string{"SpanID", "ID", "StartTimeUnixNano", "StartUnixNanos"} {
			if _, ok := lookupPath(s, l.span+c); ok {
				return l
			}
		}
	}
	return nil
}

func lookupPath(s *parquet.Schema, path string) (parquet.LeafColumn, bool) {
	return s.Lookup(strings.Split(path, ".")...)
}

// tempoCol indices into the per-span value slice.
const (
	tcSpanID = iota
	tcParent
	tcName
	tcKind
	tcStart
	tcDur
	tcEnd
	tcStatus
	tcMessage
	tcHTTP
	tcCount
)

func decodeTempo(src *Source, pf *parquet.File, l *tempoLayout) error {
	src.SetDefaultHopBy("service+name")
	s := pf.Schema()
	names := [tcCount][]string{
		tcSpanID:  {"SpanID", "ID"},
		tcParent:  {"ParentSpanID"},
		tcName:    {"Name"},
		tcKind:    {"Kind"},
		tcStart:   {"StartTimeUnixNano", "StartUnixNanos"},
		tcDur:     {"DurationNano", "DurationNanos"},
		tcEnd:     {"EndTimeUnixNano", "EndUnixNanos"},
		tcStatus:  {"StatusCode"},
		tcMessage: {"StatusMessage"},
		tcHTTP:    {"HttpStatusCode"},
	}
	var leaves [tcCount]*parquet.LeafColumn
	anchor := -1
	for i, alts := range names {
		for _, n := range alts {
			if leaf, ok := lookupPath(s, l.span+n); ok {
				leaves[i] = &leaf
				break
			}
		}
		if leaves[i] != nil && anchor < 0 && (i == tcSpanID || i == tcStart || i == tcDur || i == tcEnd) {
			anchor = i
		}
	}
	if leaves[tcDur] == nil && (leaves[tcEnd] == nil || leaves[tcStart] == nil) {
		return fmt.Errorf("Tempo block without span durations: no %sDurationNano, nor start and end columns", l.span)
	}
	if anchor < 0 {
		anchor = tcDur
	}
	al := leaves[anchor]
	// Every span column must repeat exactly like the anchor, or its values
	// would not line up span by span; a column that does not is ignored.
	for i, lf := range leaves {
		if lf != nil && lf.MaxRepetitionLevel != al.MaxRepetitionLevel {
			leaves[i] = nil
		}
	}
	// A span is present in a slot when the anchor's definition level
	// reaches the span element.
	spanDef := al.MaxDefinitionLevel
	if al.Node.Optional() {
		spanDef--
	}
	// Service: one value per resource-spans slot (repetition level 1).
	svcLeaf, hasSvc := lookupPath(s, l.resource+"ServiceName")
	if hasSvc && (svcLeaf.MaxRepetitionLevel != 1 || al.MaxRepetitionLevel < 1) {
		hasSvc = false
	}
	// Trace id: one value per row.
	trLeaf, hasTr := s.Lookup("TraceIDText")
	trText := true
	if !hasTr || trLeaf.MaxRepetitionLevel != 0 {
		trLeaf, hasTr = s.Lookup("TraceID")
		trText = false
		hasTr = hasTr && trLeaf.MaxRepetitionLevel == 0
	}

	rec := &flatRecord{intern: &interner{}}
	var index int64
	var traceID, service string
	var vals [tcCount]parquet.Value
	var scratch []byte
	for gi, rg := range pf.RowGroups() {
		chunks := rg.ColumnChunks()
		var curs [tcCount]*cursor
		var all []*cursor
		for i, lf := range leaves {
			if lf != nil {
				curs[i] = newCursor(chunks[lf.ColumnIndex])
				all = append(all, curs[i])
			}
		}
		var svcCur, trCur *cursor
		if hasSvc {
			svcCur = newCursor(chunks[svcLeaf.ColumnIndex])
			all = append(all, svcCur)
		}
		if hasTr {
			trCur = newCursor(chunks[trLeaf.ColumnIndex])
			all = append(all, trCur)
		}
		fail := func(what string, c *cursor) error {
			closeAll(all)
			if c.err != nil {
				return fmt.Errorf("row group %d, %s: %v", gi+1, what, c.err)
			}
			return fmt.Errorf("row group %d: column %s ends early (corrupt block)", gi+1, what)
		}
		for {
			av, ok := curs[anchor].next()
			if !ok {
				if curs[anchor].err != nil {
					return fail(names[anchor][0], curs[anchor])
				}
				break
			}
			for i, c := range curs {
				if i == anchor {
					vals[i] = av
					continue
				}
				if c == nil {
					vals[i] = parquet.Value{}
					continue
				}
				if vals[i], ok = c.next(); !ok {
					return fail(names[i][0], c)
				}
			}
			rep := av.RepetitionLevel()
			if rep == 0 && trCur != nil {
				v, ok := trCur.next()
				if !ok {
					return fail("TraceID", trCur)
				}
				switch {
				case v.IsNull():
					traceID = ""
				case trText:
					traceID = string(v.ByteArray())
				default:
					traceID = hex.EncodeToString(v.ByteArray())
				}
			}
			if rep <= 1 && svcCur != nil {
				v, ok := svcCur.next()
				if !ok {
					return fail("ServiceName", svcCur)
				}
				service = ""
				if !v.IsNull() {
					service = rec.intern.get(v.ByteArray())
				}
			}
			if av.DefinitionLevel() < spanDef {
				continue // a trace or resource with no spans in this slot
			}
			index++
			rec.reset()
			sp := &rec.sp
			sp.TraceID, sp.Service = traceID, service
			if v := vals[tcSpanID]; !v.IsNull() {
				sp.SpanID = hexID(v, &scratch)
			}
			if v := vals[tcParent]; !v.IsNull() {
				sp.ParentID = hexID(v, &scratch)
			}
			if v := vals[tcName]; !v.IsNull() {
				sp.Name = rec.intern.get(v.ByteArray())
			}
			if v := vals[tcKind]; !v.IsNull() {
				sp.Kind = normKind(strconv.AppendInt(scratch[:0], v.Int64(), 10))
			}
			if v := vals[tcStart]; !v.IsNull() {
				sp.Start, rec.hasStart = v.Int64(), true
			}
			if v := vals[tcDur]; !v.IsNull() {
				sp.Duration, rec.hasDur = v.Int64(), true
			} else if v := vals[tcEnd]; !v.IsNull() {
				rec.end, rec.hasEnd = v.Int64(), true
			}
			if v := vals[tcStatus]; !v.IsNull() {
				switch v.Int64() {
				case 1:
					rec.status, rec.hasStatus = span.OK, true
				case 2:
					rec.status, rec.hasStatus = span.Error, true
				}
			}
			if v := vals[tcMessage]; !v.IsNull() && len(v.ByteArray()) > 0 && isTimeoutWord(v.ByteArray()) {
				rec.timeout = true
			}
			if v := vals[tcHTTP]; !v.IsNull() {
				code := v.Int64()
				if code > 0 && code < 1000 {
					sp.Code, rec.codeSet = int(code), true
					rec.errTimeout = code == 408 || code == 504
				}
			}
			if reason, detail := rec.finish(); reason != "" {
				src.Skip(0, index, reason, detail)
				continue
			}
			src.Emit(sp, 0, index)
		}
		for _, c := range all {
			if _, ok := c.next(); ok && c != svcCur && c != trCur {
				closeAll(all)
				return fmt.Errorf("row group %d: span columns disagree on the number of spans (corrupt block)", gi+1)
			}
		}
		closeAll(all)
	}
	return nil
}

// hexID renders a binary span id as lowercase hex, the spelling every
// other reader uses; an id already stored as text is kept.
func hexID(v parquet.Value, scratch *[]byte) string {
	b := v.ByteArray()
	if len(b) == 0 {
		return ""
	}
	if v.Kind() == parquet.ByteArray && isHexText(b) {
		return string(b)
	}
	*scratch = hex.AppendEncode((*scratch)[:0], b)
	return string(*scratch)
}

func isHexText(b []byte) bool {
	if len(b) < 16 {
		return false // 8 raw bytes could be anything; 16+ hex chars is text
	}
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}
