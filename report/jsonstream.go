package report

import (
	"bytes"
	"encoding"
	"encoding/json"
	"io"
	"reflect"
	"slices"
	"strings"

	"github.com/tailscope/tailscope/internal/par"
)

// The JSON reports are written as a stream. encoding/json builds a whole
// document in memory, and an Encoder with an indent builds it twice (the
// compact form, then the indented one): at 200k hops the report is
// hundreds of MB and those copies were the largest part of the peak
// memory the benchmark's cardinality case measured.
//
// writeJSON writes the bytes an Encoder with SetIndent("", "  ") and
// SetEscapeHTML(false) writes, but never holds more than a window of
// members encoded (wholeWindow). It walks the document by reflection with
// encoding/json's own rules (json tags, omitempty, embedded structs, map
// keys sorted): a struct is written field by field, a slice or map member
// by member. The members of a collection of streamMin or more are each
// marshalled whole, with the indentation of their depth (a hop, a policy's
// hop entry), on all cores a window at a time (wholeMembers); those
// of a smaller one are walked in turn, so that a large collection inside
// a few structs (a replay's attempts by hop) is streamed as well. Nothing
// lists the report's fields: a field added later is streamed too.
//
// Whatever the walker does not model exactly — a type with its own
// MarshalJSON or MarshalText, a json option other than omitempty, field
// names that collide, an interface, a []byte — is handed to encoding/json
// whole, so the output stays encoding/json's.

// streamMin is the number of members from which a collection's members
// are marshalled whole rather than walked (tests vary it so that every
// path is taken on small reports).
var streamMin = 32

const jsonIndent = "  "

func writeJSON(w io.Writer, v any) error {
	s := &jsonStream{w: w}
	if err := s.value(reflect.ValueOf(v), 0); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// jsonStream writes one document; buf holds one element encoded by
// encs[depth], whose prefix is the indentation of that depth.
type jsonStream struct {
	w    io.Writer
	buf  bytes.Buffer
	encs []*json.Encoder
	// pbufs are wholeMembers' buffers, one per goroutine, and ends the
	// ends of the members in them.
	pbufs [][]byte
	ends  []int
}

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// custom reports whether t, or a pointer to it, encodes itself.
func custom(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return t.Implements(marshalerType) || t.Implements(textMarshalerType) ||
		pt.Implements(marshalerType) || pt.Implements(textMarshalerType)
}

// value writes v, whose first line the caller has indented to depth.
func (s *jsonStream) value(v reflect.Value, depth int) error {
	if !v.IsValid() {
		return s.whole(v, depth)
	}
	t := v.Type()
	if custom(t) {
		return s.whole(v, depth)
	}
	switch t.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return s.whole(v, depth)
		}
		return s.value(v.Elem(), depth)
	case reflect.Struct:
		fields, ok := jsonFields(t)
		if !ok {
			return s.whole(v, depth)
		}
		return s.object(v, fields, depth)
	case reflect.Slice:
		if v.IsNil() || t.Elem().Kind() == reflect.Uint8 { // null, or base64
			return s.whole(v, depth)
		}
		return s.array(v, depth)
	case reflect.Map:
		if v.IsNil() || t.Key().Kind() != reflect.String || custom(t.Key()) {
			return s.whole(v, depth)
		}
		return s.mapping(v, depth)
	}
	return s.whole(v, depth)
}

// object writes a struct's encoded fields, each one on a line of its own.
func (s *jsonStream) object(v reflect.Value, fields []jsonField, depth int) error {
	n := 0
	for _, f := range fields {
		fv, ok := fieldOf(v, f.index)
		if !ok || f.omitEmpty && emptyValue(fv) {
			continue
		}
		sep := ",\n"
		if n == 0 {
			sep = "{\n"
		}
		n++
		if err := s.key(sep, f.name, depth+1); err != nil {
			return err
		}
		if err := s.value(fv, depth+1); err != nil {
			return err
		}
	}
	return s.close(n, "{}", depth)
}

