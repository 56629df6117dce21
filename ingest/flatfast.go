package ingest

import "encoding/binary"

// The fast path of flat JSON lines.
//
// A log writes the same few keys in the same order on every line, and its
// values are plain strings and numbers. fastLine decodes such a line in one
// pass with no callback per member: it predicts each key from the one that
// followed the previous key on earlier lines (so a line's optional keys,
// such as a root span's missing parent_id, cost one wrong guess, not a
// lost layout), checks the guess with one byte comparison that covers the
// key's quotes, and goes straight to the value. Whatever it does not
// handle — an escaped string, a nested object or array, a value its field
// rejects, bad syntax — makes it give up, and the caller decodes the line
// again with the general path (decodeLine), which therefore decides every
// error and every unusual case: the fast path only ever produces the
// record the general path would have produced.

// layout remembers the keys of a log's lines and the order they came in.
// ent[0] stands for the start of an object.
type layout struct {
	ent []layoutEntry
}

type layoutEntry struct {
	quoted  []byte // the key with its quotes, as it is in the line
	f       field
	hopAttr bool  // the key of --hop-by attr:KEY
	next    int32 // the entry that followed this one last time (0: none)
}

// maxLayout bounds the keys remembered; a line with more distinct keys
// than that still decodes here, with a lookup for the others.
const maxLayout = 64

// fastLine decodes line into rec and reports whether it could; on false
// rec is undefined and the caller must use decodeLine.
func (t *fieldTable) fastLine(rec *flatRecord, ly *layout, line []byte) bool {
	if len(ly.ent) == 0 {
		ly.ent = append(ly.ent, layoutEntry{})
	}
	rec.reset()
	n := len(line)
	i := skipWS(line, 0)
	if i >= n || line[i] != '{' {
		return false
	}
	cur := int32(0)
	for {
		i = skipWS(line, i+1)
		if i >= n || line[i] != '"' {
			return false // includes the empty object: rare, left to decodeLine
		}
		// The key: the predicted one, else scanned and looked up.
		e := ly.ent[cur].next
		if e > 0 {
			q := ly.ent[e].quoted
			if n-i < len(q) || string(line[i:i+len(q)]) != string(q) {
				e = 0
			}
		}
		var ent *layoutEntry
		if e > 0 {
			ent = &ly.ent[e]
			i += len(ent.quoted)
		} else {
			j, ok := plainString(line, i+1)
			if !ok {
				return false
			}
			e = t.layoutEntry(ly, line[i:j+1])
			if e < 0 {
				return false
			}
			ly.ent[cur].next = e
			ent = &ly.ent[e]
			i = j + 1
		}
		cur = e
		i = skipWS(line, i)
		if i >= n || line[i] != ':' {
			return false
		}
		i = skipWS(line, i+1)
		if i >= n {
			return false
		}
		// The value.
		var v []byte
		str, num := false, false
		switch c := line[i]; {
		case c == '"':
			j, ok := plainString(line, i+1)
			if !ok {
				return false
			}
			v, str, i = line[i+1:j], true, j+1
		case c == '-' || (c >= '0' && c <= '9'):
			j := i + 1
			for j < n && isNumberByte(line[j]) {
				j++
			}
			v, num, i = line[i:j], true, j
		case c == 't' && hasLit(line, i, "true"):
			v, i = line[i:i+4], i+4
		case c == 'f' && hasLit(line, i, "false"):
			v, i = line[i:i+5], i+5
		case c == 'n' && hasLit(line, i, "null"):
			v, i = line[i:i+4], i+4
		default:
			return false // objects, arrays, bad syntax
		}
		switch {
		case ent.hopAttr:
			if !str && !num {
				return false
			}
			rec.sp.Hop = rec.intern.get(v)
		case ent.f == fNone:
		case ent.f == fNested:
			return false
		default:
			if rec.set(ent.f, str, v) != nil {
				return false
			}
		}
		i = skipWS(line, i)
		if i >= n {
			return false
		}
		if line[i] == ',' {
			continue
		}
		if line[i] != '}' {
			return false
		}
		return skipWS(line, i+1) == n
	}
}

// layoutEntry returns the entry of a quoted key, adding it if there is
// room; -1 when the layout is full and the key new (rec decodes the line
// with decodeLine then).
func (t *fieldTable) layoutEntry(ly *layout, quoted []byte) int32 {
	for k := 1; k < len(ly.ent); k++ {
		if string(ly.ent[k].quoted) == string(quoted) {
			return int32(k)
		}
	}
	if len(ly.ent) >= maxLayout {
		return -1
	}
	key := string(quoted[1 : len(quoted)-1])
	ly.ent = append(ly.ent, layoutEntry{quoted: append([]byte(nil), quoted...), f: t.keys[key],
		hopAttr: t.hopAttr != "" && key == t.hopAttr})
	return int32(len(ly.ent) - 1)
}

// plainString finds the closing quote of a string whose content starts at
// i; ok is false for an escape, a control character or no closing quote
// (decodeLine's business).
func plainString(b []byte, i int) (int, bool) {
	for ; i+8 <= len(b); i += 8 {
		if specialByte(binary.LittleEndian.Uint64(b[i:])) {
			break
		}
	}
	for ; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i, true
		case c == '\\' || c < 0x20:
			return 0, false
		}
	}
	return 0, false
}

// isNumberByte is the set of bytes scanner.value takes into a number (the
// field's parser then judges the text).
func isNumberByte(c byte) bool {
	return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

func hasLit(b []byte, i int, lit string) bool {
	return len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
}

// skipWS skips JSON whitespace from i.
func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}
