package tempo

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"
	"github.com/tailscope/tailscope/ingest/internal/record"
)

// Value kinds of Tempo's generic attribute columns.
const (
	tkString = iota
	tkInt
	tkDouble
	tkBool
	tkProto // vParquet2/3 event attributes: a protobuf AnyValue
	tkCount
)

var tkNames = [tkCount]string{"Value", "ValueInt", "ValueDouble", "ValueBool", "Value"}

// tkv is a Tempo key/value list (Attribute) below a slot whose own
// repetition level is rep: keys repeat at rep+1, values at rep+1 (one
// optional value per attribute) or rep+2 (a list per attribute).
type tkv struct {
	rep    int
	key    *tcol
	vals   [tkCount]*tcol
	keyG   []parquet.Value
	valG   [tkCount][]parquet.Value
	splitK [][]parquet.Value
	splitV [tkCount][][]parquet.Value
}

// findKV looks up the Attribute list at prefix (e.g. "...Spans.list.element.Attrs")
// for a slot at repetition level rep. It returns nil when the block has
// no such list, or one nested differently. A Value column of plain bytes
// (no string annotation) is vParquet2/3's protobuf-encoded event value.
func findKV(s *parquet.Schema, prefix string, rep int) *tkv {
	for _, elem := range []string{".list.element.", "."} {
		leaf, ok := LookupPath(s, prefix+elem+"Key")
		if !ok || leaf.MaxRepetitionLevel != rep+1 {
			continue
		}
		kv := &tkv{rep: rep, key: &tcol{path: prefix + elem + "Key", leaf: leaf}}
		for k, name := range tkNames[:tkProto] {
			for _, sub := range []string{".list.element", ""} {
				p := prefix + elem + name + sub
				lf, ok := LookupPath(s, p)
				if ok && (lf.MaxRepetitionLevel == rep+1 || lf.MaxRepetitionLevel == rep+2) {
					if k == tkString && !IsTextLeaf(lf) {
						k = tkProto
					}
					kv.vals[k] = &tcol{path: p, leaf: lf}
					break
				}
			}
		}
		return kv
	}
	return nil
}

// IsTextLeaf reports whether a byte-array column is annotated as text.
func IsTextLeaf(leaf parquet.LeafColumn) bool {
	typ := leaf.Node.Type()
	if lt := typ.LogicalType(); lt != nil {
		if _, ok := lt.Value.(*format.StringType); ok {
			return true
		}
	}
	if ct := typ.ConvertedType(); ct != nil && *ct == deprecated.UTF8 {
		return true
	}
	return false
}

func (kv *tkv) cols() []*tcol {
	if kv == nil {
		return nil
	}
	out := []*tcol{kv.key}
	for _, c := range kv.vals {
		if c != nil {
			out = append(out, c)
		}
	}
	return out
}

// read gathers the lists of the next slot at repetition level rep (the
// slot that holds the list, or an ancestor of it).
func (kv *tkv) read(rep int) error {
	var err error
	if kv.keyG, err = kv.key.group(rep); err != nil {
		return err
	}
	for k, c := range kv.vals {
		if c != nil {
			if kv.valG[k], err = c.group(rep); err != nil {
				return err
			}
		}
	}
	return nil
}