// array writes a slice element by element.
func (s *jsonStream) array(v reflect.Value, depth int) error {
	if v.Len() >= streamMin {
		return s.wholeMembers(v.Len(), "[", nil, v.Index, depth)
	}
	elem := s.element(v.Len())
	for i := range v.Len() {
		sep := ",\n"
		if i == 0 {
			sep = "[\n"
		}
		if _, err := io.WriteString(s.w, sep+strings.Repeat(jsonIndent, depth+1)); err != nil {
			return err
		}
		if err := elem(v.Index(i), depth+1); err != nil {
			return err
		}
	}
	return s.close(v.Len(), "[]", depth)
}

// mapping writes a map with string keys entry by entry, in encoding/json's
// order (sorted by key).
func (s *jsonStream) mapping(v reflect.Value, depth int) error {
	elem := s.element(v.Len())
	keys := v.MapKeys()
	slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
	if len(keys) >= streamMin {
		return s.wholeMembers(len(keys), "{", func(i int) string { return keys[i].String() }, func(i int) reflect.Value { return v.MapIndex(keys[i]) }, depth)
	}
	for i, k := range keys {
		sep := ",\n"
		if i == 0 {
			sep = "{\n"
		}
		if err := s.key(sep, k.String(), depth+1); err != nil {
			return err
		}
		if err := elem(v.MapIndex(k), depth+1); err != nil {
			return err
		}
	}
	return s.close(len(keys), "{}", depth)
}

// element is how the elements of a slice or map of n are written: each
// marshalled whole when they are many (the walk would cost more than the
// encoding), else walked in turn, so that a large collection inside a few
// structs (a replay's failures by hop) is streamed too.
func (s *jsonStream) element(n int) func(reflect.Value, int) error {
	if n >= streamMin {
		return s.whole
	}
	return s.value
}

// wholeMembers writes the n members of an array (open "[", key nil) or a
// map ("{", key the i-th key in order) whose values are marshalled whole
// (element): each member is encoded as whole encodes it, by the goroutines
// of package par a window of members at a time (encoding/json is most of
// a large report's cost: its hops, each marshalled and indented), and the
// window is written in order, as the members one by one would be.
func (s *jsonStream) wholeMembers(n int, open string, key func(int) string, val func(int) reflect.Value, depth int) error {
	ind := strings.Repeat(jsonIndent, depth+1)
	for lo := 0; lo < n; lo += wholeWindow {
		hi := min(n, lo+wholeWindow)
		m := hi - lo
		if cap(s.ends) < 2*m {
			s.ends = make([]int, 2*m)
		}
		ends := s.ends[:2*m] // per member: the end of its key (maps), of its value
		k := par.Workers(m, wholeMinPer)
		for len(s.pbufs) < k {
			s.pbufs = append(s.pbufs, nil)
		}
		errs := make([]error, k)
		par.Ranges(m, wholeMinPer, func(w, a, b int) {
			// Each member encoded compact, then indented as an Encoder
			// with SetIndent(ind, jsonIndent) indents it (indentJSON).
			var compact bytes.Buffer
			enc := json.NewEncoder(&compact)
			enc.SetEscapeHTML(false)
			out := s.pbufs[w][:0]
			for j := a; j < b; j++ {
				if key != nil {
					compact.Reset()
					if err := enc.Encode(key(lo + j)); err != nil {
						errs[w] = err
						return
					}
					out = append(out, bytes.TrimSuffix(compact.Bytes(), []byte("\n"))...) // a string: no indentation
				}
				ends[2*j] = len(out)
				compact.Reset()
				if err := enc.Encode(wholeValue(val(lo + j))); err != nil {
					errs[w] = err
					return
				}
				out = indentJSON(out, bytes.TrimSuffix(compact.Bytes(), []byte("\n")), ind, jsonIndent)
				ends[2*j+1] = len(out)
			}
			s.pbufs[w] = out
		})
		for w := range k {
			if errs[w] != nil {
				return errs[w]
			}
		}
		for w := range k {
			a, b := w*m/k, (w+1)*m/k // par.Ranges' ranges
			data, from := s.pbufs[w], 0
			for j := a; j < b; j++ {
				sep := ",\n"
				if lo+j == 0 {
					sep = open + "\n"
				}
				if _, err := io.WriteString(s.w, sep+ind); err != nil {
					return err
				}
				if key != nil {
					if _, err := s.w.Write(data[from:ends[2*j]]); err != nil {
						return err
					}
					if _, err := io.WriteString(s.w, ": "); err != nil {
						return err
					}
				}
				if _, err := s.w.Write(data[ends[2*j]:ends[2*j+1]]); err != nil {
					return err
				}
				from = ends[2*j+1]
			}
		}
	}
	empty := "[]"
	if open == "{" {
		empty = "{}"
	}
	return s.close(n, empty, depth)
}