// each calls f for every attribute of the gathered keys and values, which
// belong to slots at repetition level rep (kv.rep, or deeper for a list
// inside a list, like the attributes of each event). An attribute whose
// value is not one scalar (an array, a kvlist Tempo kept as JSON) comes
// with kind -1.
func (kv *tkv) each(keys []parquet.Value, vals *[tkCount][]parquet.Value, rep int, f func(key []byte, kind int, v parquet.Value) error) error {
	if len(keys) == 0 || (len(keys) == 1 && keys[0].DefinitionLevel() < kv.key.leaf.MaxDefinitionLevel) {
		return nil // no attributes
	}
	kv.splitK = split(keys, rep+1, kv.splitK)
	for k, c := range kv.vals {
		if c == nil {
			continue
		}
		kv.splitV[k] = split(vals[k], rep+1, kv.splitV[k])
		if len(kv.splitV[k]) != len(kv.splitK) {
			return fmt.Errorf("column %s: %d values for %d attribute keys (corrupt block)", c.path, len(kv.splitV[k]), len(kv.splitK))
		}
	}
	for i, kg := range kv.splitK {
		kind, n := -1, 0
		var val parquet.Value
		for k, c := range kv.vals {
			if c == nil {
				continue
			}
			for _, x := range kv.splitV[k][i] {
				if x.DefinitionLevel() == c.leaf.MaxDefinitionLevel {
					if n == 0 {
						kind, val = k, x
					}
					n++
				}
			}
		}
		if n != 1 {
			kind = -1
		}
		if err := f(kg[0].ByteArray(), kind, val); err != nil {
			return err
		}
	}
	return nil
}

// tkvText renders a scalar attribute value as traceRecord.addAttr takes it.
func tkvText(kind int, v parquet.Value, scratch []byte) (text []byte, str, ok bool) {
	switch kind {
	case tkString:
		return v.ByteArray(), true, true
	case tkInt:
		return strconv.AppendInt(scratch[:0], v.Int64(), 10), false, true
	case tkDouble:
		return strconv.AppendFloat(scratch[:0], v.Double(), 'g', -1, 64), false, true
	case tkBool:
		return strconv.AppendBool(scratch[:0], v.Boolean()), false, true
	case tkProto:
		if s, ok := protoAnyString(v.ByteArray()); ok {
			return s, true, true
		}
	}
	return nil, false, false
}

// protoAnyString reads the string_value (field 1) of a protobuf-encoded
// OTLP AnyValue, as vParquet2/3 store event attribute values.
func protoAnyString(b []byte) ([]byte, bool) {
	if len(b) < 1 || b[0] != 0x0a { // field 1, wire type 2 (bytes)
		return nil, false
	}
	n, w := binary.Uvarint(b[1:])
	if w <= 0 || n > uint64(len(b)-1-w) {
		return nil, false
	}
	return b[1+w : 1+w+int(n)], true
}

// tattr is a column that holds one attribute's value for each slot.
type tattr struct {
	key string
	col *tcol
}

// tempoMeta is the part of a block's meta.json tailscope uses.
type tempoMeta struct {
	Format    string `json:"format"`
	Dedicated []struct {
		Scope string `json:"s"`
		Name  string `json:"n"`
		Type  string `json:"t"`
	} `json:"dedicatedColumns"`
}

// readTempoMeta reads the meta.json beside a block's data.parquet, when
// the input is a plain file that has one. A missing or unreadable meta
// only means that dedicated attribute columns cannot be named.
func readTempoMeta(src *record.Source) *tempoMeta {
	if src.File == nil {
		return nil
	}
	f, err := os.Open(filepath.Join(filepath.Dir(src.Name), "meta.json"))
	if err != nil {
		return nil
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 4<<20))
	if err != nil {
		return nil
	}
	var m tempoMeta
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return &m
}

// dedicatedColumns maps meta.json's dedicated columns of one scope to the
// spare columns that hold them: per type, the n-th attribute listed takes
// the n-th spare column (String01…, Int01…), as Tempo assigns them.
func (m *tempoMeta) dedicatedColumns(scope string) map[string]string {
	out := map[string]string{}
	if m == nil {
		return out
	}
	next := map[string]int{}
	for _, d := range m.Dedicated {
		sc, typ := d.Scope, d.Type
		if sc == "" {
			sc = "span"
		}
		if typ == "" {
			typ = "string"
		}
		if sc != scope {
			continue
		}
		next[typ]++
		switch typ {
		case "string":
			out[d.Name] = fmt.Sprintf("DedicatedAttributes.String%02d", next[typ])
		case "int":
			out[d.Name] = fmt.Sprintf("DedicatedAttributes.Int%02d", next[typ])
		}
	}
	return out
}