// indentJSON appends src, compact JSON as encoding/json writes it (no
// space outside strings), indented as json.Indent(dst, src, prefix,
// indent) indents it: a new line and the nesting's indentation before
// every member and after a collection's last, ": " after a key, empty
// collections kept as {} and []. It is json.Indent's loop without its
// scanner, which checks the syntax at every byte: the input is
// encoding/json's own output, and only a string's quotes and escapes need
// following.
func indentJSON(dst, src []byte, prefix, indent string) []byte {
	needIndent := false
	depth := 0
	// A new line and the indentation of depth: a slice of nl while the
	// nesting is not deeper than it holds.
	nl := "\n" + prefix + strings.Repeat(indent, 16)
	newline := func() {
		if n := 1 + len(prefix) + depth*len(indent); n <= len(nl) {
			dst = append(dst, nl[:n]...)
			return
		}
		dst = append(dst, nl[:1+len(prefix)]...)
		for range depth {
			dst = append(dst, indent...)
		}
	}
	for i := 0; i < len(src); i++ {
		c := src[i]
		if needIndent && c != '}' && c != ']' {
			needIndent = false
			depth++
			newline()
		}
		switch c {
		case '"':
			// The string to its closing quote, whatever it holds.
			j := i + 1
			for {
				q := bytes.IndexByte(src[j:], '"')
				if q < 0 {
					j = len(src) - 1
					break
				}
				j += q
				// The quote closes the string unless an odd run of
				// backslashes escapes it.
				k := j - 1
				for k > i && src[k] == '\\' {
					k--
				}
				if (j-1-k)%2 == 0 {
					break
				}
				j++
			}
			dst = append(dst, src[i:j+1]...)
			i = j
		case '{', '[':
			needIndent = true
			dst = append(dst, c)
		case ',':
			dst = append(dst, c)
			newline()
		case ':':
			dst = append(dst, c, ' ')
		case '}', ']':
			if needIndent {
				needIndent = false
			} else {
				depth--
				newline()
			}
			dst = append(dst, c)
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// wholeWindow is how many members wholeMembers encodes before it writes
// them (what it holds encoded at once), and wholeMinPer the fewest a
// goroutine takes. A window's encoded members are buffers that grow by
// doubling and are kept for the next window: at 1,024 a window of
// 1,000 hops (5.8 MB of JSON) was 12 MB of fresh memory, its page faults
// a tenth of the report's cost; at 128 the buffers stay under 1 MB and
// are reused, and a window still keeps both cores busy.
const (
	wholeWindow = 128
	wholeMinPer = 16
)

// key writes sep, the indentation of depth and a member's name.
func (s *jsonStream) key(sep, name string, depth int) error {
	if _, err := io.WriteString(s.w, sep+strings.Repeat(jsonIndent, depth)); err != nil {
		return err
	}
	if err := s.whole(reflect.ValueOf(name), depth); err != nil {
		return err
	}
	_, err := io.WriteString(s.w, ": ")
	return err
}

// close ends an object or array of n members (empty is written as
// encoding/json writes it: "{}" or "[]").
func (s *jsonStream) close(n int, empty string, depth int) error {
	var err error
	if n == 0 {
		_, err = io.WriteString(s.w, empty)
	} else {
		_, err = io.WriteString(s.w, "\n"+strings.Repeat(jsonIndent, depth)+empty[1:])
	}
	return err
}

// whole writes v as encoding/json does at depth. An addressable value is
// encoded through its address, as it would be inside the whole document
// (methods on the pointer apply).
func (s *jsonStream) whole(v reflect.Value, depth int) error {
	for len(s.encs) <= depth {
		enc := json.NewEncoder(&s.buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent(strings.Repeat(jsonIndent, len(s.encs)), jsonIndent)
		s.encs = append(s.encs, enc)
	}
	s.buf.Reset()
	if err := s.encs[depth].Encode(wholeValue(v)); err != nil {
		return err
	}
	_, err := s.w.Write(bytes.TrimSuffix(s.buf.Bytes(), []byte("\n")))
	return err
}

// wholeValue is what whole hands encoding/json for v.
func wholeValue(v reflect.Value) any {
	switch {
	case !v.IsValid():
		return nil
	case v.CanAddr():
		return v.Addr().Interface()
	}
	return v.Interface()
}

// jsonField is one member encoding/json writes for a struct: its name,
// the path of field indexes to it, and whether omitempty drops it when
// empty.
type jsonField struct {
	name      string
	index     []int
	omitEmpty bool
}

// jsonFields lists t's members in encoding/json's order, or ok false
// when t uses something the walker leaves to encoding/json.
func jsonFields(t reflect.Type) (fields []jsonField, ok bool) {
	ok = collectFields(t, nil, map[reflect.Type]bool{}, &fields)
	if !ok {
		return nil, false
	}
	seen := map[string]bool{}
	for _, f := range fields {
		if seen[f.name] {
			return nil, false // encoding/json's dominance rules decide: leave it to them
		}
		seen[f.name] = true
	}
	return fields, true
}

func collectFields(t reflect.Type, index []int, visiting map[reflect.Type]bool, out *[]jsonField) bool {
	if visiting[t] {
		return false
	}
	visiting[t] = true
	defer delete(visiting, t)
	for i := range t.NumField() {
		sf := t.Field(i)
		tag, tagged := sf.Tag.Lookup("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		idx := append(slices.Clip(index), i)
		if sf.Anonymous && name == "" {
			et := sf.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if !sf.IsExported() && et.Kind() != reflect.Struct {
				continue // encoding/json ignores these
			}
			if et.Kind() == reflect.Struct {
				if custom(et) || custom(sf.Type) {
					return false
				}
				if !collectFields(et, idx, visiting, out) {
					return false
				}
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		omit := false
		for _, o := range strings.Split(opts, ",") {
			switch o {
			case "":
			case "omitempty":
				omit = true
			default:
				return false // string, omitzero, …: encoding/json's
			}
		}
		if tagged && name != "" && !plainName(name) {
			return false
		}
		if name == "" {
			name = sf.Name
		}
		*out = append(*out, jsonField{name: name, index: idx, omitEmpty: omit})
	}
	return true
}

// plainName reports whether a tag's name is one encoding/json takes as it
// is and writes with no escaping.
func plainName(s string) bool {
	for _, c := range s {
		if !(c == '_' || c == '-' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// fieldOf is v's field at index, following embedded pointers; ok is false
// when one of them is nil (encoding/json then writes none of its fields).
func fieldOf(v reflect.Value, index []int) (reflect.Value, bool) {
	for _, x := range index {
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}, false
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v, true
}

// emptyValue is encoding/json's test for omitempty.
func emptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	}
	return false
}
